"""What the tests on real devices and in a real browser share: the virtual hall's devices (a PulseAudio server of
the test's own) and headless Chromium (Debian's, driven by playwright). Each is skipped with its reason when
missing, unless BINGO_REQUIRE_LIVE or BINGO_REQUIRE_BROWSER (CI) makes that a failure."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lab.scenarios.devices import Device, DeviceError, VirtualHall

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HISS = -80.0
"""dBFS: a microphone's own noise, well under the fixtures' quiet (about -61 dBFS)."""

LATE_REPEAT = """\
@game type=regular last_ball_required=yes
0:00 caller: last ball called is required
0:06 caller: B seven
0:22 caller: B seven
0:31 caller: N thirty three
0:34 caller: N thirty three
0:41 caller: this game is completed
"""
"""A game for the voice's echo: B seven's repeat is due at 0:16 and comes at 0:22, after the prompt for it and
its echo have died away."""


def missing_browser() -> str | None:
    """Why headless Chromium cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright; the browser is Debian chromium)"
    if not Path(CHROMIUM).exists():
        return "Debian chromium is not installed (apt-get install -y chromium)"
    return None


def browser_tests() -> pytest.MarkDecorator:
    """A browser module's `pytestmark`: its tests skip when Chromium is missing, and the module fails to load under
    BINGO_REQUIRE_BROWSER (CI)."""
    missing = missing_browser()
    if missing and os.environ.get("BINGO_REQUIRE_BROWSER"):
        raise RuntimeError(f"BINGO_REQUIRE_BROWSER is set but {missing}")
    return pytest.mark.skipif(missing is not None, reason=f"browser test skipped: {missing}")


def chromium() -> Iterator[Any]:
    """A headless Chromium for a module's tests (skips, or fails under BINGO_REQUIRE_BROWSER, when missing)."""
    missing = missing_browser()
    if missing is not None:
        if os.environ.get("BINGO_REQUIRE_BROWSER"):
            pytest.fail(f"BINGO_REQUIRE_BROWSER is set but {missing}")
        pytest.skip(f"browser test skipped: {missing}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def virtual_hall(folder: Path, devices: Sequence[Device]) -> Iterator[VirtualHall]:
    """The hall's devices for a module's tests (skips, or fails under BINGO_REQUIRE_LIVE, without a server)."""
    try:
        server = VirtualHall(folder, devices)
    except DeviceError as exc:
        if os.environ.get("BINGO_REQUIRE_LIVE"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with server:
        yield server
