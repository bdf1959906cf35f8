"""The console tests' desk: the real procedure behind its store journal, opened on the hub's desk thread."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from assistant.console.hub import Emit
from assistant.grammar import Grammar
from assistant.messages import Input
from assistant.procedure import Procedure, ProcedureSettings, RulePack
from assistant.store import Journal, Store


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
