"""Several halls at once on one real PostgreSQL server, and the server killed mid-game (the short version of
`python -m lab.bench store-load`; its speed figures are the benchmark's, not asserted here)."""

from __future__ import annotations

from pathlib import Path

from assistant.store.cluster import Cluster
from lab.bench.storeload import fault_run, fault_summary, load_run, table

HALLS = 8


def test_eight_halls_keying_and_hearing_at_once_lose_nothing_and_keep_their_chains(pg_url: str) -> None:
    runs = load_run(pg_url, HALLS, seconds=8.0)
    text = table("load", runs, 8.0)
    assert all(run.rows > 50 for run in runs), text  # every hall's two writers did write
    assert [run.errors for run in runs] == [[]] * HALLS, text
    assert sum(run.lost for run in runs) == 0 and sum(run.duplicated for run in runs) == 0, text
    assert all(run.chain_ok and run.found == run.rows for run in runs), text


def test_the_server_killed_mid_game_the_halls_record_locally_and_catch_up(pg_cluster: Cluster, tmp_path: Path) -> None:
    del pg_cluster  # the session's server stays up: this test kills a server of its own
    with Cluster() as own:
        url = own.create_database("fault")
        runs, log, caught_up = fault_run(own, url, HALLS, 12.0, down_after=4.0, down_for=3.0, folder=tmp_path)
    summary = fault_summary(log, caught_up, runs)
    assert log.rows_at_restart > log.rows_at_kill, summary  # the halls kept recording while the server was down
    down = [text for _, text in log.lines if text.startswith("record server unreachable, recording locally")]
    back = [text for _, text in log.lines if text.startswith("record server back: caught up")]
    assert len(down) == HALLS and len(back) == HALLS, log.lines
    assert all("\n" not in text and "nothing lost" in text for text in back)
    assert caught_up, summary
    assert [run.errors for run in runs] == [[]] * HALLS, summary  # includes: each server chain equals the hall's file
    assert sum(run.lost for run in runs) == 0 and sum(run.duplicated for run in runs) == 0, summary
    assert all(run.chain_ok and run.found == run.rows > 50 for run in runs), summary
