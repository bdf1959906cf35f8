"""The console's entries into the store: the winner-take-all record's contact information (E(2)(c))."""

from __future__ import annotations

from collections.abc import Callable

from ..store import Store, StoreError
from .actions import ConsoleInputError
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
