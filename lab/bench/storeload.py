"""Halls keying and hearing at once against one PostgreSQL server, and the server killed mid-game.

Each hall has two writers on its chain at once, as a hall running `serve --live` has: the session, feeding the
procedure's inputs (hearings and keyed balls, in turn) and their outputs through a `Journal`, and the console,
journaling each action. They go as fast as the server takes them, on loopback, until the time is up. Then every record
sent is looked for in the server's chain: none may be missing or there twice, and every chain must verify.

The fault run has each hall write its own SQLite file and a `Replica` ship it to the server; the server is killed
(`pg_ctl stop -m immediate`, a crash) part way and started again; the halls never stop recording. At the end the
server's chains must hold every row of the files, verbatim, and verify.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assistant.messages import Ball, BoardKey, CallMade, Input, Meaning, Output, Prompt, Role, Utterance
from assistant.store import Journal, RecordLocation, Store, chain, encode_message
from assistant.store.cluster import Cluster
from assistant.store.codec import canonical, plain
from assistant.store.replica import Replica


@dataclass
class HallRun:
    """What one hall sent, and what its chain held afterwards."""

    hall: str
    location: RecordLocation
    occasion: int = 0
    sent: Counter[tuple[object, ...]] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    """Seconds each record took to be committed."""
    errors: list[str] = field(default_factory=list)
    found: int = 0
    lost: int = 0
    duplicated: int = 0
    chain_ok: bool = False
    chain_rows: int = 0

    @property
    def rows(self) -> int:
        return sum(self.sent.values())


def _timed(run: HallRun, action: Callable[..., object], *args: object) -> None:
    start = time.perf_counter()
    action(*args)
    run.latencies.append(time.perf_counter() - start)


def _session(run: HallRun, store: Store, deadline: float) -> None:
    """The procedure's side: a hearing and a keyed ball in turn, each with its outputs."""
    journal = Journal(store, run.occasion)
    n = 0
    while time.monotonic() < deadline:
        ball = Ball(1 + n % 75)
        t = 5.0 * n
        words = f"{ball.letter.lower()} {ball.number}"
        item: Input
        if n % 2 == 0:
            item = Utterance(t, t + 1.2, Role.CALLER, words, 0.9, meanings=(Meaning("call", ball=ball, words=words),))
        else:
            item = BoardKey(t, ball)
        _timed(run, journal.input, item)
        run.sent[("input", journal.seq, None, *_encoded(item))] += 1
        outputs: list[Output] = [CallMade(1, ball, t, words)]
        if n % 5 == 0:
            outputs.append(Prompt(t, f"say {words} again", "repeat-call", 2, "A(3)"))
        for sub, out in enumerate(outputs):
            _timed(run, journal.output, out)
            run.sent[("output", journal.seq, sub, *_encoded(out))] += 1
        n += 1


def _console(run: HallRun, store: Store, deadline: float) -> None:
    """The console's side: each keyed ball an action in the same chain, from another connection."""
    n = 0
    while time.monotonic() < deadline:
        detail: dict[str, object] = {"user": "carol", "role": "caller", "action": "key", "data": {"n": n}}
        _timed(run, store.record_access, run.occasion, "Action", detail)
        run.sent[("access", None, None, "Action", chain_payload(detail))] += 1
        n += 1


def _encoded(item: Input | Output) -> tuple[str, str]:
    return encode_message(item)


def chain_payload(detail: dict[str, object]) -> str:
    return canonical(plain(detail))


def play(runs: list[HallRun], seconds: float, *, during: Callable[[], None] | None = None) -> None:
    """Every hall's two writers at once for `seconds`; `during` runs meanwhile (the fault)."""
    deadline = time.monotonic() + seconds
    threads: list[threading.Thread] = []
    for run in runs:
        started = threading.Event()
        threads.append(threading.Thread(target=_writer, args=(_session, run, deadline, started, None), daemon=True))
        threads.append(threading.Thread(target=_writer, args=(_console, run, deadline, None, started), daemon=True))
    for thread in threads:
        thread.start()
    if during is not None:
        during()
    for thread in threads:
        thread.join()


def _writer(
    target: Callable[[HallRun, Store, float], None],
    run: HallRun,
    deadline: float,
    opens: threading.Event | None,
    waits: threading.Event | None,
) -> None:
    """One writer with its own connection (a SQLite connection stays in its thread); the session opens the occasion
    the console waits for, and closes it at the end."""
    try:
        if waits is not None and not waits.wait(30.0):
            raise TimeoutError("the session never opened its occasion")
        with Store.open(run.location, busy_timeout=30.0) as store:
            if opens is not None:
                run.occasion = store.start_occasion(source=f"store-load {run.hall}")
                opens.set()
            target(run, store, deadline)
            if opens is not None:
                store.close_occasion(run.occasion)
    except Exception as exc:  # a writer that fails is named in the table
        run.errors.append(f"{type(exc).__name__}: {exc}")


def tally(run: HallRun, location: RecordLocation) -> None:
    """Look for every record sent in the chain at `location`: found, lost, there twice; and verify the chain."""
    with Store.open(location, readonly=True) as store:
        rows = chain.events(store._db)
        check = store.verify()
    held: Counter[tuple[object, ...]] = Counter()
    for row in rows:
        if row.occasion != run.occasion:
            continue
        if row.kind in ("input", "output"):
            held[(row.kind, row.seq, row.sub, row.type, row.payload)] += 1
        elif row.kind == "access":
            held[("access", None, None, row.type, row.payload)] += 1
    run.found = sum((held & run.sent).values())
    run.lost = sum((run.sent - held).values())
    run.duplicated = sum((held - run.sent).values())
    run.chain_ok = check.ok
    run.chain_rows = check.checked


