"""Retention: prune moves only what is older to an archive with its own verifiable chain; the journal still verifies."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assistant.messages import Ball, CallMade, GameClosed, GameOpened, GamePlan, GameType, Role, Utterance
from assistant.store import Store, StoreError

LONG_AGO = datetime(2022, 1, 7, 19, 0, tzinfo=UTC)
RECENT = datetime(2026, 11, 20, 19, 0, tzinfo=UTC)
CUTOFF = datetime(2023, 12, 1, tzinfo=UTC)


def play(store: Store, started: datetime, *, close: bool = True) -> int:
    """An occasion of one short winner-take-all game for $300, closed two hours after it started."""
    occasion = store.start_occasion(source=f"night of {started:%Y-%m-%d}", started_at=started)
    store.record_output(occasion, GameOpened(1, GamePlan(GameType.WINNER_TAKE_ALL, cards_sold=80, prize=300.0), 0.0))
    for n, number in enumerate((5, 20, 35)):
        store.record_input(occasion, Utterance(3.0 * n, 3.0 * n + 1, Role.CALLER, f"call {number}"))
        store.record_output(occasion, CallMade(1, Ball(number), 3.0 * n, f"call {number}"))
    store.record_output(occasion, GameClosed(1, "completed", 30.0))
    if close:
        store.close_occasion(occasion, closed_at=started + timedelta(hours=2))
    return occasion


def test_prune_moves_only_older_occasions_and_both_chains_verify(tmp_path: Path) -> None:
    db, archive = tmp_path / "hall.db", tmp_path / "archive-2023.db"
    with Store.open(db) as store:
        old_one = play(store, LONG_AGO)
        old_two = play(store, LONG_AGO + timedelta(days=7))
        new = play(store, RECENT, close=False)
        kept_inputs = store.inputs(new)
        result = store.prune(CUTOFF, archive)
        assert result.occasions == (old_one, old_two)
        assert result.describe() == (
            f"moved occasions {old_one} (2022-01-07) and {old_two} (2022-01-14) to {archive} ({result.events} records)"
        )
        assert [o.id for o in store.occasions()] == [new]
        assert store.inputs(new) == kept_inputs
        check = store.verify()
        assert check.ok, str(check)
        store.record_input(new, Utterance(99.0, 100.0, Role.FLOOR, "later"))
    with Store.open(db, readonly=True) as store:
        assert store.verify().ok
    with Store.open(archive, readonly=True) as old:
        assert [o.id for o in old.occasions()] == [old_one, old_two]
        assert len(old.inputs(old_one)) == 3
        check = old.verify()
        assert check.ok and check.checked == result.events
        assert check.head == result.anchor_hash


def test_pruning_twice_into_the_same_archive_continues_its_chain(tmp_path: Path) -> None:
    db, archive = tmp_path / "hall.db", tmp_path / "archive.db"
    with Store.open(db) as store:
        first = play(store, LONG_AGO)
        second = play(store, LONG_AGO + timedelta(days=400))
        store.prune(LONG_AGO + timedelta(days=30), archive)
        assert [o.id for o in store.occasions()] == [second]
        again = store.prune(CUTOFF + timedelta(days=400), archive)
        assert again.occasions == (second,)
        assert store.occasions() == []
        assert store.verify().ok
        third = play(store, RECENT)
        assert third > second  # ids are never reused
        assert store.verify().ok
    with Store.open(archive, readonly=True) as old:
        assert [o.id for o in old.occasions()] == [first, second]
        assert old.verify().ok


def test_an_open_or_recent_occasion_stops_the_prune_before_it(tmp_path: Path) -> None:
    db, archive = tmp_path / "hall.db", tmp_path / "archive.db"
    with Store.open(db) as store:
        old = play(store, LONG_AGO)
        still_open = play(store, LONG_AGO + timedelta(days=1), close=False)
        older_but_after = play(store, LONG_AGO + timedelta(days=2))
        result = store.prune(CUTOFF, archive)
        assert result.occasions == (old,)
        assert [o.id for o in store.occasions()] == [still_open, older_but_after]
        assert store.verify().ok
        nothing = store.prune(LONG_AGO, tmp_path / "unused.db")
        assert nothing.events == 0 and nothing.describe() == "nothing older to prune"
    assert not (tmp_path / "unused.db").exists()


def test_a_winner_entered_later_keeps_its_occasion_whole(tmp_path: Path) -> None:
    db, archive = tmp_path / "hall.db", tmp_path / "archive.db"
    with Store.open(db) as store:
        first = play(store, LONG_AGO)
        second = play(store, LONG_AGO + timedelta(days=7))
        store.record_winner(first, 1, name="Ana", contact="505-555-0100", prize=300.0)  # after `second` began
        result = store.prune(LONG_AGO + timedelta(days=1), archive)
        assert result.events == 0  # cutting `first` alone would split the chain inside `second`
        result = store.prune(CUTOFF, archive)
        assert result.occasions == (first, second)
    with Store.open(archive, readonly=True) as old:
        assert [w.name for w in old.winners(first)] == ["Ana"]


def test_tampering_after_a_prune_is_still_caught(tmp_path: Path) -> None:
    db, archive = tmp_path / "hall.db", tmp_path / "archive.db"
    with Store.open(db) as store:
        play(store, LONG_AGO)
        play(store, RECENT)
        store.prune(CUTOFF, archive)
    con = sqlite3.connect(db, isolation_level=None)
    first_kept = con.execute("SELECT min(id) FROM events").fetchone()[0]
    con.execute("DELETE FROM events WHERE id = ?", (first_kept,))
    con.close()
    with Store.open(db, readonly=True) as store:
        result = store.verify()
    assert result.first_bad is not None
    assert (result.first_bad.reason, result.first_bad.rowid) == ("removed", first_kept)


def test_an_archive_from_another_journal_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.db") as one:
        play(one, LONG_AGO)
        one.prune(CUTOFF, tmp_path / "archive.db")
    with Store.open(tmp_path / "b.db") as other:
        play(other, LONG_AGO + timedelta(days=3))
        play(other, LONG_AGO + timedelta(days=4))
        with pytest.raises(StoreError, match="does not continue the chain"):
            other.prune(CUTOFF, tmp_path / "archive.db")
        assert len(other.occasions()) == 2
        assert other.verify().ok


def test_a_prune_cut_off_after_writing_the_archive_can_be_run_again(tmp_path: Path) -> None:
    db, archive = tmp_path / "hall.db", tmp_path / "archive.db"
    with Store.open(db) as store:
        old = play(store, LONG_AGO)
        play(store, RECENT)
    before_prune = db.read_bytes()  # closed cleanly: WAL checkpointed into the file
    with Store.open(db) as store:
        store.prune(CUTOFF, archive)
    db.write_bytes(before_prune)  # as if the power went between the archive's commit and the journal's
    with Store.open(db) as store:
        assert store.occasions()[0].id == old
        result = store.prune(CUTOFF, archive)
        assert result.occasions == (old,)
        assert store.verify().ok
    with Store.open(archive, readonly=True) as kept:
        assert kept.verify().ok and [o.id for o in kept.occasions()] == [old]
