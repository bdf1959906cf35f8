"""The SQLite store on real files: typed views, the rebuilt record, winners, locks and bad files as one-line errors
(round trips, idempotent journaling, replay and two writers are the contract of both back ends: test_store_backends)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assistant.messages import (
    Ball,
    BoardKey,
    CallMade,
    CallWithdrawn,
    ClaimOpened,
    ClaimResolved,
    Finding,
    GameClosed,
    GameOpened,
    GamePlan,
    GameStart,
    GameType,
    Meaning,
    Prompt,
    Role,
    SessionEnd,
    Severity,
    StepChanged,
    Tick,
    Utterance,
)
from assistant.store import SCHEMA_VERSION, Store, StoreError, rebuild_record

WTA = GamePlan(GameType.WINNER_TAKE_ALL, cards_sold=140, prize=900.0, last_ball_required=True)


def said(start: float, words: str, role: Role = Role.CALLER, *balls: int) -> Utterance:
    meanings = tuple(Meaning("call", ball=Ball(b), words=words) for b in balls)
    return Utterance(start, start + 1.5, role, words, confidence=0.87, meanings=meanings)


INPUTS = [
    GameStart(0.0, WTA),
    said(2.0, "one hundred forty cards sold the prize is nine hundred dollars"),
    said(5.0, "b seven", Role.CALLER, 7),
    said(7.5, "b seven", Role.CALLER, 7),
    BoardKey(8.0, Ball(7)),
    Tick(20.0),
    said(30.0, "bingo", Role.PLAYER),
    SessionEnd(90.0),
]
OUTPUTS = [
    GameOpened(1, WTA, 0.0),
    StepChanged(0.0, "before-first-ball", ("call", "cards-sold")),
    CallMade(1, Ball(7), 5.0, "b seven"),
    CallMade(1, Ball(22), 12.0, "i twenty two"),
    CallWithdrawn(1, Ball(22), 14.0),
    Prompt(20.0, "say it twice", "repeat-call", 2, "A(3)"),
    ClaimOpened(1, 30.0, Ball(40)),
    ClaimResolved(1, 40.0, True, "A12", "345", (Ball(7),), ()),
    Finding("A(3)", "call-not-repeated", Severity.VIOLATION, 12.0, "i twenty two", "said once", game=1),
    Finding("E(2)(f)", "prize-cap", Severity.WARNING, 0.0, "", "over the cap"),
    GameClosed(1, "completed", 60.0),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hall.db"


def test_the_typed_views_show_what_an_inspector_asks_for(db: Path) -> None:
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
        for item in INPUTS:
            store.record_input(occasion, item)
        for out in OUTPUTS:
            store.record_output(occasion, out)
    con = sqlite3.connect(db)
    assert con.execute("SELECT role, words, confidence, audio_offset FROM utterances WHERE seq = 2").fetchone() == (
        "caller",
        "b seven",
        0.87,
        5.0,
    )
    assert con.execute("SELECT type, cards_sold, prize, status FROM games").fetchall() == [
        ("winner-take-all", 140, 900.0, "completed")
    ]
    assert con.execute("SELECT manufacturer, serial, valid FROM claims").fetchall() == [("A12", "345", 1)]
    assert con.execute("SELECT clause, code, heard FROM findings ORDER BY clause").fetchall() == [
        ("A(3)", "call-not-repeated", "i twenty two"),
        ("E(2)(f)", "prize-cap", ""),
    ]
    assert con.execute("SELECT kind, clause FROM prompts").fetchall() == [("repeat-call", "A(3)")]
    con.close()


def test_the_record_rebuilt_from_outputs_has_games_calls_claims_and_findings(db: Path) -> None:
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
        for out in OUTPUTS:
            store.record_output(occasion, out)
        record = rebuild_record(store, occasion)
    game = record.to_json()["games"][0]  # type: ignore[index]
    assert game["calls"] == [{"ball": "B7", "time": 5.0}]
    assert game["withdrawn"] == [{"ball": "I22", "time": 12.0}]
    assert game["claims"][0]["serial"] == "345" and game["claims"][0]["held_ball"] == "N40"
    assert game["status"] == "completed"
    assert [f.clause for f in record.all_findings()] == ["A(3)", "E(2)(f)"]
    assert record.prizes_total == 900.0


def test_winner_take_all_record_flags_missing_contact_and_tax_papers(db: Path) -> None:
    started = datetime(2026, 3, 14, 19, 0, tzinfo=UTC)
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall", started_at=started)
        store.record_output(occasion, GameOpened(1, WTA, 600.0))
        store.record_output(occasion, GameOpened(2, GamePlan(GameType.WINNER_TAKE_ALL, prize=1500.0), 1800.0))
        store.record_output(occasion, GameOpened(3, GamePlan(GameType.REGULAR, prize=50.0), 3000.0))
        first, second = store.winner_take_all_records(occasion)
        assert first.conducted_at == datetime(2026, 3, 14, 19, 10, tzinfo=UTC)
        assert first.cards_sold == 140
        assert first.missing == (
            "winner contact information for a prize of $900.00 (E(2)(c))",
            "tax document reference for a prize of $900.00 (E(2)(d))",
        )
        assert "number of cards sold (E(2)(a))" in second.missing

        store.record_winner(
            occasion, 1, name="Ana Ortiz", contact="505-555-0142", prize=900.0, tax_document="W-2G 0042"
        )
        store.record_winner(occasion, 2, name="Lee Chan", contact="lee@example.org", prize=750.0, tax_document="W-7")
        store.record_winner(occasion, 2, name="Ray Vigil", contact="505-555-0177", prize=500.0)
        first, second = store.winner_take_all_records(occasion)
        assert first.missing == ()
        assert first.winners[0].contact == "505-555-0142"
        assert second.missing == (
            "number of cards sold (E(2)(a))",
            "winners' shares add up to $1,250.00 of the $1,500.00 prize (E(2))",
        )
        with pytest.raises(StoreError, match="has no game 9"):
            store.record_winner(occasion, 9, name="X", contact="", prize=10.0)
        with pytest.raises(StoreError, match="a winner needs a name"):
            store.record_winner(occasion, 1, name=" ", contact="", prize=10.0)
        with pytest.raises(StoreError, match="is a regular game"):
            store.record_winner(occasion, 3, name="Pat", contact="", prize=50.0)
        with pytest.raises(StoreError, match=r"^a prize of \$1,500.00 needs the winner's contact information"):
            store.record_winner(occasion, 2, name="Sam", contact="", prize=250.0)
        store.record_winner(occasion, 2, name="Sam Tso", contact="505-555-0188", prize=250.0)
        assert store.winner_take_all_records(occasion)[1].missing == ("number of cards sold (E(2)(a))",)


def test_a_second_writer_holding_the_lock_gives_database_is_locked(db: Path) -> None:
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
        store.record_input(occasion, INPUTS[0])
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO meta (key, value) VALUES ('held', 'by another process')")
    try:
        with Store.open(db, busy_timeout=0.2) as store:
            with pytest.raises(StoreError) as caught:
                store.record_input(occasion, INPUTS[1])
            assert str(caught.value) == f"database is locked: {db}"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store.open(db) as store:
        assert store.inputs(occasion) == [INPUTS[0]]
        assert store.verify().ok


def test_a_garbage_file_is_not_a_bingo_assistant_database(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not SQLite at all, just some text\n" * 200)
    with pytest.raises(StoreError) as caught:
        Store.open(garbage)
    assert str(caught.value) == f"not a bingo-assistant database: {garbage}"
    assert garbage.read_bytes().startswith(b"this is not SQLite")


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE recipes (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"^not a bingo-assistant database: .*other\.db$"):
        Store.open(other)
    con = sqlite3.connect(other)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["recipes"]
    con.close()


def test_a_database_from_a_newer_program_is_refused(db: Path) -> None:
    Store.open(db).close()
    con = sqlite3.connect(db)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError, match=f"schema v{SCHEMA_VERSION + 1} is newer than this program"):
        Store.open(db)


def test_readonly_refuses_writes_and_missing_files(db: Path, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such database"):
        Store.open(tmp_path / "absent.db", readonly=True)
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
    with Store.open(db, readonly=True) as store, pytest.raises(StoreError, match="read-only"):
        store.record_input(occasion, INPUTS[0])
    with pytest.raises(StoreError, match="no such directory"):
        Store.open(tmp_path / "nowhere" / "x.db")


def test_a_full_disk_gives_one_line_and_no_half_written_record(db: Path) -> None:
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
    size = db.stat().st_size
    long_words = "b seven " * 2000
    with Store.open(db, max_bytes=size + 65536) as store:
        written = 0
        with pytest.raises(StoreError) as caught:
            for n in range(200):
                store.record_input(occasion, said(float(n), long_words))
                written += 1
        assert str(caught.value) == f"disk full writing {db}"
        assert 0 < written < 200
    with Store.open(db) as store:
        assert len(store.inputs(occasion)) == written
        assert store.verify().ok
        store.record_input(occasion, INPUTS[0])  # room again: the journal carries on
        assert len(store.inputs(occasion)) == written + 1


def test_migrations_set_the_schema_version_and_wal(db: Path) -> None:
    Store.open(db).close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    Store.open(db).close()  # opening again migrates nothing


def test_a_store_damaged_inside_gives_database_is_corrupt(db: Path) -> None:
    with Store.open(db) as store:
        occasion = store.start_occasion(source="hall")
        for n in range(300):
            store.record_input(occasion, said(float(n), f"b {n % 15 + 1} " * 20))
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 20 * page
    data[8 * page : 16 * page] = b"\xde\xad\xbe\xef" * (2 * page)
    db.write_bytes(bytes(data))
    with pytest.raises(StoreError) as caught, Store.open(db, readonly=True) as store:
        store.verify()
    assert str(caught.value) == f"database is corrupt: {db}"
