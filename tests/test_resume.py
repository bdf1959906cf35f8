"""Crash safety: a real process killed at random moments, resumed, records exactly what an uninterrupted run does."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash_driver import run, session_script

from assistant.grammar import Grammar
from assistant.messages import Output
from assistant.procedure import Procedure, ProcedureSettings, RulePack, check_inputs
from assistant.script import read_script
from assistant.store import Journal, Store, StoreError, occasion_record, rebuild_record

DRIVER = Path(__file__).resolve().parent / "crash_driver.py"
KILLS = 20
DEADLINE = 240.0
"""Seconds the kill loop may take at most (a run alone takes 3-7 s here)."""


def recorded(db: Path) -> tuple[int, int]:
    """(inputs, rows) in the journal now, read by plain SQL."""
    con = sqlite3.connect(db)
    try:
        inputs = con.execute("SELECT count(*) FROM events WHERE kind = 'input'").fetchone()[0]
        rows = con.execute("SELECT count(*) FROM events").fetchone()[0]
    except sqlite3.OperationalError:  # killed before the schema was committed
        return 0, 0
    finally:
        con.close()
    return inputs, rows


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A long occasion: eight games, about 670 inputs."""
    path = tmp_path_factory.mktemp("session") / "occasion.txt"
    path.write_text(session_script(seed=7, games=8), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def uninterrupted(script: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same occasion run once without a crash."""
    db = tmp_path_factory.mktemp("clean") / "clean.db"
    run(db, script)
    return db


def assert_same_record(db: Path, clean: Path) -> None:
    with Store.open(db, readonly=True) as store, Store.open(clean, readonly=True) as reference:
        assert len(store.occasions()) == 1, "a resume must continue the occasion, not start another"
        [occasion] = [o.id for o in store.occasions()]
        [expected] = [o.id for o in reference.occasions()]
        assert store.inputs(occasion) == reference.inputs(expected)
        assert store.outputs_by_input(occasion) == reference.outputs_by_input(expected)
        assert occasion_record(store, occasion).to_json() == occasion_record(reference, expected).to_json()
        assert rebuild_record(store, occasion).to_json() == rebuild_record(reference, expected).to_json()
        check = store.verify()
        assert check.ok, str(check)


def test_the_uninterrupted_run_matches_the_procedure_alone(uninterrupted: Path, script: Path) -> None:
    grammar = Grammar.load()
    items = read_script(script, grammar)
    record, outputs = check_inputs(items, RulePack.load(), grammar)
    with Store.open(uninterrupted, readonly=True) as store:
        [occasion] = [o.id for o in store.occasions()]
        assert store.inputs(occasion) == items
        assert store.outputs(occasion) == outputs
        assert occasion_record(store, occasion).to_json() == record.to_json()
        assert len(items) > 300 and len(record.all_findings()) > 0


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_loses_and_duplicates_nothing(
    tmp_path: Path, script: Path, uninterrupted: Path
) -> None:
    db = tmp_path / "killed.db"
    total_inputs, _ = recorded(uninterrupted)
    rng = random.Random(20261202)
    # Kill points spread over the whole occasion, chosen as the run goes: each run is killed when the journal has
    # passed a point a random step beyond what it already holds (the step shares what is left among the kills still
    # owed), plus a random few milliseconds, so the kill lands inside whatever write comes next. Points fixed in
    # advance were skipped whenever a kill overshot the next one (CI: 9 kills of 20 mid-occasion).
    progress: list[int] = []
    started = time.monotonic()
    log = tmp_path / "driver.log"
    finished = False
    while len(progress) < KILLS:
        inputs, _ = recorded(db)
        step = max(2, 2 * (total_inputs - inputs) // (KILLS - len(progress) + 1))
        target = inputs + rng.randint(1, step)
        with log.open("wb") as errors:
            proc = subprocess.Popen([sys.executable, str(DRIVER), str(db), str(script)], stdout=errors, stderr=errors)
            while proc.poll() is None and recorded(db)[0] < target:
                assert time.monotonic() - started < DEADLINE, f"the kill loop ran out of time: {progress}"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.03))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        if proc.returncode != -signal.SIGKILL:  # it got to the end just before the kill
            assert proc.returncode == 0, log.read_text(errors="replace")[-2000:]
            finished = True
            break
        inputs, _ = recorded(db)
        assert not progress or inputs >= progress[-1], "a resume lost inputs already recorded"
        progress.append(inputs)
    assert len([n for n in progress if 0 < n < total_inputs]) >= KILLS // 2, f"kills mid-occasion: {progress}"
    if not finished:
        done = subprocess.run([sys.executable, str(DRIVER), str(db), str(script)], capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert_same_record(db, uninterrupted)


def test_a_run_killed_after_closing_its_occasion_is_replayed_not_started_again(
    tmp_path: Path, script: Path, uninterrupted: Path
) -> None:
    # The kill loop above can land between the close's commit and the process's exit: the next
    # run must find the closed occasion and replay against it, not open a second one.
    db = tmp_path / "closed.db"
    db.write_bytes(uninterrupted.read_bytes())
    again = subprocess.run([sys.executable, str(DRIVER), str(db), str(script)], capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode(errors="replace")[-2000:]
    assert_same_record(db, uninterrupted)
    assert recorded(db) == recorded(uninterrupted)


@pytest.mark.parametrize("written", [0, 1], ids=["none-of-its-outputs", "one-of-its-outputs"])
def test_a_crash_between_an_input_and_its_outputs_is_made_good_on_resume(
    tmp_path: Path, script: Path, written: int
) -> None:
    grammar = Grammar.load()
    items = read_script(script, grammar)[:300]
    expected: list[Output] = []
    reference = Procedure(RulePack.load(), grammar, ProcedureSettings(), expected.append)
    caused: list[int] = []
    for item in items:
        before = len(expected)
        reference.feed(item)
        caused.append(len(expected) - before)
    cut = next(i for i in range(120, len(items)) if caused[i] >= 2)  # an input that makes two outputs or more

    db = tmp_path / "cut.db"
    said: list[Output] = []
    with Store.open(db) as store:
        occasion = store.start_occasion(source=str(script))
        journal = Journal(store, occasion)
        procedure = Procedure(RulePack.load(), grammar, ProcedureSettings(), journal.forward(said.append))
        for item in items[:cut]:
            journal.input(item)
            procedure.feed(item)
        journal.input(items[cut])  # recorded, then the power went before all its outputs were
        first = sum(caused[:cut])
        for out in expected[first : first + written]:
            journal.output(out)
        said.extend(expected[first : first + written])

    resumed: list[Output] = []
    with Store.open(db) as store:
        assert store.latest_open_occasion(str(script)) == occasion
        journal = Journal(store, occasion)
        procedure = Procedure(RulePack.load(), grammar, ProcedureSettings(), journal.forward(resumed.append))
        for item in items:
            journal.input(item)
            procedure.feed(item)
        assert store.outputs(occasion) == expected
        assert said + resumed == expected, "each output is passed on (spoken, printed) exactly once"
        cut_off = store.outputs_by_input(occasion)[cut][written:]
        assert cut_off and resumed[: len(cut_off)] == cut_off, "what the crash cut off comes first"
        store.close_occasion(occasion, record=procedure.occasion)
        assert occasion_record(store, occasion).to_json() == reference.occasion.to_json()
        assert store.verify().ok


def test_resuming_with_a_different_session_is_refused(tmp_path: Path, script: Path) -> None:
    grammar = Grammar.load()
    items = read_script(script, grammar)
    db = tmp_path / "other.db"
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
        journal = Journal(store, occasion)
        for item in items[:10]:
            journal.input(item)
        replay = Journal(store, occasion)
        for item in items[:4]:
            replay.input(item)
        with pytest.raises(StoreError, match=f"input 4 of occasion {occasion} is recorded differently"):
            replay.input(items[5])
        assert store.inputs(occasion) == items[:10]
