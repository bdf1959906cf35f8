"""The store's contract on both back ends: a real SQLite file and a hall's chain on a real PostgreSQL server.

Each test runs twice, once per back end (the server is the session's throwaway cluster, a fresh database per test).
Tampering is done with plain SQL through the same `events` view the store writes through.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_store import INPUTS, OUTPUTS, WTA

from assistant.messages import Ball, CallMade, GameOpened, GamePlan, GameType, Prompt, Role, Tick, Utterance
from assistant.settings import ROOT
from assistant.store import Journal, RecordLocation, Store, StoreError, is_server, occasion_record, rebuild_record
from assistant.store.replica import Replica

LONG_AGO = datetime(2022, 1, 7, 19, 0, tzinfo=UTC)
RECENT = datetime(2026, 11, 20, 19, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def record(request: pytest.FixtureRequest, tmp_path: Path) -> RecordLocation:
    if request.param == "sqlite":
        return tmp_path / "hall.db"
    url: str = request.getfixturevalue("pg_url")
    return f"{url}?hall=east"


@contextmanager
def plain_sql(location: RecordLocation) -> Iterator[Any]:
    """A connection of the back end's own driver, outside the store, seeing the hall's `events` as the store does."""
    if not is_server(location):
        con = sqlite3.connect(location, isolation_level=None)
        try:
            yield con
        finally:
            con.close()
        return
    import psycopg

    url, hall = str(location).split("?hall=")
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("SELECT set_config('bingo.hall', %s, false)", (hall,))
        yield con


def one(con: Any, sql: str, *params: object) -> Any:
    return con.execute(sql.replace("?", "%s") if not isinstance(con, sqlite3.Connection) else sql, params).fetchone()


def test_every_message_type_round_trips(record: RecordLocation) -> None:
    with Store.open(record) as store:
        occasion = store.start_occasion(source="tonight.txt")
        for item in INPUTS:
            store.record_input(occasion, item)
        for out in OUTPUTS:
            store.record_output(occasion, out)
    with Store.open(record, readonly=True) as store:
        assert store.inputs(occasion) == INPUTS
        assert store.outputs(occasion) == OUTPUTS
        assert store.latest_open_occasion() == occasion
        assert store.latest_open_occasion("other.txt") is None
        assert store.verify().ok


def test_recording_the_same_input_twice_is_a_no_op_and_a_different_one_is_refused(record: RecordLocation) -> None:
    with Store.open(record) as store:
        occasion = store.start_occasion(source="hall")
        assert store.record_input(occasion, INPUTS[0], seq=0) == 0
        assert store.record_input(occasion, INPUTS[0], seq=0) == 0
        assert store.record_output(occasion, OUTPUTS[0], seq=0, sub=0) is True
        assert store.record_output(occasion, OUTPUTS[0], seq=0, sub=0) is False
        with pytest.raises(StoreError, match=r"input 0 of occasion .* recorded differently"):
            store.record_input(occasion, INPUTS[1], seq=0)
        assert store.inputs(occasion) == [INPUTS[0]]
        assert store.outputs(occasion) == [OUTPUTS[0]]


def test_journal_replay_records_only_what_a_crash_cut_off(record: RecordLocation) -> None:
    with Store.open(record) as store:
        occasion = store.start_occasion(source="hall")
        journal = Journal(store, occasion)
        journal.input(INPUTS[0])
        journal.output(OUTPUTS[0])
        journal.input(INPUTS[1])  # crash here: its outputs were never written
    with Store.open(record) as store:
        assert store.latest_open_occasion("hall") == occasion
        spoken: list[object] = []
        replay = Journal(store, occasion)
        sink = replay.forward(spoken.append)
        assert replay.input(INPUTS[0]) is False
        sink(OUTPUTS[0])
        assert replay.input(INPUTS[1]) is False
        sink(OUTPUTS[1])
        sink(OUTPUTS[2])
        assert replay.input(INPUTS[2]) is True
        assert spoken == [OUTPUTS[1], OUTPUTS[2]]
        assert store.inputs(occasion) == INPUTS[:3]
        assert store.outputs_by_input(occasion) == {0: [OUTPUTS[0]], 1: [OUTPUTS[1], OUTPUTS[2]]}


def test_a_closed_occasion_keeps_the_final_record_and_takes_no_more_inputs(record: RecordLocation) -> None:
    with Store.open(record) as store:
        occasion = store.start_occasion(source="hall")
        for out in OUTPUTS:
            store.record_output(occasion, out)
        rebuilt = rebuild_record(store, occasion)
        rebuilt.notes.append("no hall program given")
        store.close_occasion(occasion, record=rebuilt)
        store.close_occasion(occasion)  # again: nothing changes
        assert occasion_record(store, occasion) == rebuilt
        assert store.latest_open_occasion() is None
        assert store.occasions()[0].closed_at is not None
        with pytest.raises(StoreError, match=f"occasion {occasion} is closed"):
            store.record_input(occasion, INPUTS[0])


def test_winner_take_all_record_flags_missing_contact_and_tax_papers(record: RecordLocation) -> None:
    started = datetime(2026, 3, 14, 19, 0, tzinfo=UTC)
    with Store.open(record) as store:
        occasion = store.start_occasion(source="hall", started_at=started)
        store.record_output(occasion, GameOpened(1, WTA, 600.0))
        store.record_output(occasion, GameOpened(2, GamePlan(GameType.WINNER_TAKE_ALL, prize=1500.0), 1800.0))
        (first, second) = store.winner_take_all_records(occasion)
        assert first.conducted_at == datetime(2026, 3, 14, 19, 10, tzinfo=UTC)
        assert first.missing == (
            "winner contact information for a prize of $900.00 (E(2)(c))",
            "tax document reference for a prize of $900.00 (E(2)(d))",
        )
        store.record_winner(occasion, 1, name="Ana Ortiz", contact="505-555-0142", prize=900.0, tax_document="W-2G 1")
        (first, second) = store.winner_take_all_records(occasion)
        assert first.missing == () and first.winners[0].contact == "505-555-0142"
        assert "number of cards sold (E(2)(a))" in second.missing
        with pytest.raises(StoreError, match="has no game 9"):
            store.record_winner(occasion, 9, name="X", contact="", prize=10.0)


def test_two_writers_at_once_keep_one_unbroken_chain(record: RecordLocation) -> None:
    Store.open(record).close()

    def write(source: str, count: int) -> None:
        with Store.open(record, busy_timeout=30.0) as store:
            occasion = store.start_occasion(source=source)
            for n in range(count):
                store.record_input(occasion, Tick(float(n)))
                store.record_output(occasion, Prompt(float(n), f"{source} {n}", "reminder"))

    threads = [threading.Thread(target=write, args=(name, 40)) for name in ("caller desk", "floor desk")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with Store.open(record, readonly=True) as store:
        assert [len(store.inputs(o.id)) for o in store.occasions()] == [40, 40]
        check = store.verify()
        assert check.ok and check.checked == 2 + 2 * 80


def calls(store: Store) -> int:
    occasion = store.start_occasion(source="tonight")
    store.record_output(occasion, GameOpened(1, GamePlan(), 0.0))
    for n, number in enumerate((3, 17, 34, 48, 62)):
        store.record_input(occasion, Utterance(10.0 * n, 10.0 * n + 1, Role.CALLER, f"call {number}"))
        store.record_output(occasion, CallMade(1, Ball(number), 10.0 * n, f"call {number}"))
    store.close_occasion(occasion)
    return occasion


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        ("UPDATE events SET payload = replace(payload, 'call 34', 'call 35') WHERE id = ?", "altered"),
        ("DELETE FROM events WHERE id = ?", "removed"),
    ],
)
def test_verify_names_the_first_row_changed_with_plain_sql(record: RecordLocation, tamper: str, reason: str) -> None:
    with Store.open(record) as store:
        calls(store)
        intact = store.verify()
        assert intact.ok and intact.checked == 13
    with plain_sql(record) as con:
        (row,) = one(con, "SELECT min(id) FROM events WHERE payload LIKE ?", "%call 34%")
        one(con, tamper + " RETURNING id", row)
    with Store.open(record, readonly=True) as store:
        check = store.verify()
    assert not check.ok
    assert check.first_bad is not None
    assert (check.first_bad.rowid, check.first_bad.reason) == (row, reason), str(check)


def test_a_row_cut_off_the_end_is_named(record: RecordLocation) -> None:
    with Store.open(record) as store:
        calls(store)
    with plain_sql(record) as con:
        (last,) = one(con, "SELECT max(id) FROM events")
        one(con, "DELETE FROM events WHERE id = ? RETURNING id", last)
    with Store.open(record, readonly=True) as store:
        check = store.verify()
    assert check.first_bad is not None and (check.first_bad.rowid, check.first_bad.reason) == (last, "removed")


def test_prune_moves_older_occasions_to_an_archive_file_and_both_chains_verify(
    record: RecordLocation, tmp_path: Path
) -> None:
    archive = tmp_path / "archive.db"
    with Store.open(record) as store:
        old = store.start_occasion(source="old", started_at=LONG_AGO)
        store.record_input(old, Tick(1.0))
        store.close_occasion(old, closed_at=LONG_AGO + timedelta(hours=2))
        new = store.start_occasion(source="new", started_at=RECENT)
        store.record_input(new, Tick(1.0))
        result = store.prune(datetime(2023, 12, 1, tzinfo=UTC), archive)
        assert result.occasions == (old,) and result.events == 3
        assert [o.id for o in store.occasions()] == [new]
        assert store.verify().ok
        store.record_input(new, Tick(2.0))
        assert store.verify().ok
    with Store.open(archive, readonly=True) as kept:
        assert [o.id for o in kept.occasions()] == [old]
        assert kept.verify().ok


def test_users_and_their_actions_are_in_the_chain(record: RecordLocation) -> None:
    with Store.open(record) as store:
        store.add_user("carol", "caller", "$argon2id$fake")
        occasion = store.start_occasion(source="hall")
        store.record_access(occasion, "Login", {"user": "carol", "role": "caller", "address": "10.0.0.5"})
        assert [u.name for u in store.users()] == ["carol"]
        with pytest.raises(StoreError, match="already exists"):
            store.add_user("carol", "floor", "$argon2id$fake")
        store.remove_user("carol")
        assert store.user("carol") is None
        assert [a.what for a in store.access_log()] == ["UserAdded", "Login", "UserRemoved"]
        assert store.verify().ok


# ---------------------------------------------------------------- what only a shared server has


def test_halls_on_one_server_keep_their_own_chains_and_name_the_hall(pg_url: str) -> None:
    with Store.open(f"{pg_url}?hall=east") as east, Store.open(f"{pg_url}?hall=west") as west:
        east_first = calls(east)
        west_first = calls(west)
        east.add_user("carol", "caller", "$argon2id$fake")
        assert east_first == west_first == 1  # each hall numbers its own rows
        assert west.users() == []
        assert east.verify().ok and west.verify().ok
        assert east.head() != west.head()
    import psycopg

    with psycopg.connect(pg_url) as con:
        halls = con.execute("SELECT hall, id, source FROM hall_occasions ORDER BY hall").fetchall()
        payload = con.execute("SELECT payload FROM journal WHERE hall = 'west' AND kind = 'occasion-start'").fetchone()
    assert halls == [("east", 1, "tonight"), ("west", 1, "tonight")]
    assert '"hall":"west"' in payload[0]


def test_halls_writing_at_once_do_not_break_each_others_chains(pg_url: str) -> None:
    def play(hall: str) -> None:
        with Store.open(f"{pg_url}?hall={hall}", busy_timeout=30.0) as store:
            occasion = store.start_occasion(source=hall)
            journal = Journal(store, occasion)
            for n in range(30):
                journal.input(Tick(float(n)))
                journal.output(Prompt(float(n), f"{hall} {n}", "reminder"))

    halls = [f"hall-{n}" for n in range(4)]
    threads = [threading.Thread(target=play, args=(hall,)) for hall in halls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for hall in halls:
        with Store.open(f"{pg_url}?hall={hall}", readonly=True) as store:
            check = store.verify()
            assert check.ok and check.checked == 61, (hall, str(check))
            assert len(store.inputs(1)) == 30


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://127.0.0.1/x", "a postgresql:// record names its hall: add ?hall=NAME to the URL"),
        ("postgresql://127.0.0.1/x?hall=no%20spaces", "a hall name is 1 to 64 letters"),
        ("postgresql://127.0.0.1:99999/x?hall=east", "not a PostgreSQL URL"),
    ],
)
def test_a_bad_url_is_one_line(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=re.escape(message)) as raised:
        Store.open(url)
    assert "\n" not in str(raised.value)


def test_a_server_that_is_down_is_one_line_naming_it_without_the_password(pg_cluster: Any) -> None:
    port = pg_cluster.port + 1 if pg_cluster.port < 65535 else pg_cluster.port - 1
    with pytest.raises(StoreError, match=r"cannot reach the record server postgresql://127.0.0.1:\d+/x hall east") as e:
        Store.open(f"postgresql://bingo:secret@127.0.0.1:{port}/x?hall=east")
    assert "\n" not in str(e.value) and "secret" not in str(e.value)


def test_without_the_driver_a_server_record_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"needs the psycopg driver: pip install 'bingo-assistant\[postgresql\]'"):
        Store.open("postgresql://127.0.0.1/x?hall=east")


def test_a_read_only_server_record_refuses_writes(pg_url: str) -> None:
    Store.open(f"{pg_url}?hall=east").close()
    with Store.open(f"{pg_url}?hall=east", readonly=True) as store, pytest.raises(StoreError, match="read-only"):
        store.start_occasion(source="x")
    with pytest.raises(StoreError, match="needs migrating"):
        Store.open(f"{pg_url.rsplit('/', 1)[0]}/postgres?hall=east", readonly=True)


# ---------------------------------------------------------------- the command line on a server record


def cli(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        input=stdin,
    )


def test_the_record_verbs_work_on_a_server_record(pg_url: str, tmp_path: Path) -> None:
    db = f"{pg_url}?hall=east"
    checked = cli("check", ROOT / "tests" / "scenarios" / "compliant-winner-take-all.txt", "--db", db, "--quiet")
    assert checked.returncode == 0, checked.stderr
    again = cli("check", ROOT / "tests" / "scenarios" / "compliant-winner-take-all.txt", "--db", db, "--resume")
    assert again.returncode == 0, again.stderr
    verified = cli("verify", "--db", db)
    assert verified.returncode == 0 and verified.stdout.startswith("chain intact:"), verified.stdout + verified.stderr
    report = json.loads(cli("report", "--db", db, "--format", "json").stdout)
    assert report["games"][0]["type"] == "winner-take-all"
    won = cli("winner", "--db", db, "--game", "1", "--name", "Ana Ortiz", "--contact", "505-555-0142", "--prize", "300")
    assert won.returncode == 0, won.stderr
    assert "Ana Ortiz" in cli("report", "--db", db, "--format", "html").stdout
    added = cli("users", "add", "ines", "--role", "inspector", "--db", db, "--password-stdin", stdin="long enough\n")
    assert added.returncode == 0, added.stderr
    assert cli("users", "list", "--db", db).stdout.startswith("ines")
    assert cli("verify", "--db", f"{pg_url}?hall=west").returncode == 0  # another hall: an empty chain of its own

    with plain_sql(db) as con:
        (row,) = one(con, "SELECT min(id) FROM events WHERE payload LIKE ?", '%"B7"%')
        one(con, "UPDATE events SET payload = replace(payload, '\"B7\"', '\"B8\"') WHERE id = ? RETURNING id", row)
    tampered = cli("verify", "--db", db)
    assert tampered.returncode == 1 and f"record {row} altered" in tampered.stdout
    with plain_sql(db) as con:
        one(con, "UPDATE events SET payload = replace(payload, '\"B8\"', '\"B7\"') WHERE id = ? RETURNING id", row)

    pruned = cli("prune", "--db", db, "--archive", tmp_path / "old.db", "--years", "0", "--yes")
    assert pruned.returncode == 0 and pruned.stdout.startswith("moved "), pruned.stdout + pruned.stderr
    assert cli("verify", "--db", db).returncode == 0
    assert cli("verify", "--db", tmp_path / "old.db").returncode == 0


def test_a_bad_server_record_is_one_line_and_exit_2(pg_cluster: Any) -> None:
    done = cli("verify", "--db", pg_cluster.url("x"))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "bingo-assistant: error: a postgresql:// record names its hall: add ?hall=NAME to the URL"
    )


def test_check_ships_its_file_to_the_server_and_a_later_run_ships_what_a_down_server_missed(
    pg_url: str, tmp_path: Path
) -> None:
    db, script = tmp_path / "hall.db", ROOT / "tests" / "scenarios" / "compliant-winner-take-all.txt"
    host, rest = pg_url.rsplit(":", 1)
    down = f"{host}:{int(rest.split('/')[0]) + 1}/{rest.split('/', 1)[1]}?hall=east"  # nothing listens there
    first = cli("check", script, "--db", db, "--quiet", "--ship-to", down)
    assert first.returncode == 0, first.stderr
    told = first.stderr.strip().splitlines()
    assert told[0].startswith("record server unreachable, recording locally and catching up when it is back: ")
    assert (
        told[-1] == f"record server unreachable: the rest of {db} is kept there; the next run with --ship-to ships it"
    )
    second = cli("check", script, "--db", db, "--quiet", "--ship-to", f"{pg_url}?hall=east")
    assert second.returncode == 0 and second.stderr == "", second.stderr
    with Store.open(db, readonly=True) as local, Store.open(f"{pg_url}?hall=east", readonly=True) as server:
        assert len(server.occasions()) == 2
        assert server.verify().head == local.verify().head
        assert server.inputs(1) == local.inputs(1)


def test_ship_to_needs_a_file_and_a_hall(pg_url: str, tmp_path: Path) -> None:
    script = ROOT / "tests" / "scenarios" / "compliant-winner-take-all.txt"
    no_hall = cli("check", script, "--db", tmp_path / "hall.db", "--ship-to", pg_url)
    assert no_hall.returncode == 2
    assert no_hall.stderr.strip().endswith("a postgresql:// record names its hall: add ?hall=NAME to the URL")
    no_file = cli("check", script, "--ship-to", f"{pg_url}?hall=east")
    assert no_file.returncode == 2 and "--ship-to ships the record file: give --db FILE" in no_file.stderr


def test_a_replica_refuses_a_server_chain_that_is_not_its_files(pg_url: str, tmp_path: Path) -> None:
    told: list[str] = []
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    for path in (first, second):
        with Store.open(path) as store:
            calls(store)
    shipping = Replica(first, f"{pg_url}?hall=east", say=told.append)
    assert shipping.stop(flush_seconds=5.0) and told == []
    shipping.close()
    other = Replica(second, f"{pg_url}?hall=east", say=told.append)
    assert not other.stop(flush_seconds=5.0)
    other.close()
    assert told == [
        f"record server refused: the server's chain of hall east does not continue {second} at record 13: "
        "not shipped (one hall, one writer)"
    ]
    with Store.open(f"{pg_url}?hall=east", readonly=True) as server, Store.open(first, readonly=True) as local:
        assert server.verify().head == local.verify().head  # the first file's rows, untouched
