"""A hall's SQLite record shipped to its chain on a PostgreSQL server, row for row: a server that is down loses nothing.

The hall writes its own file first, as it always does (the procedure never waits on the network); the replica copies
each row the server lacks verbatim (id, hash and all), starting after the last row the server holds and only if the
first new row's previous hash is that row's hash. When the server is down the replica says so in one line and the hall
goes on recording locally; when it is back the replica catches up and says so in one line. The server's copy verifies
as the file does. One hall, one writer: a hall that ships does not also write to its server chain directly, and
prunes neither (the server would hold rows its anchor says were moved).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path

from . import Store, chain
from .records import GENESIS, StoreError

BATCH = 500
"""Rows shipped in one server transaction."""


class NotContinued(StoreError):
    """The server's chain of the hall is not the file's: another writer wrote there. Shipping stops; nothing is
    overwritten."""


class Replica:
    """Ships `local` (a SQLite record) to `server` (a `postgresql://...?hall=NAME` URL)."""

    def __init__(self, local: Path, server: str, *, say: Callable[[str], None], batch: int = BATCH) -> None:
        self.local = local
        self.server = server
        self.say = say
        self.batch = batch
        self.up: bool | None = None
        """None before the first attempt; then whether the last attempt reached the server."""
        self.shipped = 0
        self.down_since: float | None = None
        self.outages = 0
        self.refused: str | None = None
        """Why the server's chain cannot take the file's rows, once found: shipping has stopped."""
        self._source: Store | None = None
        self._target: Store | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ship(self) -> int:
        """Ship one batch of what the server lacks; the rows shipped. A StoreError when the server cannot take them."""
        if self._source is None:
            self._source = Store.open(self.local, readonly=True)
        if self._target is None:
            self._target = Store.open(self.server)
        source, target = self._source, self._target
        with target._transaction() as db:
            head = db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
            last_id, last_hash = (int(head[0]), str(head[1])) if head else (0, GENESIS)
            rows = [
                chain.Event(*row)
                for row in source._read(
                    f"SELECT {chain.EVENT_COLUMNS} FROM events WHERE id >= ? ORDER BY id LIMIT ?",
                    (last_id, self.batch + 1),
                )
            ]
            joint = rows.pop(0) if rows and rows[0].id == last_id else None
            if (head and (joint is None or joint.hash != last_hash)) or (rows and rows[0].prev_hash != last_hash):
                raise NotContinued(
                    f"the server's chain of hall {target.hall} does not continue {self.local} at record {last_id}: "
                    "not shipped (one hall, one writer)"
                )
            if not rows:
                return 0
            for row in rows:
                db.execute(chain.INSERT_EVENT, dataclasses.astuple(row))
            db.note_used(rows[-1].id)
        self.shipped += len(rows)
        return len(rows)

    def catch_up(self) -> int:
        """Ship until the server holds every row written so far; the rows shipped."""
        total = 0
        while True:
            shipped = self.ship()
            total += shipped
            if shipped < self.batch:
                return total

    def step(self) -> None:
        """One attempt, telling in one line when the server goes away and when it has caught up after coming back."""
        if self.refused is not None:
            return
        try:
            shipped = self.catch_up()
        except NotContinued as exc:
            self.refused = str(exc)
            self.say(f"record server refused: {exc}")
            return
        except StoreError as exc:
            self._drop_target()
            if self.up is not False:
                self.up = False
                self.outages += 1
                self.down_since = time.monotonic()
                self.say(f"record server unreachable, recording locally and catching up when it is back: {exc}")
            return
        if self.up is False and self.down_since is not None:
            away = time.monotonic() - self.down_since
            self.say(
                f"record server back: caught up {shipped} records written in {away:.0f} s, nothing lost "
                f"(hall {self._target.hall if self._target else '?'}, through record {self.server_head_id()})"
            )
        self.up = True

    def server_head_id(self) -> int:
        if self._target is None:
            return 0
        rows = self._target._read("SELECT max(id) FROM events")
        return int(rows[0][0] or 0)

    def start(self, interval: float = 0.2) -> None:
        """Ship in the background every `interval` seconds until `stop`."""

        def loop() -> None:
            while not self._stop.wait(interval):
                self.step()
            self._close_source()  # a SQLite connection is used in the thread that opened it

        self._thread = threading.Thread(target=loop, name="record-replica", daemon=True)
        self._thread.start()

    def stop(self, *, flush_seconds: float = 10.0) -> bool:
        """Stop the background shipping, then try to ship the rest for up to `flush_seconds`; True when all is there."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        deadline = time.monotonic() + flush_seconds
        while True:
            self.step()
            if self.refused is not None:
                return False
            if self.up:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    def _drop_target(self) -> None:
        if self._target is not None:
            with contextlib.suppress(Exception):  # the connection is broken already; closing it only frees it
                self._target.close()
            self._target = None

    def close(self) -> None:
        self._drop_target()
        self._close_source()

    def _close_source(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None
