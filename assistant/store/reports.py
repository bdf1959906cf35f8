"""The report queries: occasions, inputs and outputs, winners and the E(2) record, read back from the journal."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from ..messages import (
    CallMade,
    CallRecord,
    CallWithdrawn,
    ClaimOpened,
    ClaimRecord,
    ClaimResolved,
    Finding,
    GameClosed,
    GameOpened,
    GameRecord,
    HeardForReview,
    OccasionRecord,
    Output,
)
from .codec import decode_message, typed
from .records import OccasionInfo, StoreError, Winner, WinnerTakeAllRecord
from .records import winner_take_all_records as e2_records

if TYPE_CHECKING:
    from . import Store


def occasions(store: Store) -> list[OccasionInfo]:
    rows = store._read("SELECT id, source, started_at, closed_at FROM occasions ORDER BY id")
    return [_occasion_info(row) for row in rows]


def occasion_info(store: Store, occasion: int) -> OccasionInfo:
    rows = store._read("SELECT id, source, started_at, closed_at FROM occasions WHERE id = ?", (occasion,))
    if not rows:
        raise no_occasion(store, occasion)
    return _occasion_info(rows[0])


def no_occasion(store: Store, occasion: int) -> StoreError:
    """The one-line error for an occasion the record does not hold, saying which it holds."""
    held = [int(row[0]) for row in store._read("SELECT id FROM occasions ORDER BY id")]
    if not held:
        return StoreError(f"no occasion {occasion} in {store.path}: it holds no occasion")
    return StoreError(f"no occasion {occasion} in {store.path}: it holds {_ranges(held)}")


def _ranges(ids: list[int]) -> str:
    """Occasion ids as a reader takes them in: "occasion 4", "occasions 1, 3-5"."""
    spans: list[list[int]] = []
    for i in ids:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    listed = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
    return f"occasion{'s' if len(ids) > 1 else ''} {listed}"


def latest_occasion(store: Store, source: str | None = None) -> int | None:
    """The newest occasion, open or closed (of this source, when given)."""
    if source is None:
        rows = store._read("SELECT max(id) FROM occasions")
    else:
        rows = store._read("SELECT max(id) FROM occasions WHERE source = ?", (source,))
    return None if rows[0][0] is None else int(rows[0][0])


def latest_open_occasion(store: Store, source: str | None = None) -> int | None:
    """The newest occasion not closed (of this source, when given): what --resume continues."""
    rows = store._read(
        "SELECT s.occasion, s.payload FROM events s WHERE s.kind = 'occasion-start' "
        "AND NOT EXISTS (SELECT 1 FROM events c WHERE c.occasion = s.occasion AND c.kind = 'occasion-close') "
        "ORDER BY s.id DESC"
    )
    for occasion, payload in rows:
        if source is None or json.loads(payload).get("source") == source:
            return int(occasion)
    return None


def final_record(store: Store, occasion: int) -> OccasionRecord | None:
    """The record the procedure held when the occasion was closed, if it was given."""
    rows = store._read("SELECT payload FROM events WHERE occasion = ? AND kind = 'occasion-close'", (occasion,))
    if not rows:
        return None
    kept = json.loads(rows[0][0]).get("record")
    if kept is None:
        return None
    try:
        record: OccasionRecord = typed(OccasionRecord, kept)
    except (TypeError, ValueError, KeyError) as exc:
        raise StoreError(f"the final record of occasion {occasion} is unreadable in {store.path}: {exc}") from None
    return record


def outputs_by_input(store: Store, occasion: int) -> dict[int, list[Output]]:
    """Outputs grouped by the sequence number of the input that caused them (-1: before any input)."""
    rows = store._read(
        "SELECT seq, sub, type, payload FROM events WHERE occasion = ? AND kind = 'output' ORDER BY seq, sub",
        (occasion,),
    )
    grouped: dict[int, list[Output]] = {}
    for seq, sub, type_name, payload in rows:
        outs = grouped.setdefault(seq, [])
        if sub != len(outs):
            raise StoreError(f"output {len(outs)} of input {seq} of occasion {occasion} is missing from {store.path}")
        outs.append(decode_message(type_name, payload))
    return grouped


def winner_entries(store: Store, occasion: int) -> list[Winner]:
    """Every winner entry of an occasion as entered, corrected ones included, in the order entered."""
    rows = store._read(
        "SELECT id, payload, recorded_at FROM events WHERE occasion = ? AND kind = 'winner' ORDER BY id", (occasion,)
    )
    found = []
    for row_id, payload, recorded_at in rows:
        data = json.loads(payload)
        found.append(
            Winner(
                game=int(data["game"]),
                name=str(data["name"]),
                contact=str(data["contact"]),
                prize=float(data["prize"]),
                tax_document=data["tax_document"],
                recorded_at=datetime.fromisoformat(recorded_at),
                id=int(row_id),
                corrects=int(data["corrects"]) if data.get("corrects") is not None else None,
            )
        )
    return found


def winners(store: Store, occasion: int) -> list[Winner]:
    """The winners of an occasion as the record stands: an entry a later one corrects is left out."""
    entries = winner_entries(store, occasion)
    replaced = {w.corrects for w in entries if w.corrects is not None}
    return [w for w in entries if w.id not in replaced]


def games(store: Store, occasion: int) -> list[GameOpened]:
    return [out for out in store.outputs(occasion) if isinstance(out, GameOpened)]


def winner_take_all_records(store: Store, occasion: int) -> list[WinnerTakeAllRecord]:
    """The E(2) record of every winner-take-all game, and of any other game with a winner entered."""
    started = store.occasion_info(occasion).started_at
    return e2_records(occasion_record(store, occasion).games, store.winners(occasion), started)


def _occasion_info(row: tuple[object, ...]) -> OccasionInfo:
    return OccasionInfo(
        id=int(str(row[0])),
        source=str(row[1]),
        started_at=datetime.fromisoformat(str(row[2])),
        closed_at=datetime.fromisoformat(str(row[3])) if row[3] else None,
    )


def occasion_record(store: Store, occasion: int) -> OccasionRecord:
    """The occasion's record: as the procedure left it at closing, or rebuilt from the outputs recorded so far."""
    store.occasion_info(occasion)
    final = store.final_record(occasion)
    if final is not None:
        return final
    return rebuild_record(store, occasion)