@dataclass
class FaultLog:
    lines: list[tuple[float, str]] = field(default_factory=list)
    killed_at: float = 0.0
    back_at: float = 0.0
    rows_at_kill: int = 0
    rows_at_restart: int = 0

    def say(self, text: str) -> None:
        self.lines.append((time.monotonic(), text))


def load_run(url: str, halls: int, seconds: float) -> list[HallRun]:
    """`halls` halls writing straight to their chains on the server at `url` (a database, no hall)."""
    runs = [HallRun(f"hall-{n + 1}", f"{url}?hall=hall-{n + 1}") for n in range(halls)]
    play(runs, seconds)
    for run in runs:
        tally(run, run.location)
    return runs


def fault_run(
    cluster: Cluster, url: str, halls: int, seconds: float, down_after: float, down_for: float, folder: Path
) -> tuple[list[HallRun], FaultLog, bool]:
    """Halls writing their files, shipped to the server, which is killed `down_after` s in and back `down_for` later."""
    log = FaultLog()
    runs = [HallRun(f"hall-{n + 1}", folder / f"hall-{n + 1}.db") for n in range(halls)]
    for run in runs:
        Store.open(run.location).close()
    replicas = [Replica(Path(run.location), f"{url}?hall={run.hall}", say=log.say) for run in runs]
    for replica in replicas:
        replica.start()

    def fault() -> None:
        time.sleep(down_after)
        log.rows_at_kill = sum(run.rows for run in runs)
        cluster.stop(kill=True)
        log.killed_at = time.monotonic()
        time.sleep(down_for)
        log.rows_at_restart = sum(run.rows for run in runs)
        cluster.start()
        log.back_at = time.monotonic()

    try:
        play(runs, seconds, during=fault)
    finally:
        caught_up = all([replica.stop(flush_seconds=60.0) for replica in replicas])
        for replica in replicas:
            replica.close()
    for run in runs:
        tally(run, f"{url}?hall={run.hall}")
        with (
            Store.open(run.location, readonly=True) as local,
            Store.open(f"{url}?hall={run.hall}", readonly=True) as server,
        ):
            if chain.events(local._db) != chain.events(server._db):
                run.errors.append("the server's chain differs from the hall's file")
    return runs, log, caught_up


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.1f}"


def table(title: str, runs: list[HallRun], seconds: float) -> str:
    lines = [
        title,
        "",
        "| hall | records sent | found | lost | duplicated | chain | commit p50 ms | p99 ms | max ms | errors |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for run in runs:
        chain_text = f"intact, {run.chain_rows} rows" if run.chain_ok else "BROKEN"
        lines.append(
            f"| {run.hall} | {run.rows} | {run.found} | {run.lost} | {run.duplicated} | {chain_text} | "
            f"{_ms(run.latencies, 0.5)} | {_ms(run.latencies, 0.99)} | {_ms(run.latencies, 1.0)} | "
            f"{'; '.join(run.errors) or '-'} |"
        )
    every = [lat for run in runs for lat in run.latencies]
    sent = sum(run.rows for run in runs)
    lines.append(
        f"| all | {sent} ({sent / seconds:.0f}/s) | {sum(r.found for r in runs)} | {sum(r.lost for r in runs)} | "
        f"{sum(r.duplicated for r in runs)} | {sum(r.chain_ok for r in runs)}/{len(runs)} intact | "
        f"{_ms(every, 0.5)} | {_ms(every, 0.99)} | {_ms(every, 1.0)} | "
        f"{sum(len(r.errors) for r in runs)} |"
    )
    return "\n".join(lines)


def fault_summary(log: FaultLog, caught_up: bool, runs: list[HallRun]) -> str:
    start = log.killed_at
    told_down = sum(1 for _, text in log.lines if text.startswith("record server unreachable"))
    backs = [moment for moment, text in log.lines if text.startswith("record server back") and moment >= log.back_at]
    catch_up = f"{max(backs) - log.back_at:.1f} s" if backs else "never"
    return (
        f"server killed (immediate) with {log.rows_at_kill} records sent, down {log.back_at - start:.1f} s while the "
        f"halls sent {log.rows_at_restart - log.rows_at_kill} more to their files; {told_down} halls said it was down, "
        f"{len(backs)} said they had caught up, the last {catch_up} after the restart; all shipped at the end: "
        f"{'yes' if caught_up else 'NO'}; lost {sum(r.lost for r in runs)}, duplicated "
        f"{sum(r.duplicated for r in runs)}, server chains intact {sum(r.chain_ok for r in runs)}/{len(runs)}"
    )


def main(halls: int, minutes: float, db: str | None, fault_seconds: float, down_seconds: float) -> str:
    """The benchmark's text: the load table, then the fault run's (on a cluster of its own)."""
    seconds = 60.0 * minutes
    with tempfile.TemporaryDirectory(prefix="bingo-store-load-") as temp, Cluster() as cluster:
        url = db or cluster.create_database("load")
        where = db.split("@")[-1] if db else f"a throwaway cluster on 127.0.0.1:{cluster.port}, fsync off"
        runs = load_run(url, halls, seconds)
        text = table(f"store-load: {halls} halls, {seconds:.0f} s, straight to the server ({where})", runs, seconds)
        fault_url = cluster.create_database("fault")
        down_after = fault_seconds / 3
        fault_runs, log, caught_up = fault_run(
            cluster, fault_url, halls, fault_seconds, down_after, down_seconds, Path(temp)
        )
        text += "\n\n" + table(
            f"fault: {halls} halls, {fault_seconds:.0f} s, each writing its file, shipped to the server "
            f"(killed {down_after:.0f} s in, back {down_seconds:.0f} s later)",
            fault_runs,
            fault_seconds,
        )
        text += "\n\n" + fault_summary(log, caught_up, fault_runs)
    return text
