"""`models fetch`: download over HTTP (a local server on loopback), verify sha256, unpack atomically."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.engines.models import ModelFetchError, fetch_model


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """A small model-shaped zip served from 127.0.0.1; yields (base url, sha256, served folder)."""
    site = tmp_path / "site"
    site.mkdir()
    archive = site / "tiny-model.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("tiny-model/am/final.mdl", b"acoustic model bytes")
        zf.writestr("tiny-model/conf/model.conf", "--sample-frequency=16000\n")
    (site / "broken.zip").write_bytes(b"this is not a zip")
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hashlib.sha256(archive.read_bytes()).hexdigest(), site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_fetch_verifies_and_unpacks(served: tuple[str, str, Path], tmp_path: Path) -> None:
    base, sha, _ = served
    dest = tmp_path / "cache"
    path = fetch_model("tiny-model", url=f"{base}/tiny-model.zip", sha256=sha, dest=dest)
    assert path == dest / "tiny-model"
    assert (path / "am" / "final.mdl").read_bytes() == b"acoustic model bytes"
    assert [p.name for p in dest.iterdir()] == ["tiny-model"]  # no temp files left


def test_second_fetch_uses_the_cache(served: tuple[str, str, Path], tmp_path: Path) -> None:
    base, sha, site = served
    dest = tmp_path / "cache"
    fetch_model("tiny-model", url=f"{base}/tiny-model.zip", sha256=sha, dest=dest)
    (site / "tiny-model.zip").unlink()  # a second download would now fail
    assert fetch_model("tiny-model", url=f"{base}/tiny-model.zip", sha256=sha, dest=dest) == dest / "tiny-model"


def test_bad_checksum_leaves_nothing(served: tuple[str, str, Path], tmp_path: Path) -> None:
    base, _, _ = served
    dest = tmp_path / "cache"
    with pytest.raises(ModelFetchError, match=r"^checksum mismatch for .*tiny-model\.zip: got sha256 [0-9a-f]{64}"):
        fetch_model("tiny-model", url=f"{base}/tiny-model.zip", sha256="0" * 64, dest=dest)
    assert list(dest.iterdir()) == []


def test_not_a_zip(served: tuple[str, str, Path], tmp_path: Path) -> None:
    base, _, site = served
    sha = hashlib.sha256((site / "broken.zip").read_bytes()).hexdigest()
    with pytest.raises(ModelFetchError, match="not a zip archive"):
        fetch_model("broken", url=f"{base}/broken.zip", sha256=sha, dest=tmp_path / "cache")


def test_http_error_and_no_network(served: tuple[str, str, Path], tmp_path: Path) -> None:
    base, sha, _ = served
    with pytest.raises(ModelFetchError, match="HTTP 404"):
        fetch_model("tiny-model", url=f"{base}/missing.zip", sha256=sha, dest=tmp_path / "cache")
    with pytest.raises(ModelFetchError, match=r"^cannot download http://127\.0\.0\.1:9/"):
        fetch_model("tiny-model", url="http://127.0.0.1:9/x.zip", sha256=sha, dest=tmp_path / "cache", timeout=5)


def test_unknown_model_needs_url() -> None:
    with pytest.raises(ModelFetchError, match="unknown model 'mystery'"):
        fetch_model("mystery")
