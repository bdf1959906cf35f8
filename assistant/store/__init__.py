"""The store: one append-only journal of every input and output, chained by sha256, with resume and retention.

Every record is one row of `events`, committed on its own before the next is written. Each row's hash covers its
content and the previous row's hash, so an edit, a deletion or an insertion made with plain SQL breaks the chain at
that row. Typed views (occasions, games, utterances, calls, claims, findings, prompts, winners) read the journal and
hold nothing of their own. A session is rebuilt by replaying its inputs into a fresh procedure (event sourcing);
outputs are keyed by the input that caused them, so resuming after a crash records what was missing and nothing twice.

The record is a SQLite file (the embedded default: WAL, synchronous=FULL) or a hall's chain on a PostgreSQL server
shared by several halls (`postgresql://HOST/DB?hall=NAME`); both sit behind one port (`port.Connection`). The modules:
`chain` (the journal and its hash chain), `schema` (migrations), `resume` (numbering and replay), `retention` (prune),
`reports` (the report queries), `users` (the console's users and access rows), `replica` (a hall's file shipped to the
server), `sqlite` and `postgres` (the two adapters).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from ..messages import GameType, Input, OccasionRecord, Output
from . import chain, reports, resume, retention, schema, users
from .chain import Event, row_hash
from .codec import canonical, decode_message, encode_message, plain
from .port import Connection, RecordLocation, is_server, record_exists, record_location
from .records import (
    CONTACT_THRESHOLD,
    GENESIS,
    PRIZE_CAP,
    PRIZE_TOLERANCE,
    TAX_DOCUMENT_THRESHOLD,
    USER_ROLES,
    AccessRecord,
    BadRecord,
    OccasionInfo,
    PruneResult,
    RecordGap,
    StoreError,
    User,
    VerifyResult,
    Winner,
    WinnerTakeAllRecord,
    check_user,
    dollars,
    iso,
    now,
)
from .reports import occasion_record, rebuild_record
from .resume import Journal
from .schema import READS_FROM, SCHEMA_VERSION
from .schema import statements as _statements
from .sqlite import APPLICATION_ID

__all__ = [
    "APPLICATION_ID",
    "CONTACT_THRESHOLD",
    "GENESIS",
    "PRIZE_CAP",
    "READS_FROM",
    "SCHEMA_VERSION",
    "TAX_DOCUMENT_THRESHOLD",
    "USER_ROLES",
    "AccessRecord",
    "BadRecord",
    "Event",
    "Journal",
    "OccasionInfo",
    "PruneResult",
    "RecordGap",
    "RecordLocation",
    "Store",
    "StoreError",
    "User",
    "VerifyResult",
    "Winner",
    "WinnerTakeAllRecord",
    "check_user",
    "decode_message",
    "encode_message",
    "is_server",
    "occasion_record",
    "rebuild_record",
    "record_exists",
    "record_location",
    "row_hash",
]


class Store:
    """The journal of one hall: occasions, every input and output, winners; durable and tamper-evident."""

    def __init__(self, path: RecordLocation, connection: Connection, readonly: bool) -> None:
        self.path = path
        """The file, or for a server record the server and hall as messages name it."""
        self.readonly = readonly
        self._db = connection

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: RecordLocation,
        *,
        readonly: bool = False,
        busy_timeout: float = 5.0,
        max_bytes: int | None = None,
    ) -> Store:
        """Open (creating and migrating when writable) the record at `path`: a SQLite file or a `postgresql://` URL.

        `busy_timeout`: seconds to wait for another writer before "database is locked".
        `max_bytes`: a size quota (SQLite); writing past it fails like a full disk.
        """
        connection: Connection
        if is_server(path):
            from .postgres import PostgresConnection

            connection = PostgresConnection(str(path), readonly=readonly, busy_timeout=busy_timeout)
            store = cls(connection.where, connection, readonly)
        else:
            from .sqlite import SqliteConnection

            path = Path(path)
            connection = SqliteConnection(path, readonly=readonly, busy_timeout=busy_timeout)
            store = cls(path, connection, readonly)
        try:
            store._prepare(max_bytes)
        except connection.errors as exc:
            connection.close()
            raise connection.error(exc) from None
        except StoreError:
            connection.close()
            raise
        return store

    @property
    def hall(self) -> str | None:
        """The hall a server record belongs to (None for a file)."""
        return self._db.hall

    def _prepare(self, max_bytes: int | None) -> None:
        schema.prepare(self._db, readonly=self.readonly, max_bytes=max_bytes, split=_statements)

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One durable write: all of it or none of it, and a one-line StoreError when it cannot be done."""
        if self.readonly:
            raise StoreError(f"database is open read-only: {self.path}")
        db = self._db
        try:
            db.begin_write()
        except db.errors as exc:
            if db.in_transaction:
                self._rollback()
            raise db.error(exc) from None
        try:
            yield db
            db.commit()
        except BaseException as exc:
            if db.in_transaction:
                self._rollback()
            if isinstance(exc, db.errors):
                raise db.error(exc) from None
            raise

    def _rollback(self) -> None:
        with suppress(*self._db.errors):
            self._db.rollback()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ------------------------------------------------------------ appending

    def _append(
        self,
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
        return chain.append(
            self._db,
            occasion=occasion,
            kind=kind,
            type=type,
            payload=payload,
            seq=seq,
            sub=sub,
            recorded_at=recorded_at,
            prev_hash=prev_hash,
        )

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    def _require_occasion(self, occasion: int, *, open_: bool) -> None:
        rows = self._db.execute(
            "SELECT kind FROM events WHERE occasion = ? AND kind IN ('occasion-start', 'occasion-close')", (occasion,)
        ).fetchall()
        kinds = {row[0] for row in rows}
        if "occasion-start" not in kinds:
            raise reports.no_occasion(self, occasion)
        if open_ and "occasion-close" in kinds:
            raise StoreError(f"occasion {occasion} is closed in {self.path}")

    def start_occasion(self, *, source: str, started_at: datetime | None = None) -> int:
        """Begin an occasion (a session of play); returns its id. A server record names the hall in it."""
        moment = started_at or now()
        opening: dict[str, object] = {"source": source, "started_at": iso(moment)}
        if self.hall is not None:
            opening["hall"] = self.hall
        with self._transaction():
            event = self._append(occasion=None, kind="occasion-start", type="OccasionStart", payload=canonical(opening))
        assert event.occasion is not None
        return event.occasion

    def close_occasion(
        self, occasion: int, *, record: OccasionRecord | None = None, closed_at: datetime | None = None
    ) -> None:
        """Mark an occasion finished, keeping the procedure's final record; closing it again changes nothing."""
        with self._transaction() as db:
            self._require_occasion(occasion, open_=False)
            closing = db.execute("SELECT 1 FROM events WHERE occasion = ? AND kind = 'occasion-close'", (occasion,))
            if closing.fetchone():
                return
            payload: dict[str, object] = {"closed_at": iso(closed_at or now())}
            if record is not None:
                payload["record"] = plain(record)
            self._append(occasion=occasion, kind="occasion-close", type="OccasionClose", payload=canonical(payload))

    def record_input(self, occasion: int, item: Input, *, seq: int | None = None) -> int:
        """Record one input under its sequence number (the next one when None); the same input again is a no-op."""
        if seq is None:
            seq = resume.next_number(self, occasion, "input", None)
        self._record(occasion, "input", item, seq, None)
        return seq

    def record_output(self, occasion: int, item: Output, *, seq: int | None = None, sub: int | None = None) -> bool:
        """Record one output of input `seq` (the latest when None) at index `sub` (the next when None).

        Returns False when that very output was already recorded there.
        """
        if seq is None:
            seq = resume.next_number(self, occasion, "input", None) - 1
        if sub is None:
            sub = resume.next_number(self, occasion, "output", seq)
        return self._record(occasion, "output", item, seq, sub)

    def _record(self, occasion: int, kind: str, item: Input | Output, seq: int, sub: int | None) -> bool:
        """Append an input or output unless the same is recorded at (seq, sub); a different one there is an error."""
        return resume.record(self, occasion, kind, item, seq, sub)

    def record_winner(
        self,
        occasion: int,
        game: int,
        *,
        name: str,
        contact: str,
        prize: float,
        tax_document: str | None = None,
        corrects: int | None = None,
    ) -> Winner:
        """The operator's entry for one winner of a winner-take-all game (E(2)(c), (d)); returns it as recorded.

        One entry per person who won: a split game has one entry per winner, each with their share, and the shares
        never add up to more than the game's prize. A prize value of `CONTACT_THRESHOLD` or more needs the winner's
        contact, a share of `TAX_DOCUMENT_THRESHOLD` or more the tax document's reference. `corrects` names the
        entry (its id) this one replaces: the journal keeps both, the record shows the correction. Anything else is a
        one-line StoreError and nothing is written.
        """
        name, contact = name.strip(), contact.strip()
        tax = tax_document.strip() if tax_document and tax_document.strip() else None
        if not name:
            raise StoreError("a winner needs a name")
        if prize < 0:
            raise StoreError(f"a prize cannot be negative: {prize}")
        with self._transaction():
            self._require_occasion(occasion, open_=False)
            plans = {opened.game: opened.plan for opened in reports.games(self, occasion)}
            plan = plans.get(game)
            if plan is None:
                raise StoreError(f"occasion {occasion} has no game {game} in {self.path}")
            if plan.type is not GameType.WINNER_TAKE_ALL:
                raise StoreError(
                    f"game {game} of occasion {occasion} is a {plan.type.value} game: "
                    "the E(2) record keeps the winners of winner-take-all games only"
                )
            standing = self.winners(occasion)
            if corrects is not None and corrects not in {w.id for w in standing}:
                ids = ", ".join(f"{w.id} ({w.name}, game {w.game})" for w in standing) or "none"
                raise StoreError(f"no winner entry {corrects} to correct in occasion {occasion}: entries {ids}")
            others = [w for w in standing if w.game == game and w.id != corrects]
            same = next((w for w in others if w.name.casefold() == name.casefold()), None)
            if same is not None:
                raise StoreError(
                    f"{same.name} is already a winner of game {game} (entry {same.id}): "
                    f"a correction replaces it (--corrects {same.id})"
                )
            paid = sum(w.prize for w in others) + prize
            if plan.prize is not None and paid > plan.prize + PRIZE_TOLERANCE:
                entered = ", ".join(f"{w.name} {dollars(w.prize)} (entry {w.id})" for w in others)
                already = f" with {entered} entered" if others else ""
                raise StoreError(
                    f"game {game}'s prize is {dollars(plan.prize)}: {name}'s {dollars(prize)}{already} makes "
                    f"{dollars(paid)}; split winners' shares add up to the prize, a wrong entry is corrected "
                    "(--corrects ID)"
                )
            value = max(plan.prize or 0.0, paid)
            lacking = []
            if value >= CONTACT_THRESHOLD and not contact:
                lacking.append("the winner's contact information (E(2)(c))")
            if prize >= TAX_DOCUMENT_THRESHOLD and tax is None:
                lacking.append("the tax document reference (E(2)(d))")
            if lacking:
                raise StoreError(f"a prize of {dollars(max(value, prize))} needs {' and '.join(lacking)}")
            payload: dict[str, object] = {
                "game": game,
                "name": name,
                "contact": contact,
                "prize": float(prize),
                "tax_document": tax,
            }
            if corrects is not None:
                payload["corrects"] = corrects
            event = self._append(occasion=occasion, kind="winner", type="Winner", payload=canonical(payload))
        return Winner(
            game, name, contact, float(prize), tax, datetime.fromisoformat(event.recorded_at), event.id, corrects
        )

    # ------------------------------------------------------------ the console's users and who did what

    def add_user(self, name: str, role: str, password_hash: str) -> None:
        """Add a console user (the password already hashed); the journal records who was added, with which role."""
        users.add_user(self, name, role, password_hash)

    def remove_user(self, name: str) -> None:
        """Remove a console user: their sessions stop working at their next request; the journal records it."""
        users.remove_user(self, name)

    def record_access(self, occasion: int | None, what: str, detail: dict[str, object]) -> None:
        """Journal a login, a refused login or a console action, with who did it, in the occasion's chain."""
        users.record_access(self, occasion, what, detail)

    def users(self) -> list[User]:
        """The console's users by name (none in a record older than v2)."""
        return users.users(self)

    def user(self, name: str) -> User | None:
        return users.user(self, name)

    def _has_users(self) -> bool:
        try:
            return self._db.has_table("users")
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    def access_log(self, occasion: int | None = None) -> list[AccessRecord]:
        """Users added and removed, logins, refused logins and actions, in the order recorded (of one occasion)."""
        return users.access_log(self, occasion)

    # ------------------------------------------------------------ reading

    def occasions(self) -> list[OccasionInfo]:
        return reports.occasions(self)

    def occasion_info(self, occasion: int) -> OccasionInfo:
        return reports.occasion_info(self, occasion)

    def latest_occasion(self, source: str | None = None) -> int | None:
        """The newest occasion, open or closed (of this source, when given)."""
        return reports.latest_occasion(self, source)

    def latest_open_occasion(self, source: str | None = None) -> int | None:
        """The newest occasion not closed (of this source, when given): what --resume continues."""
        return reports.latest_open_occasion(self, source)

    def final_record(self, occasion: int) -> OccasionRecord | None:
        """The record the procedure held when the occasion was closed, if it was given."""
        return reports.final_record(self, occasion)

    def inputs(self, occasion: int) -> list[Input]:
        """The inputs of an occasion in order: what a resume replays."""
        return resume.inputs(self, occasion)

    def outputs(self, occasion: int) -> list[Output]:
        """The outputs of an occasion in the order the procedure emitted them."""
        return [out for outs in self.outputs_by_input(occasion).values() for out in outs]

    def outputs_by_input(self, occasion: int) -> dict[int, list[Output]]:
        """Outputs grouped by the sequence number of the input that caused them (-1: before any input)."""
        return reports.outputs_by_input(self, occasion)

    def winners(self, occasion: int) -> list[Winner]:
        """The winners of an occasion as the record stands (a corrected entry left out)."""
        return reports.winners(self, occasion)

    def winner_entries(self, occasion: int) -> list[Winner]:
        """Every winner entry of an occasion as entered, corrected ones included."""
        return reports.winner_entries(self, occasion)

    def winner_take_all_records(self, occasion: int) -> list[WinnerTakeAllRecord]:
        """The E(2) record of every winner-take-all game, and of any other game with a winner entered."""
        return reports.winner_take_all_records(self, occasion)

    # ------------------------------------------------------------ tamper evidence and retention

    def head(self) -> str:
        """The hash of the newest record."""
        try:
            return chain.head(self._db)
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    def verify(self, *, expected_head: str | None = None) -> VerifyResult:
        """Walk the chain; name the first altered, removed or inserted record.

        `expected_head`: a head hash kept elsewhere (printed on a report); records appended after it are named.
        """
        try:
            return chain.verify(self._db, expected_head=expected_head)
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    def prune_plan(self, older_than: datetime) -> PruneResult:
        """What `prune` would move now: the occasions (with their dates) and the number of rows; nothing is written."""
        return retention.plan(self, older_than)

    def prune(self, older_than: datetime, archive: Path, *, expected: Sequence[int] | None = None) -> PruneResult:
        """Move every closed occasion that ended before `older_than` to `archive`, keeping the chain verifiable.
        `expected`: the occasions the operator agreed to move; if the record changed since, nothing moves."""
        return retention.prune(self, older_than, archive, expected=expected)
