"""Resume: inputs and outputs numbered so that replaying a session records only what a crash cut off.

A session is rebuilt by replaying its inputs into a fresh procedure (event sourcing); each output is keyed by the
input that caused it and its index among that input's outputs, so a replay finds what is recorded, checks it is the
same, and records the rest, nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..messages import Input, Output
from .codec import decode_message, encode_message
from .records import StoreError

if TYPE_CHECKING:
    from . import Store


def record(store: Store, occasion: int, kind: str, item: Input | Output, seq: int, sub: int | None) -> bool:
    """Append an input or output unless the same is recorded at (seq, sub); a different one there is an error."""
    type_name, payload = encode_message(item)
    if recorded_as(store, occasion, kind, seq, sub, type_name, payload):
        return False  # a replay: no write lock needed
    with store._transaction():
        store._require_occasion(occasion, open_=True)
        if recorded_as(store, occasion, kind, seq, sub, type_name, payload):
            return False
        store._append(occasion=occasion, kind=kind, seq=seq, sub=sub, type=type_name, payload=payload)
    return True


def recorded_as(
    store: Store, occasion: int, kind: str, seq: int, sub: int | None, type_name: str, payload: str
) -> bool:
    """True when exactly this is recorded at (seq, sub); a different record there is a StoreError."""
    where_sub = "sub IS NULL" if sub is None else "sub = ?"
    params: tuple[object, ...] = (occasion, kind, seq) if sub is None else (occasion, kind, seq, sub)
    rows = store._read(
        f"SELECT type, payload FROM events WHERE occasion = ? AND kind = ? AND seq = ? AND {where_sub}", params
    )
    if not rows:
        return False
    row = rows[0]
    if (row[0], row[1]) != (type_name, payload):
        where = f"input {seq}" if sub is None else f"output {sub} of input {seq}"
        raise StoreError(
            f"{where} of occasion {occasion} is recorded differently in {store.path}: {row[0]} there, {type_name} now"
        )
    return True


def next_number(store: Store, occasion: int, kind: str, seq: int | None) -> int:
    if kind == "input":
        rows = store._read(
            "SELECT coalesce(max(seq), -1) + 1 FROM events WHERE occasion = ? AND kind = 'input'", (occasion,)
        )
    else:
        rows = store._read(
            "SELECT coalesce(max(sub), -1) + 1 FROM events WHERE occasion = ? AND kind = 'output' AND seq = ?",
            (occasion, seq),
        )
    return int(rows[0][0])


def inputs(store: Store, occasion: int) -> list[Input]:
    """The inputs of an occasion in order: what a resume replays."""
    rows = store._read(
        "SELECT seq, type, payload FROM events WHERE occasion = ? AND kind = 'input' ORDER BY seq", (occasion,)
    )
    for expected, row in enumerate(rows):
        if row[0] != expected:
            raise StoreError(f"input {expected} of occasion {occasion} is missing from {store.path}")
    return [decode_message(row[1], row[2]) for row in rows]


class Journal:
    """Numbers the inputs of one occasion and the outputs of each, so a replay records only what is missing.

    Hook `input` before the procedure is fed and `output` as its emit sink (or `forward(...)` to pass new outputs
    on to the speaker and the printer). On resume, replay the recorded inputs through a fresh procedure with the
    same hooks: what is already recorded is checked and skipped, what a crash cut off is recorded and forwarded.
    """

    def __init__(self, store: Store, occasion: int) -> None:
        self.store = store
        self.occasion = occasion
        self.seq = -1
        """Sequence number of the last input; outputs before any input belong to -1."""
        self._sub = 0

    def input(self, item: Input) -> bool:
        """Record the next input; False when it was already recorded (a replay)."""
        self.seq += 1
        self._sub = 0
        return self.store._record(self.occasion, "input", item, self.seq, None)

    def output(self, item: Output) -> bool:
        """Record the next output of the current input; False when it was already recorded (a replay)."""
        sub = self._sub
        self._sub += 1
        return self.store._record(self.occasion, "output", item, self.seq, sub)

    def forward(self, *sinks: Callable[[Output], None]) -> Callable[[Output], None]:
        """An emit sink that records each output and passes on only those not recorded before."""

        def sink(item: Output) -> None:
            if self.output(item):
                for target in sinks:
                    target(item)

        return sink

    def recorded_inputs(self) -> list[Input]:
        """The inputs recorded so far, for the replay."""
        return self.store.inputs(self.occasion)
