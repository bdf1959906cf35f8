"""Crash safety at the command line: `check --db` killed at any moment, start-up included, then `check --resume`
ends with the record of a clean run, every time."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from crash_at import MOMENTS

from assistant.report import render_json
from assistant.settings import ROOT
from assistant.store import Store, occasion_record

GAMES = 60
GAME = [
    "last ball called is required",
    *[w for ball in ("B seven", "I twenty two", "N thirty three", "G fifty", "O seventy one") for w in (ball, ball)],
]
CRASH_AT = Path(__file__).parent / "crash_at.py"


def long_session(games: int) -> str:
    """Games called by the book, one after another: enough inputs that a kill lands mid-game."""
    lines, t = [], 0.0
    for _ in range(games):
        lines.append("@game type=regular last_ball_required=yes")
        for words in GAME:
            lines.append(f"{t:.1f} caller: {words}")
            t += 3.0
        for role, words in (
            ("player", "bingo"),
            ("floor", "manufacturer one four two serial number four seven two nine one"),
            ("floor", "B seven, I twenty two, N thirty three, G fifty, O seventy one"),
            ("caller", "valid bingo"),
            ("caller", "are there any other bingos?"),
            ("caller", "this game is completed"),
        ):
            lines.append(f"{t:.1f} {role}: {words}")
            t += 4.0
    return "\n".join(lines) + "\n"


def cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "assistant", *map(str, args)]


def games_recorded(db: Path, script: Path) -> tuple[list[object], bool, int]:
    """The games of the record (the report's JSON), whether its chain verifies, and how many occasions it holds."""
    with Store.open(db, readonly=True) as store:
        mine = [o for o in store.occasions() if o.source == str(script.resolve())]
        games = json.loads(render_json(occasion_record(store, mine[-1].id)))["games"]
        return games, store.verify().ok, len(mine)


def recorded_inputs(db: Path) -> int:
    """How many inputs the record holds, read beside the writer (WAL lets a reader in)."""
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
            return int(con.execute("SELECT count(*) FROM events WHERE kind = 'input'").fetchone()[0])
    except sqlite3.Error:
        return 0  # created, not yet migrated


def kill_at(proc: subprocess.Popen[bytes], db: Path, inputs: int) -> bool:
    """SIGKILL the process once the record holds `inputs` inputs; False when it finished first."""
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if recorded_inputs(db) >= inputs:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.003)
    proc.wait()
    return False


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    script = tmp_path / "occasion.txt"
    script.write_text(long_session(games=GAMES), encoding="utf-8")
    clean_db, db = tmp_path / "clean.db", tmp_path / "killed.db"
    clean = subprocess.run(cli("check", script, "--db", clean_db, "--json"), capture_output=True, text=True, cwd=ROOT)
    assert clean.returncode == 0, clean.stderr
    total = recorded_inputs(clean_db)

    rng = random.Random(7)
    kills = 0
    for attempt in range(5):
        # The kill lands anywhere from where the record stands to its end, measured by the record, not the clock:
        # at once (start-up, or the replay of what is recorded), mid-game, or never. The first run starts the
        # record; every later one resumes it, wherever the kill left it.
        have = recorded_inputs(db)
        at = rng.randint(have, total - 1 if attempt == 0 else total + 1)
        args = ["check", script, "--db", db, "--quiet"] + (["--resume"] if attempt else [])
        errors = tmp_path / f"attempt-{attempt}.err"
        with errors.open("w") as stderr:
            proc = subprocess.Popen(cli(*args), stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
            kills += kill_at(proc, db, at)
        assert proc.returncode in (0, -signal.SIGKILL), errors.read_text()
    assert kills >= 1  # the first run, at least, died mid-occasion
    finished = subprocess.run(
        cli("check", script, "--db", db, "--json", "--resume"), capture_output=True, text=True, cwd=ROOT
    )
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == json.loads(clean.stdout)
    games, intact, occasions = games_recorded(db, script)
    assert games == games_recorded(clean_db, script)[0]
    assert len(games) == GAMES and intact and occasions == 1


@pytest.fixture(scope="module")
def short_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("moments")
    script = folder / "occasion.txt"
    script.write_text(long_session(games=3), encoding="utf-8")
    clean = subprocess.run(
        cli("check", script, "--db", folder / "clean.db", "--json"), capture_output=True, text=True, cwd=ROOT
    )
    assert clean.returncode == 0, clean.stderr
    return script, clean


LEFT = {
    "opening": "no file",
    "connected": "no tables",
    "migrating": "no tables",
    "migrated": "no occasion",
    "starting": "no occasion",
    "started": "open",
    "input-0": "open",
    "output-2": "open",
    "input-40": "open",
    "closing": "open",
    "closed": "closed",
}
"""What each moment leaves on disk, once SQLite has rolled back what was not committed."""


def left_on_disk(db: Path, script: Path) -> str:
    """Read with SQLite alone (no migration): what a resuming run finds."""
    if not db.exists():
        return "no file"
    with closing(sqlite3.connect(db)) as con:
        if not con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'events'").fetchone()[0]:
            return "no tables"
        rows = con.execute("SELECT closed_at FROM occasions WHERE source = ?", (str(script.resolve()),)).fetchall()
    if not rows:
        return "no occasion"
    return "open" if rows[-1][0] is None else "closed"


@pytest.mark.parametrize("moment", MOMENTS)
def test_sigkill_at_each_moment_of_the_record_then_resume_gives_a_clean_runs_record(
    tmp_path: Path, short_session: tuple[Path, subprocess.CompletedProcess[str]], moment: str
) -> None:
    script, clean = short_session
    db = tmp_path / "killed.db"
    killed = subprocess.run(
        [sys.executable, CRASH_AT, moment, "check", script, "--db", db, "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # it died there, on purpose
    assert left_on_disk(db, script) == LEFT[moment]
    resumed = subprocess.run(
        cli("check", script, "--db", db, "--json", "--resume"), capture_output=True, text=True, cwd=ROOT
    )
    assert resumed.returncode == clean.returncode, resumed.stderr
    assert resumed.stderr == ""  # silently: nothing to say about where the kill left it
    assert json.loads(resumed.stdout) == json.loads(clean.stdout)
    games, intact, occasions = games_recorded(db, script)
    assert games == json.loads(clean.stdout)["games"]
    assert intact and occasions == 1
