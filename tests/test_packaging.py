"""The wheel a hall installs: the product and its trained weights, never the lab."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from the tracked files alone (a fresh clone's), as `pip wheel` builds it."""
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("bingo_assistant-*.whl")
    return built


def test_the_wheel_holds_the_product_and_its_weights_and_no_lab(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"assistant", next(t for t in tops if t.endswith(".dist-info"))}, tops
    assert not [n for n in names if n.startswith("lab/") or "/bench/" in n or "head_data" in n]
    for needed in (
        "assistant/engines/call_head.npz",
        "assistant/engines/decoder_adapter.npz",
        "assistant/engines/call_decision.json",
        "assistant/console/static/console.js",
        "assistant/migrations/0001_journal.sql",
        "assistant/bundled/config/default.toml",
        "assistant/bundled/config/rules/nm-15.4.7.11.yaml",
        "assistant/bundled/grammars/bingo.yaml",
    ):
        assert needed in names, needed


def test_the_installed_product_checks_a_game_without_the_lab_or_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    probe = (
        "import sys, assistant.app, assistant.pipeline, assistant.engines.whisper_engine;"
        "assert assistant.app.__file__.startswith(sys.argv[1]), assistant.app.__file__;"
        "assert not [m for m in sys.modules if m == 'lab' or m.startswith('lab.')]"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(target), "HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", probe, str(target)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    game = ROOT / "audio_fixtures" / "demo_game.txt"
    checked = subprocess.run(
        [sys.executable, "-m", "assistant", "check", str(game), "--db", str(tmp_path / "hall.db")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0 and "Compliant" in checked.stdout, checked.stdout + checked.stderr
