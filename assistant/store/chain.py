"""The journal and its chain: rows appended in order, each hashing its content and the row before it.

An edit, a deletion or an insertion made with plain SQL breaks the chain at that row; `verify` walks it and names the
first such row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from .port import Connection
from .records import GENESIS, BadRecord, VerifyResult, iso, now

EVENT_COLUMNS = "id, occasion, kind, seq, sub, type, payload, recorded_at, prev_hash, hash"
INSERT_EVENT = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def row_hash(
    id: int,
    occasion: int | None,
    kind: str,
    seq: int | None,
    sub: int | None,
    type: str,
    payload: str,
    recorded_at: str,
    prev_hash: str,
) -> str:
    """sha256 over the canonical serialization of a row and the hash of the row before it."""
    canonical = json.dumps(
        [id, occasion, kind, seq, sub, type, payload, recorded_at, prev_hash],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Event:
    """One journal row."""

    id: int
    occasion: int | None
    kind: str
    seq: int | None
    sub: int | None
    type: str
    payload: str
    recorded_at: str
    prev_hash: str
    hash: str

    def computed_hash(self) -> str:
        return row_hash(
            self.id,
            self.occasion,
            self.kind,
            self.seq,
            self.sub,
            self.type,
            self.payload,
            self.recorded_at,
            self.prev_hash,
        )


def append(
    db: Connection,
    *,
    occasion: int | None,
    kind: str,
    type: str,
    payload: str,
    seq: int | None = None,
    sub: int | None = None,
    recorded_at: datetime | None = None,
    prev_hash: str | None = None,
) -> Event:
    """Append one row to the chain; the caller holds the write transaction."""
    head = db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    next_id = max(head[0] if head else 0, db.used_id()) + 1
    if occasion is None and kind == "occasion-start":
        occasion = next_id
    event = Event(
        id=next_id,
        occasion=occasion,
        kind=kind,
        seq=seq,
        sub=sub,
        type=type,
        payload=payload,
        recorded_at=iso(recorded_at or now()),
        prev_hash=prev_hash or (head[1] if head else origin(db)[1]),
        hash="",
    )
    event = dataclasses.replace(event, hash=event.computed_hash())
    db.execute(INSERT_EVENT, dataclasses.astuple(event))
    db.note_used(event.id)
    return event


def origin(db: Connection) -> tuple[int, str]:
    """(id of the last row before this record's chain, the hash the chain starts from)."""
    start = (0, GENESIS)
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("role") == "archive":
        # an archive holds its rows verbatim, anchors included: its chain starts where the meta says
        return (int(meta["origin_id"]), meta["origin_hash"]) if "origin_hash" in meta else start
    for (payload,) in db.execute("SELECT payload FROM events WHERE kind = 'anchor'").fetchall():
        try:
            data = json.loads(payload)
            through, last_hash = int(data["pruned_through"]), str(data["last_hash"])
        except (ValueError, KeyError, TypeError):
            continue  # a forged anchor: the chain walk names it
        if through > start[0]:
            start = (through, last_hash)
    return start


def events(db: Connection, after: int | None = None) -> list[Event]:
    """The journal's rows in order (those after id `after`)."""
    if after is None:
        rows = db.execute(f"SELECT {EVENT_COLUMNS} FROM events ORDER BY id").fetchall()
    else:
        rows = db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id", (after,)).fetchall()
    return [Event(*row) for row in rows]


def head(db: Connection) -> str:
    """The hash of the newest record."""
    row = db.execute("SELECT hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return str(row[0]) if row else origin(db)[1]


def verify(db: Connection, *, expected_head: str | None = None) -> VerifyResult:
    """Walk the chain; name the first altered, removed or inserted record.

    `expected_head`: a head hash kept elsewhere (printed on a report); records appended after it are named.
    """
    origin_id, origin_hash = origin(db)
    used = db.used_id()
    rows = events(db)

    def broken(checked: int, rowid: int, reason: str, detail: str) -> VerifyResult:
        return VerifyResult(False, checked, head(db), BadRecord("events", rowid, reason, detail))

    seen: dict[str, int] = {}
    for event in rows:
        seen[event.hash] = seen.get(event.hash, 0) + 1
    expected_prev, before_last, last_id = origin_hash, origin_hash, origin_id
    for index, event in enumerate(rows):
        following = rows[index + 1] if index + 1 < len(rows) else None
        if event.computed_hash() != event.hash:
            if following is not None and following.prev_hash == event.hash and seen[event.hash] == 1:
                return broken(index, event.id, "altered", "its content no longer matches its hash")
            skipped = following is not None and following.prev_hash == expected_prev
            if skipped or seen[event.hash] > 1 or event.prev_hash != expected_prev:
                return broken(index, event.id, "inserted", "it is not part of the chain")
            return broken(index, event.id, "altered", "its content no longer matches its hash")
        if event.prev_hash != expected_prev:
            if index > 0 and event.prev_hash == before_last:
                before = rows[index - 1].id
                return broken(index - 1, before, "inserted", f"the chain runs to record {event.id} without it")
            if index > 0 and event.id == last_id + 1:
                return broken(
                    index - 1,
                    last_id,
                    "altered",
                    f"its hash was recomputed; record {event.id} still points to the original",
                )
            missing = last_id + 1 if event.id > last_id + 1 else event.id
            return broken(index, missing, "removed", f"record {event.id} follows a record that is gone")
        before_last, expected_prev, last_id = expected_prev, event.hash, event.id
    end = expected_prev
    if used > last_id:
        bad = BadRecord("events", last_id + 1, "removed", f"records {last_id + 1}..{used} were written and are gone")
        return VerifyResult(False, len(rows), end, bad)
    if expected_head is not None and end != expected_head:
        position = next((i for i, e in enumerate(rows) if e.hash == expected_head), None)
        if position is not None:
            bad = BadRecord("events", rows[position + 1].id, "inserted", "appended after the expected head")
        else:
            bad = BadRecord("events", last_id, "removed", f"the expected head {expected_head[:16]} is gone")
        return VerifyResult(False, len(rows), end, bad)
    return VerifyResult(True, len(rows), end)
