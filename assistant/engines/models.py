"""`models fetch`: download a vosk model archive, verify its sha256, unpack it into the per-user cache.

The archive is unpacked into a temporary folder beside the destination and renamed into place, so the
cache never holds a half-unpacked model.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from . import DEFAULT_VOSK_MODEL, cache_dir


class ModelFetchError(Exception):
    """A model could not be fetched, with a one-line reason."""


@dataclass(frozen=True)
class ModelSource:
    """Where a model archive lives and what its bytes must hash to."""

    name: str
    url: str
    sha256: str


KNOWN_MODELS = {
    DEFAULT_VOSK_MODEL: ModelSource(
        name=DEFAULT_VOSK_MODEL,
        url="https://alphacephei.com/vosk/models/vosk-model-small-en-us-0.15.zip",
        sha256="30f26242c4eb449f948e42cb302dd7a686cb29a3423a8367f99ff41780942498",
    ),
}


def _download(url: str, target: Path, timeout: float) -> str:
    """Stream the URL into target; return the sha256 of what was written."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, target.open("wb") as out:
            while block := response.read(1 << 16):
                digest.update(block)
                out.write(block)
    except urllib.error.HTTPError as exc:
        raise ModelFetchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise ModelFetchError(f"cannot download {url}: {exc.reason} (no network?)") from exc
    except (TimeoutError, OSError) as exc:
        raise ModelFetchError(f"cannot download {url}: {exc}") from exc
    return digest.hexdigest()


def fetch_model(
    name: str = DEFAULT_VOSK_MODEL,
    url: str | None = None,
    sha256: str | None = None,
    dest: Path | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download, verify and unpack model `name` into `dest` (the per-user cache); return its folder.

    A model already in place is returned without a download. `url` and `sha256` default to the known
    source of `name`.
    """
    known = KNOWN_MODELS.get(name)
    url = url or (known.url if known else None)
    sha256 = (sha256 or (known.sha256 if known else "")).lower()
    if not url or not sha256:
        raise ModelFetchError(f"unknown model {name!r}: give its url and sha256")
    dest = Path(dest) if dest is not None else cache_dir()
    final = dest / name
    if final.is_dir():
        return final
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=dest) as tmp:
        archive = Path(tmp) / "model.zip"
        got = _download(url, archive, timeout)
        if got != sha256:
            raise ModelFetchError(f"checksum mismatch for {url}: got sha256 {got}, expected {sha256}")
        unpacked = Path(tmp) / "unpacked"
        try:
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    target = (unpacked / member).resolve()
                    if not target.is_relative_to(unpacked.resolve()):
                        raise ModelFetchError(f"unsafe path in archive {url}: {member}")
                zf.extractall(unpacked)
        except zipfile.BadZipFile as exc:
            raise ModelFetchError(f"not a zip archive: {url}") from exc
        entries = list(unpacked.iterdir())
        # Model archives hold one top folder named like the model; accept a flat archive too.
        root = entries[0] if len(entries) == 1 and entries[0].is_dir() else unpacked
        if final.exists():
            shutil.rmtree(final)
        root.rename(final)
    return final