def rebuild_record(store: Store, occasion: int) -> OccasionRecord:
    """Games, calls, claims and findings from the recorded outputs (outages and notes are only in the final record)."""
    record = OccasionRecord()
    games: dict[int, GameRecord] = {}
    for out in store.outputs(occasion):
        if isinstance(out, GameOpened):
            games[out.game] = GameRecord(number=out.game, plan=out.plan, start=out.time)
            record.games.append(games[out.game])
            record.prizes_total += out.plan.prize or 0.0
        elif isinstance(out, CallMade) and out.game in games:
            games[out.game].calls.append(CallRecord(ball=out.ball, time=out.time))
        elif isinstance(out, CallWithdrawn) and out.game in games:
            for call in reversed(games[out.game].calls):
                if call.ball == out.ball and not call.withdrawn:
                    call.withdrawn = True
                    break
        elif isinstance(out, ClaimOpened) and out.game in games:
            games[out.game].claims.append(ClaimRecord(time=out.time, held_ball=out.held_ball))
        elif isinstance(out, ClaimResolved) and out.game in games:
            claims = games[out.game].claims
            if not claims or claims[-1].valid is not None:
                claims.append(ClaimRecord(time=out.time, held_ball=None))
            claim = claims[-1]
            claim.manufacturer, claim.serial, claim.valid = out.manufacturer, out.serial, out.valid
            claim.winning, claim.not_called = list(out.winning), list(out.not_called)
        elif isinstance(out, GameClosed) and out.game in games:
            games[out.game].status = out.status
        elif isinstance(out, Finding):
            if out.game is not None and out.game in games:
                games[out.game].findings.append(out)
            else:
                record.findings.append(out)
        elif isinstance(out, HeardForReview):
            if out.game is not None and out.game in games:
                games[out.game].review.append(out)
            else:
                record.review.append(out)
    return record
