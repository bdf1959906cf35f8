"""The console tests' desk: the real procedure behind its store journal, opened on the hub's desk thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from assistant.console import ConsoleHub, journal_access, make_server, store_winners
from assistant.console.access import Access, LoginLimit, RecordUsers, hash_password
from assistant.console.hub import Emit
from assistant.grammar import Grammar
from assistant.messages import Input
from assistant.procedure import Procedure, ProcedureSettings, RulePack
from assistant.store import AccessRecord, Journal, Store


@dataclass
class Desk:
    """The real procedure behind its store journal, as the pipeline wires speech: input recorded, then fed."""

    procedure: Procedure
    journal: Journal

    def feed(self, item: Input) -> None:
        self.journal.input(item)
        self.procedure.feed(item)


def desk_factory(db: Path, made: list[Desk], grammar: Grammar, source: str) -> Callable[[Emit], Desk]:
    """Opens the store and the procedure on the hub's desk thread (SQLite wants the thread that opened it)."""

    def factory(emit: Emit) -> Desk:
        store = Store.open(db)
        journal = Journal(store, store.start_occasion(source=source))
        procedure = Procedure(
            rules=RulePack.load(), grammar=grammar, settings=ProcedureSettings(), emit=journal.forward(emit)
        )
        desk = Desk(procedure, journal)
        made.append(desk)
        return desk

    return factory


@dataclass
class Running:
    """A real uvicorn server of the console in a thread, on a free loopback port."""

    server: uvicorn.Server
    thread: threading.Thread
    url: str

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def run_console(hub: ConsoleHub, access: Access | None = None) -> Running:
    server = make_server(hub, "127.0.0.1", 0, access)
    thread = threading.Thread(target=server.run, name="console-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the console server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return Running(server, thread, f"http://127.0.0.1:{port}")


@dataclass
class HallWithLogins:
    """The console as `serve --db` wires it, with users in the record: hub, desk, access gate, server."""

    hub: ConsoleHub
    desk: Desk
    access: Access
    db: Path
    running: Running

    @property
    def url(self) -> str:
        return self.running.url

    def access_log(self) -> list[AccessRecord]:
        with Store.open(self.db, readonly=True) as store:
            return store.access_log()

    def close(self) -> None:
        """Stop the server, close the record and the desk (again: nothing)."""
        if self.running.thread.is_alive():
            self.running.stop()
            self.hub.on_desk(self.desk.journal.store.close)
            self.hub.close()


USERS = {
    "carol": ("caller", "carol-calls-77"),
    "fred": ("floor", "fred-floor-42"),
    "ines": ("inspector", "ines-reads-9"),
}
"""The hall's users in the login tests: name -> (role, password)."""


def hall_with_logins(
    db: Path,
    grammar: Grammar,
    session_seconds: float = 600.0,
    limit: LoginLimit | None = None,
    *,
    users: bool = True,
    loopback: bool = False,
) -> HallWithLogins:
    """`users`: the record holds USERS; `loopback`: served as on 127.0.0.1 (open when the record has no user)."""
    with Store.open(db) as store:
        for name, (role, password) in USERS.items() if users else ():
            store.add_user(name, role, hash_password(password))
    made: list[Desk] = []
    hub = ConsoleHub(procedure_factory=desk_factory(db, made, grammar, "console-logins"), grammar=grammar)
    desk = made[0]
    store, occasion = desk.journal.store, desk.journal.occasion
    hub.winner_sink = store_winners(store, occasion)
    access = Access(
        RecordUsers(db),
        journal_access(hub, store, occasion),
        open_allowed=loopback,
        session_seconds=session_seconds,
        limit=limit,
        records=db,
        occasion=occasion,
    )
    return HallWithLogins(hub, desk, access, db, run_console(hub, access))
