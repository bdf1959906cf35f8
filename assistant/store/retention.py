"""Retention: closed occasions older than the cutoff move to an archive file, the journal keeping an anchor of them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import chain
from .codec import canonical
from .records import PruneResult, StoreError, iso

if TYPE_CHECKING:
    from . import Store
    from .port import Connection


def _cut(db: Connection, cutoff: str) -> tuple[int, tuple[int, ...]]:
    """The last journal row a prune moves (0: none) and the occasions it moves.

    Only a prefix of the journal moves (the chain runs across occasions), up to the first record of an occasion
    that must stay, and it ends with the last row of an occasion that moves: rows of no occasion (users added, the
    anchor of an earlier prune) move only with the occasions around them, never on their own. The journal thus always
    keeps the anchor its chain starts from: a prune that moves an earlier anchor writes the next one.
    """
    rows = db.execute("SELECT id, occasion FROM events ORDER BY id").fetchall()
    closed = {
        occasion: json.loads(payload).get("closed_at")
        for occasion, payload in db.execute(
            "SELECT occasion, payload FROM events WHERE kind = 'occasion-close'"
        ).fetchall()
    }
    last_row: dict[int, int] = {}
    for row_id, occasion in rows:
        if occasion is not None:
            last_row[occasion] = row_id
    prunable = {occ for occ, closed_at in closed.items() if closed_at is not None and closed_at < cutoff}
    cut, needed = 0, 0
    for row_id, occasion in rows:
        if occasion is None:
            continue
        if occasion not in prunable:
            break
        needed = max(needed, last_row[occasion])
        if row_id >= needed:
            cut = row_id
    return cut, tuple(sorted({occ for row_id, occ in rows if occ is not None and row_id <= cut}))


def plan(store: Store, older_than: datetime) -> PruneResult:
    """What `prune` would move now (nothing is written): the occasions and the number of rows."""
    db = store._db
    try:
        cut, occasions = _cut(db, iso(older_than))
        events = db.execute("SELECT count(*) FROM events WHERE id <= ?", (cut,)).fetchone()[0] if cut else 0
    except db.errors as exc:
        raise db.error(exc) from None
    return PruneResult(tuple(store.occasion_info(o) for o in occasions), int(events), None, None)


def prune(store: Store, older_than: datetime, archive: Path, *, expected: Sequence[int] | None = None) -> PruneResult:
    """Move every closed occasion that ended before `older_than` to `archive`, keeping the chain verifiable.

    The archive (a SQLite file, whatever the record's back end) gets the rows verbatim, with the hash its chain
    starts from; the journal gets an anchor row recording the hash of the last row moved. `expected`: the occasions
    the operator agreed to move (`plan`); when the record has changed since, nothing moves (a one-line StoreError).
    """
    cutoff = iso(older_than)
    with store._transaction() as db:
        cut, occasions = _cut(db, cutoff)
        if expected is not None and tuple(expected) != occasions:
            raise StoreError(f"the record {store.path} changed since prune listed what it would move: nothing moved")
        if not cut:
            return PruneResult((), 0, None, None)
        moved = tuple(store.occasion_info(o) for o in occasions)
        events = [
            chain.Event(*row)
            for row in db.execute(
                f"SELECT {chain.EVENT_COLUMNS} FROM events WHERE id <= ? ORDER BY id", (cut,)
            ).fetchall()
        ]
        origin = chain.origin(db)
        write_archive(store, archive, events, origin)
        db.execute("DELETE FROM events WHERE id <= ?", (cut,))
        remaining = db.execute("SELECT hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        store._append(
            occasion=None,
            kind="anchor",
            prev_hash=remaining[0] if remaining else events[-1].hash,
            type="ChainAnchor",
            payload=canonical(
                {
                    "pruned_through": cut,
                    "last_hash": events[-1].hash,
                    "events": len(events),
                    "occasions": list(occasions),
                    "archive": str(archive),
                    "older_than": cutoff,
                }
            ),
        )
    return PruneResult(moved, len(events), archive, events[-1].hash)


def write_archive(store: Store, archive: Path, events: list[chain.Event], origin: tuple[int, str]) -> None:
    target = type(store).open(archive)
    try:
        with target._transaction() as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            have = {row[0]: row[1] for row in db.execute("SELECT id, hash FROM events").fetchall()}
            if not have:
                db.execute("UPDATE meta SET value = 'archive' WHERE key = 'role'")
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('origin_id', ?), ('origin_hash', ?)",
                    (str(origin[0]), origin[1]),
                )
            elif meta.get("role") != "archive":
                raise StoreError(f"not an archive: {archive}")
            else:
                head = db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
                fresh = [e for e in events if e.id not in have]
                if any(have[e.id] != e.hash for e in events if e.id in have) or (
                    fresh and fresh[0].prev_hash != head[1]
                ):
                    raise StoreError(f"archive {archive} does not continue the chain of {store.path}")
            for event in events:
                if event.id not in have:
                    db.execute(chain.INSERT_EVENT, dataclasses.astuple(event))
        check = target.verify()
        if not check.ok or check.head != events[-1].hash:
            raise StoreError(f"archive {archive} did not verify after writing: {check}")
    finally:
        target.close()
