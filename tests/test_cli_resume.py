"""Crash safety at the command line: `check --db` killed at random moments, then `check --resume`."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from assistant.settings import ROOT
from assistant.store import Store

GAMES = 60
GAME = [
    "last ball called is required",
    *[w for ball in ("B seven", "I twenty two", "N thirty three", "G fifty", "O seventy one") for w in (ball, ball)],
]


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


def _record_state(db: Path, script: Path) -> str:
    """'none', 'open' or 'closed': how far the record of this script's occasion got."""
    if not db.exists():
        return "none"
    with Store.open(db, readonly=True) as store:
        mine = [o for o in store.occasions() if o.source == str(script.resolve())]
    if not mine:
        return "none"
    return "open" if mine[-1].closed_at is None else "closed"


def cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "assistant", *map(str, args)]


def test_sigkill_mid_check_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    script = tmp_path / "occasion.txt"
    script.write_text(long_session(games=GAMES), encoding="utf-8")
    clean_db, db = tmp_path / "clean.db", tmp_path / "killed.db"
    started = time.monotonic()
    clean = subprocess.run(cli("check", script, "--db", clean_db, "--json"), capture_output=True, text=True, cwd=ROOT)
    whole = time.monotonic() - started
    assert clean.returncode == 0, clean.stderr

    rng = random.Random(7)
    kills = 0
    for attempt in range(5):
        state = _record_state(db, script)
        if state == "closed":
            break  # the record was finished, whether or not the process lived to exit
        # --resume once a run has recorded the occasion; a kill during start-up leaves nothing to resume
        args = ["check", script, "--db", db, "--quiet"] + (["--resume"] if state == "open" else [])
        errors = tmp_path / f"attempt-{attempt}.err"
        with errors.open("w") as stderr:
            proc = subprocess.Popen(cli(*args), stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
            time.sleep(rng.uniform(0.4, 0.95) * whole)  # the kill lands anywhere in the run
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
        assert proc.returncode in (0, -signal.SIGKILL), errors.read_text()
    assert kills >= 1  # at least one run died mid-occasion
    if _record_state(db, script) != "closed":
        finished = subprocess.run(
            cli("check", script, "--db", db, "--json", *(["--resume"] if _record_state(db, script) == "open" else [])),
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert finished.returncode == 0, finished.stderr
        assert json.loads(finished.stdout) == json.loads(clean.stdout)

    reports = [
        json.loads(subprocess.run(cli("report", "--db", d, "--format", "json"), capture_output=True, text=True).stdout)
        for d in (clean_db, db)
    ]
    assert reports[0]["games"] == reports[1]["games"]
    assert len(reports[1]["games"]) == GAMES
    verified = subprocess.run(cli("verify", "--db", db), capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout
