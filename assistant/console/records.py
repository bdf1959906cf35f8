"""The console's entries into the store: the winner-take-all record's contact information (E(2)(c)), and who logged
in and did what."""

from __future__ import annotations

from collections.abc import Callable

from ..store import Store, StoreError
from .access import Journal
from .actions import ConsoleInputError
from .hub import ConsoleHub
from .view import WinnerEntry


def store_winners(store: Store, occasion: int) -> Callable[[WinnerEntry], None]:
    """A winner sink for the hub that writes each entry to the occasion's record; a refusal is one line."""

    def record(entry: WinnerEntry) -> None:
        try:
            store.record_winner(
                occasion,
                entry.game,
                name=entry.name,
                contact=entry.contact,
                prize=entry.prize,
                tax_document=entry.tax_document,
            )
        except StoreError as exc:
            raise ConsoleInputError(f"winner not recorded: {exc}") from exc

    return record


def journal_access(hub: ConsoleHub, store: Store, occasion: int) -> Journal:
    """The access journal for `Access`: each login, refused login and action written on the hub's desk (the thread
    that owns the store's connection), in the occasion's chain beside the inputs they caused."""

    def record(what: str, detail: dict[str, object]) -> None:
        hub.on_desk(lambda: store.record_access(occasion, what, detail))

    return record
