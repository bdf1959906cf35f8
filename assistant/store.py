"""The SQLite store: one append-only journal of every input and output, chained by sha256, with resume and retention.

Every record is one row of `events`, committed on its own (WAL, synchronous=FULL) before the next is written.
Each row's hash covers its content and the previous row's hash, so an edit, a deletion or an insertion made with
plain SQL breaks the chain at that row. Typed views (occasions, games, utterances, calls, claims, findings,
prompts, winners) read the journal and hold nothing of their own. A session is rebuilt by replaying its inputs into a
fresh procedure (event sourcing); outputs are keyed by the input that caused them, so resuming after a crash records
what was missing and nothing twice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints
from urllib.parse import quote

from .messages import (
    Ball,
    BoardKey,
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
    GameStart,
    GameType,
    HeardForReview,
    Input,
    OccasionRecord,
    Output,
    Prompt,
    SessionEnd,
    StepChanged,
    Tick,
    Utterance,
)

APPLICATION_ID = 0x42494E47
"""PRAGMA application_id of our databases ("BING"): tells ours from any other SQLite file."""
GENESIS = "0" * 64
"""The previous hash of the first record ever written."""
CONTACT_THRESHOLD = 600.0
"""E(2)(c): winner contact information is required when the prize is this much or more."""
TAX_DOCUMENT_THRESHOLD = 1200.0
"""IRS Form W-2G is due for bingo winnings of this much or more: the E(2)(d) record expects its reference."""
PRIZE_CAP = 2500.0
"""E(2)(f): aggregate prizes of one occasion."""

_INPUT_TYPES: tuple[type, ...] = (Utterance, BoardKey, GameStart, Tick, SessionEnd)
_OUTPUT_TYPES: tuple[type, ...] = (
    Finding,
    Prompt,
    CallMade,
    CallWithdrawn,
    GameOpened,
    GameClosed,
    ClaimOpened,
    ClaimResolved,
    StepChanged,
    HeardForReview,
)
_MESSAGE_TYPES: dict[str, type] = {cls.__name__: cls for cls in _INPUT_TYPES + _OUTPUT_TYPES}


class StoreError(Exception):
    """The database cannot be used or written; the message is one line naming the file."""


# ---------------------------------------------------------------- messages <-> canonical JSON


def _plain(value: object) -> Any:
    if isinstance(value, Ball):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot record a {type(value).__name__}")


def _typed(hint: Any, value: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _typed(option, value)
            except (TypeError, ValueError, KeyError):
                continue
        raise ValueError(f"{value!r} fits none of {hint}")
    if origin in (tuple, list):
        element = get_args(hint)[0]
        items = [_typed(element, v) for v in value]
        return tuple(items) if origin is tuple else items
    if hint is Ball:
        return Ball.parse(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise TypeError(f"expected an object for {hint.__name__}")
        hints = get_type_hints(hint)
        return hint(
            **{f.name: _typed(hints[f.name], value[f.name]) for f in dataclasses.fields(hint) if f.name in value}
        )
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is bool and isinstance(value, bool):
        return value
    if hint is str and isinstance(value, str):
        return value
    raise TypeError(f"{value!r} is not a {hint}")


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_message(item: Input | Output) -> tuple[str, str]:
    """A message as (type name, canonical JSON)."""
    name = type(item).__name__
    if name not in _MESSAGE_TYPES:
        raise StoreError(f"not a message the store records: {name}")
    return name, _canonical(_plain(item))


def decode_message(type_name: str, payload: str) -> Any:
    """The message a journal row holds."""
    cls = _MESSAGE_TYPES.get(type_name)
    if cls is None:
        raise StoreError(f"unknown message type in the journal: {type_name}")
    return _typed(cls, json.loads(payload))


# ---------------------------------------------------------------- the journal and its chain


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


_EVENT_COLUMNS = "id, occasion, kind, seq, sub, type, payload, recorded_at, prev_hash, hash"


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
class BadRecord:
    """Where the chain breaks: the journal row (or the missing row's id) and what happened to it."""

    table: str
    rowid: int
    reason: str
    """altered | removed | inserted"""
    detail: str

    def __str__(self) -> str:
        return f"{self.table} record {self.rowid} {self.reason}: {self.detail}"


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int
    """Rows whose hash was checked."""
    head: str
    """The hash of the last row: print it on paper and a later verify can prove nothing was appended or cut."""
    first_bad: BadRecord | None = None

    def describe(self) -> str:
        """One line for `verify`."""
        return str(self)

    def __str__(self) -> str:
        if self.first_bad is None:
            return f"chain intact: {self.checked} records, head {self.head[:16]}"
        return f"chain broken: {self.first_bad}"


@dataclass(frozen=True)
class PruneResult:
    occasions: tuple[int, ...]
    """Occasions moved to the archive."""
    events: int
    """Journal rows moved."""
    archive: Path | None
    anchor_hash: str | None
    """Hash of the last moved row, kept in the journal's anchor row."""

    def describe(self) -> str:
        """One line for `prune`."""
        if not self.events:
            return "nothing older to prune"
        listed = ", ".join(str(o) for o in self.occasions)
        return f"moved {self.events} records of occasion(s) {listed} to {self.archive}"


@dataclass(frozen=True)
class OccasionInfo:
    id: int
    source: str
    started_at: datetime
    closed_at: datetime | None


@dataclass(frozen=True)
class Winner:
    """A winner entered by the operator (E(2)(c), (d))."""

    game: int
    name: str
    contact: str
    prize: float
    tax_document: str | None
    recorded_at: datetime


@dataclass(frozen=True)
class WinnerTakeAllRecord:
    """The E(2) record of one game: cards sold, when, the prize, its winners and their papers."""

    game: int
    type: GameType
    cards_sold: int | None
    conducted_at: datetime | None
    prize: float | None
    winners: tuple[Winner, ...]

    @property
    def missing(self) -> tuple[str, ...]:
        """What the E(2) record still lacks, each naming its clause."""
        gaps: list[str] = []
        if self.type is GameType.WINNER_TAKE_ALL and self.cards_sold is None:
            gaps.append("number of cards sold (E(2)(a))")
        if self.type is GameType.WINNER_TAKE_ALL and self.prize is None:
            gaps.append("prize amount (E(1))")
        prize = max([self.prize or 0.0] + [w.prize for w in self.winners])
        if prize >= CONTACT_THRESHOLD:
            if not self.winners:
                gaps.append(f"winner contact information for a prize of ${prize:,.2f} (E(2)(c))")
            elif any(not w.contact.strip() for w in self.winners):
                gaps.append("contact information of a winner (E(2)(c))")
        if prize >= TAX_DOCUMENT_THRESHOLD and (not self.winners or any(not w.tax_document for w in self.winners)):
            gaps.append(f"tax document reference for a prize of ${prize:,.2f} (E(2)(d))")
        return tuple(gaps)


@dataclass(frozen=True)
class User:
    """A console user: a name, a role (`USER_ROLES`) and the argon2 hash of the password."""

    name: str
    role: str
    password_hash: str
    added_at: datetime


@dataclass(frozen=True)
class AccessRecord:
    """One journal row of kind 'access': a user added or removed, a login, a refused login, an action."""

    id: int
    occasion: int | None
    what: str
    """UserAdded | UserRemoved | Login | LoginRefused | Logout | Action | ActionRefused"""
    detail: dict[str, Any]
    """Who (`user`, `role`), from where (`address`), what (`action`, `data`), and why a refusal (`reason`)."""
    recorded_at: datetime


def check_user(name: str, role: str) -> None:
    """A user's name and role as the store takes them; a StoreError of one line otherwise."""
    if not _USER_NAME.fullmatch(name):
        raise StoreError(
            f"a user name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit: {name!r}"
        )
    if role not in USER_ROLES:
        raise StoreError(f"a user's role is one of {', '.join(USER_ROLES)}, not {role!r}")


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    """UTC ISO 8601; a naive datetime is local time."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("assistant").joinpath("migrations")
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip() and not all(not part.strip() or part.strip().startswith("--") for part in buffer.splitlines()):
        raise StoreError(f"migration ends inside a statement: {buffer.strip()[:40]}")


SCHEMA_VERSION = max(number for number, _, _ in _migrations())
"""The newest schema this program writes."""
READS_FROM = 1
"""The oldest schema this program reads without migrating: v2 only added the console's users (a v1 record reads as
one with no users), so `verify` and `report` still open a v1 record or archive read-only."""
USER_ROLES = ("caller", "floor", "inspector")
"""Who may log in to the console: the caller keys balls, claims and the next game; the floor claims and card checks;
the inspector reads records, reports and the chain. (The flashboard is public and needs no user.)"""
_USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class Store:
    """The journal of one hall: occasions, every input and output, winners; durable and tamper-evident."""

    def __init__(self, path: Path, connection: sqlite3.Connection, readonly: bool) -> None:
        self.path = path
        self.readonly = readonly
        self._db = connection

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        readonly: bool = False,
        busy_timeout: float = 5.0,
        max_bytes: int | None = None,
    ) -> Store:
        """Open (creating and migrating when writable) the database at `path`.

        `busy_timeout`: seconds to wait for another writer before "database is locked".
        `max_bytes`: a size quota; writing past it fails like a full disk.
        """
        path = Path(path)
        if readonly and not path.exists():
            raise StoreError(f"no such database: {path}")
        if not readonly and not path.parent.is_dir():
            raise StoreError(f"no such directory for the database: {path.parent}")
        if path.is_dir():
            raise StoreError(f"is a directory, not a database: {path}")
        try:
            if readonly:
                db = sqlite3.connect(
                    f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=busy_timeout, isolation_level=None
                )
            else:
                db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise _store_error(exc, path) from None
        store = cls(path, db, readonly)
        try:
            store._prepare(max_bytes)
        except sqlite3.Error as exc:
            db.close()
            raise _store_error(exc, path) from None
        except StoreError:
            db.close()
            raise
        return store

    def _prepare(self, max_bytes: int | None) -> None:
        db = self._db
        app_id = db.execute("PRAGMA application_id").fetchone()[0]  # reads the header: garbage fails here
        version = db.execute("PRAGMA user_version").fetchone()[0]
        has_tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        if app_id != APPLICATION_ID and (app_id != 0 or has_tables or version != 0):
            raise StoreError(f"not a bingo-assistant database: {self.path}")
        if version > SCHEMA_VERSION:
            raise StoreError(f"database schema v{version} is newer than this program (v{SCHEMA_VERSION}): {self.path}")
        if self.readonly:
            if version < READS_FROM:
                raise StoreError(f"database schema v{version} needs migrating; open it writable once: {self.path}")
            return
        if db.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
            raise StoreError(f"cannot switch the database to WAL mode: {self.path}")
        db.execute("PRAGMA synchronous=FULL")
        if max_bytes is not None:
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            db.execute(f"PRAGMA max_page_count={max(1, max_bytes // page_size)}")
        self._migrate()

    def _migrate(self) -> None:
        for number, _name, script in _migrations():
            if self._db.execute("PRAGMA user_version").fetchone()[0] >= number:
                continue
            with self._transaction():
                if self._db.execute("PRAGMA user_version").fetchone()[0] >= number:
                    continue  # another process migrated while we waited
                for statement in _statements(script):
                    self._db.execute(statement)
                if number == 1:
                    self._db.execute("INSERT INTO meta (key, value) VALUES ('role', 'journal')")
                self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                self._db.execute(f"PRAGMA user_version={number}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One durable write: all of it or none of it, and a one-line StoreError when it cannot be done."""
        if self.readonly:
            raise StoreError(f"database is open read-only: {self.path}")
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        try:
            yield self._db
            self._db.execute("COMMIT")
        except BaseException as exc:
            if self._db.in_transaction:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _store_error(exc, self.path) from None
            raise

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
        head = self._db.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
        used = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        next_id = max(head[0] if head else 0, used[0] if used else 0) + 1
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
            recorded_at=_iso(recorded_at or _now()),
            prev_hash=prev_hash or (head[1] if head else self._origin()[1]),
            hash="",
        )
        event = dataclasses.replace(event, hash=event.computed_hash())
        self._db.execute(
            f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", dataclasses.astuple(event)
        )
        return event

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None

    def _require_occasion(self, occasion: int, *, open_: bool) -> None:
        rows = self._db.execute(
            "SELECT kind FROM events WHERE occasion = ? AND kind IN ('occasion-start', 'occasion-close')", (occasion,)
        ).fetchall()
        kinds = {row[0] for row in rows}
        if "occasion-start" not in kinds:
            raise StoreError(f"no occasion {occasion} in {self.path}")
        if open_ and "occasion-close" in kinds:
            raise StoreError(f"occasion {occasion} is closed in {self.path}")

    def start_occasion(self, *, source: str, started_at: datetime | None = None) -> int:
        """Begin an occasion (a session of play); returns its id."""
        moment = started_at or _now()
        with self._transaction():
            event = self._append(
                occasion=None,
                kind="occasion-start",
                type="OccasionStart",
                payload=_canonical({"source": source, "started_at": _iso(moment)}),
            )
        assert event.occasion is not None
        return event.occasion

    def close_occasion(
        self, occasion: int, *, record: OccasionRecord | None = None, closed_at: datetime | None = None
    ) -> None:
        """Mark an occasion finished, keeping the procedure's final record; closing it again changes nothing."""
        with self._transaction():
            self._require_occasion(occasion, open_=False)
            if self._db.execute(
                "SELECT 1 FROM events WHERE occasion = ? AND kind = 'occasion-close'", (occasion,)
            ).fetchone():
                return
            payload: dict[str, object] = {"closed_at": _iso(closed_at or _now())}
            if record is not None:
                payload["record"] = _plain(record)
            self._append(occasion=occasion, kind="occasion-close", type="OccasionClose", payload=_canonical(payload))

    def final_record(self, occasion: int) -> OccasionRecord | None:
        """The record the procedure held when the occasion was closed, if it was given."""
        rows = self._read(
            "SELECT json_extract(payload, '$.record') FROM events WHERE occasion = ? AND kind = 'occasion-close'",
            (occasion,),
        )
        if not rows or rows[0][0] is None:
            return None
        try:
            record: OccasionRecord = _typed(OccasionRecord, json.loads(rows[0][0]))
        except (TypeError, ValueError, KeyError) as exc:
            raise StoreError(f"the final record of occasion {occasion} is unreadable in {self.path}: {exc}") from None
        return record

    def latest_open_occasion(self, source: str | None = None) -> int | None:
        """The newest occasion not closed (of this source, when given): what --resume continues."""
        rows = self._read(
            "SELECT s.occasion, json_extract(s.payload, '$.source') FROM events s WHERE s.kind = 'occasion-start' "
            "AND NOT EXISTS (SELECT 1 FROM events c WHERE c.occasion = s.occasion AND c.kind = 'occasion-close') "
            "ORDER BY s.id DESC"
        )
        for occasion, row_source in rows:
            if source is None or row_source == source:
                return int(occasion)
        return None

    def record_input(self, occasion: int, item: Input, *, seq: int | None = None) -> int:
        """Record one input under its sequence number (the next one when None); the same input again is a no-op."""
        if seq is None:
            seq = self._next_number(occasion, "input", None)
        self._record(occasion, "input", item, seq, None)
        return seq

    def record_output(self, occasion: int, item: Output, *, seq: int | None = None, sub: int | None = None) -> bool:
        """Record one output of input `seq` (the latest when None) at index `sub` (the next when None).

        Returns False when that very output was already recorded there.
        """
        if seq is None:
            seq = self._next_number(occasion, "input", None) - 1
        if sub is None:
            sub = self._next_number(occasion, "output", seq)
        return self._record(occasion, "output", item, seq, sub)

    def _next_number(self, occasion: int, kind: str, seq: int | None) -> int:
        if kind == "input":
            rows = self._read(
                "SELECT coalesce(max(seq), -1) + 1 FROM events WHERE occasion = ? AND kind = 'input'", (occasion,)
            )
        else:
            rows = self._read(
                "SELECT coalesce(max(sub), -1) + 1 FROM events WHERE occasion = ? AND kind = 'output' AND seq = ?",
                (occasion, seq),
            )
        return int(rows[0][0])

    def _record(self, occasion: int, kind: str, item: Input | Output, seq: int, sub: int | None) -> bool:
        """Append an input or output unless the same is recorded at (seq, sub); a different one there is an error."""
        type_name, payload = encode_message(item)
        if self._recorded_as(occasion, kind, seq, sub, type_name, payload):
            return False  # a replay: no write lock needed
        with self._transaction():
            self._require_occasion(occasion, open_=True)
            if self._recorded_as(occasion, kind, seq, sub, type_name, payload):
                return False
            self._append(occasion=occasion, kind=kind, seq=seq, sub=sub, type=type_name, payload=payload)
        return True

    def _recorded_as(self, occasion: int, kind: str, seq: int, sub: int | None, type_name: str, payload: str) -> bool:
        """True when exactly this is recorded at (seq, sub); a different record there is a StoreError."""
        try:
            row = self._db.execute(
                "SELECT type, payload FROM events WHERE occasion = ? AND kind = ? AND seq = ? AND sub IS ?",
                (occasion, kind, seq, sub),
            ).fetchone()
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        if row is None:
            return False
        if (row[0], row[1]) != (type_name, payload):
            where = f"input {seq}" if sub is None else f"output {sub} of input {seq}"
            raise StoreError(
                f"{where} of occasion {occasion} is recorded differently in {self.path}: "
                f"{row[0]} there, {type_name} now"
            )
        return True

    def record_winner(
        self,
        occasion: int,
        game: int,
        *,
        name: str,
        contact: str,
        prize: float,
        tax_document: str | None = None,
    ) -> None:
        """The operator's entry for a winner: contact information (E(2)(c)) and tax papers (E(2)(d))."""
        if not name.strip():
            raise StoreError("a winner needs a name")
        if prize < 0:
            raise StoreError(f"a prize cannot be negative: {prize}")
        with self._transaction():
            self._require_occasion(occasion, open_=False)
            games = {plan.game for plan in self._games(occasion)}
            if game not in games:
                raise StoreError(f"occasion {occasion} has no game {game} in {self.path}")
            payload = {
                "game": game,
                "name": name.strip(),
                "contact": contact.strip(),
                "prize": float(prize),
                "tax_document": tax_document.strip() if tax_document and tax_document.strip() else None,
            }
            self._append(occasion=occasion, kind="winner", type="Winner", payload=_canonical(payload))

    # ------------------------------------------------------------ the console's users and who did what

    def add_user(self, name: str, role: str, password_hash: str) -> None:
        """Add a console user (the password already hashed); the journal records who was added, with which role."""
        check_user(name, role)
        with self._transaction():
            if self._db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise StoreError(f"user {name} already exists in {self.path}")
            moment = _now()
            self._db.execute(
                "INSERT INTO users (name, role, password_hash, added_at) VALUES (?, ?, ?, ?)",
                (name, role, password_hash, _iso(moment)),
            )
            payload = _canonical({"user": name, "role": role})
            self._append(occasion=None, kind="access", type="UserAdded", payload=payload, recorded_at=moment)

    def remove_user(self, name: str) -> None:
        """Remove a console user: their sessions stop working at their next request; the journal records it."""
        with self._transaction():
            row = self._db.execute("SELECT role FROM users WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise StoreError(f"no user {name} in {self.path}")
            self._db.execute("DELETE FROM users WHERE name = ?", (name,))
            payload = _canonical({"user": name, "role": row[0]})
            self._append(occasion=None, kind="access", type="UserRemoved", payload=payload)

    def record_access(self, occasion: int | None, what: str, detail: dict[str, object]) -> None:
        """Journal a login, a refused login or a console action, with who did it, in the occasion's chain."""
        with self._transaction():
            if occasion is not None:
                self._require_occasion(occasion, open_=False)
            self._append(occasion=occasion, kind="access", type=what, payload=_canonical(_plain(detail)))

    # ------------------------------------------------------------ reading

    def users(self) -> list[User]:
        """The console's users by name (none in a record older than v2)."""
        if not self._has_users():
            return []
        rows = self._read("SELECT name, role, password_hash, added_at FROM users ORDER BY name")
        return [User(row[0], row[1], row[2], datetime.fromisoformat(row[3])) for row in rows]

    def user(self, name: str) -> User | None:
        if not self._has_users():
            return None
        rows = self._read("SELECT name, role, password_hash, added_at FROM users WHERE name = ?", (name,))
        return User(rows[0][0], rows[0][1], rows[0][2], datetime.fromisoformat(rows[0][3])) if rows else None

    def _has_users(self) -> bool:
        return bool(self._read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'users'"))

    def access_log(self, occasion: int | None = None) -> list[AccessRecord]:
        """Users added and removed, logins, refused logins and actions, in the order recorded (of one occasion)."""
        sql = "SELECT id, occasion, type, payload, recorded_at FROM events WHERE kind = 'access'"
        rows = self._read(
            sql + " AND occasion = ? ORDER BY id" if occasion is not None else sql + " ORDER BY id",
            (occasion,) if occasion is not None else (),
        )
        return [
            AccessRecord(row[0], row[1], row[2], json.loads(row[3]), datetime.fromisoformat(row[4])) for row in rows
        ]

    def occasions(self) -> list[OccasionInfo]:
        rows = self._read("SELECT id, source, started_at, closed_at FROM occasions ORDER BY id")
        return [_occasion_info(row) for row in rows]

    def occasion_info(self, occasion: int) -> OccasionInfo:
        rows = self._read("SELECT id, source, started_at, closed_at FROM occasions WHERE id = ?", (occasion,))
        if not rows:
            raise StoreError(f"no occasion {occasion} in {self.path}")
        return _occasion_info(rows[0])

    def latest_occasion(self, source: str | None = None) -> int | None:
        """The newest occasion, open or closed (of this source, when given)."""
        if source is None:
            rows = self._read("SELECT max(id) FROM occasions")
        else:
            rows = self._read("SELECT max(id) FROM occasions WHERE source = ?", (source,))
        return None if rows[0][0] is None else int(rows[0][0])

    def inputs(self, occasion: int) -> list[Input]:
        """The inputs of an occasion in order: what a resume replays."""
        rows = self._read(
            "SELECT seq, type, payload FROM events WHERE occasion = ? AND kind = 'input' ORDER BY seq", (occasion,)
        )
        for expected, row in enumerate(rows):
            if row[0] != expected:
                raise StoreError(f"input {expected} of occasion {occasion} is missing from {self.path}")
        return [decode_message(row[1], row[2]) for row in rows]

    def outputs(self, occasion: int) -> list[Output]:
        """The outputs of an occasion in the order the procedure emitted them."""
        return [out for outs in self.outputs_by_input(occasion).values() for out in outs]

    def outputs_by_input(self, occasion: int) -> dict[int, list[Output]]:
        """Outputs grouped by the sequence number of the input that caused them (-1: before any input)."""
        rows = self._read(
            "SELECT seq, sub, type, payload FROM events WHERE occasion = ? AND kind = 'output' ORDER BY seq, sub",
            (occasion,),
        )
        grouped: dict[int, list[Output]] = {}
        for seq, sub, type_name, payload in rows:
            outs = grouped.setdefault(seq, [])
            if sub != len(outs):
                raise StoreError(
                    f"output {len(outs)} of input {seq} of occasion {occasion} is missing from {self.path}"
                )
            outs.append(decode_message(type_name, payload))
        return grouped

    def winners(self, occasion: int) -> list[Winner]:
        rows = self._read(
            "SELECT payload, recorded_at FROM events WHERE occasion = ? AND kind = 'winner' ORDER BY id", (occasion,)
        )
        winners = []
        for payload, recorded_at in rows:
            data = json.loads(payload)
            winners.append(
                Winner(
                    game=int(data["game"]),
                    name=str(data["name"]),
                    contact=str(data["contact"]),
                    prize=float(data["prize"]),
                    tax_document=data["tax_document"],
                    recorded_at=datetime.fromisoformat(recorded_at),
                )
            )
        return winners

    def _games(self, occasion: int) -> list[GameOpened]:
        return [out for out in self.outputs(occasion) if isinstance(out, GameOpened)]

    def winner_take_all_records(self, occasion: int) -> list[WinnerTakeAllRecord]:
        """The E(2) record of every winner-take-all game, and of any other game with a winner entered."""
        started = self.occasion_info(occasion).started_at
        winners = self.winners(occasion)
        records = []
        for opened in self._games(occasion):
            game_winners = tuple(w for w in winners if w.game == opened.game)
            if opened.plan.type is not GameType.WINNER_TAKE_ALL and not game_winners:
                continue
            records.append(
                WinnerTakeAllRecord(
                    game=opened.game,
                    type=opened.plan.type,
                    cards_sold=opened.plan.cards_sold,
                    conducted_at=started + timedelta(seconds=opened.time),
                    prize=opened.plan.prize,
                    winners=game_winners,
                )
            )
        return records

    def head(self) -> str:
        """The hash of the newest record."""
        rows = self._read("SELECT hash FROM events ORDER BY id DESC LIMIT 1")
        return str(rows[0][0]) if rows else self._origin()[1]

    def _origin(self) -> tuple[int, str]:
        """(id of the last row before this file's chain, the hash the chain starts from)."""
        origin = (0, GENESIS)
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("role") == "archive":
            # an archive holds its rows verbatim, anchors included: its chain starts where the meta says
            return (int(meta["origin_id"]), meta["origin_hash"]) if "origin_hash" in meta else origin
        for (payload,) in self._db.execute("SELECT payload FROM events WHERE kind = 'anchor'").fetchall():
            try:
                data = json.loads(payload)
                through, last_hash = int(data["pruned_through"]), str(data["last_hash"])
            except (ValueError, KeyError, TypeError):
                continue  # a forged anchor: the chain walk names it
            if through > origin[0]:
                origin = (through, last_hash)
        return origin

    def _events(self) -> list[Event]:
        rows = self._read(f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY id")
        return [Event(*row) for row in rows]

    # ------------------------------------------------------------ tamper evidence

    def verify(self, *, expected_head: str | None = None) -> VerifyResult:
        """Walk the chain; name the first altered, removed or inserted record.

        `expected_head`: a head hash kept elsewhere (printed on a report); records appended after it are named.
        """
        try:
            origin_id, origin_hash = self._origin()
            used_row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        events = self._events()
        seen: dict[str, int] = {}
        for event in events:
            seen[event.hash] = seen.get(event.hash, 0) + 1
        expected_prev, before_last, last_id = origin_hash, origin_hash, origin_id
        for index, event in enumerate(events):
            following = events[index + 1] if index + 1 < len(events) else None
            if event.computed_hash() != event.hash:
                if following is not None and following.prev_hash == event.hash and seen[event.hash] == 1:
                    return self._broken(index, event.id, "altered", "its content no longer matches its hash")
                skipped = following is not None and following.prev_hash == expected_prev
                if skipped or seen[event.hash] > 1 or event.prev_hash != expected_prev:
                    return self._broken(index, event.id, "inserted", "it is not part of the chain")
                return self._broken(index, event.id, "altered", "its content no longer matches its hash")
            if event.prev_hash != expected_prev:
                if index > 0 and event.prev_hash == before_last:
                    return self._broken(
                        index - 1, events[index - 1].id, "inserted", f"the chain runs to record {event.id} without it"
                    )
                if index > 0 and event.id == last_id + 1:
                    return self._broken(
                        index - 1,
                        last_id,
                        "altered",
                        f"its hash was recomputed; record {event.id} still points to the original",
                    )
                missing = last_id + 1 if event.id > last_id + 1 else event.id
                return self._broken(index, missing, "removed", f"record {event.id} follows a record that is gone")
            before_last, expected_prev, last_id = expected_prev, event.hash, event.id
        head = expected_prev
        used = used_row[0] if used_row else 0
        if used > last_id:
            bad = BadRecord(
                "events", last_id + 1, "removed", f"records {last_id + 1}..{used} were written and are gone"
            )
            return VerifyResult(False, len(events), head, bad)
        if expected_head is not None and head != expected_head:
            position = next((i for i, e in enumerate(events) if e.hash == expected_head), None)
            if position is not None:
                bad = BadRecord("events", events[position + 1].id, "inserted", "appended after the expected head")
            else:
                bad = BadRecord("events", last_id, "removed", f"the expected head {expected_head[:16]} is gone")
            return VerifyResult(False, len(events), head, bad)
        return VerifyResult(True, len(events), head)

    def _broken(self, checked: int, rowid: int, reason: str, detail: str) -> VerifyResult:
        return VerifyResult(False, checked, self.head(), BadRecord("events", rowid, reason, detail))

    # ------------------------------------------------------------ retention

    def prune(self, older_than: datetime, archive: Path) -> PruneResult:
        """Move every closed occasion that ended before `older_than` to `archive`, keeping the chain verifiable.

        Only a prefix of the journal moves (the chain runs across occasions), up to the first record of an occasion
        that must stay. The archive gets the rows verbatim, with the hash its chain starts from; the journal gets an
        anchor row recording the hash of the last row moved.
        """
        cutoff = _iso(older_than)
        with self._transaction():
            rows = self._db.execute("SELECT id, occasion, hash FROM events ORDER BY id").fetchall()
            closed = dict(
                self._db.execute(
                    "SELECT occasion, json_extract(payload, '$.closed_at') FROM events WHERE kind = 'occasion-close'"
                ).fetchall()
            )
            last_row: dict[int, int] = {}
            for row_id, occasion, _ in rows:
                if occasion is not None:
                    last_row[occasion] = row_id
            prunable = {occ for occ, closed_at in closed.items() if closed_at < cutoff}
            cut, needed = 0, 0
            for row_id, occasion, _ in rows:
                if occasion is not None and occasion not in prunable:
                    break
                if occasion is not None:
                    needed = max(needed, last_row[occasion])
                if row_id >= needed:
                    cut = row_id
            moved = [row for row in rows if row[0] <= cut]
            if not moved:
                return PruneResult((), 0, None, None)
            occasions = tuple(sorted({occ for _, occ, _ in moved if occ is not None}))
            events = [
                Event(*row)
                for row in self._db.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE id <= ? ORDER BY id", (cut,)
                ).fetchall()
            ]
            origin = self._origin()
            self._write_archive(archive, events, origin)
            self._db.execute("DELETE FROM events WHERE id <= ?", (cut,))
            remaining = self._db.execute("SELECT hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
            self._append(
                occasion=None,
                kind="anchor",
                prev_hash=remaining[0] if remaining else events[-1].hash,
                type="ChainAnchor",
                payload=_canonical(
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
        return PruneResult(occasions, len(events), archive, events[-1].hash)

    def _write_archive(self, archive: Path, events: list[Event], origin: tuple[int, str]) -> None:
        target = Store.open(archive)
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
                        raise StoreError(f"archive {archive} does not continue the chain of {self.path}")
                for event in events:
                    if event.id not in have:
                        db.execute(
                            f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            dataclasses.astuple(event),
                        )
            check = target.verify()
            if not check.ok or check.head != events[-1].hash:
                raise StoreError(f"archive {archive} did not verify after writing: {check}")
        finally:
            target.close()


def _occasion_info(row: Sequence[Any]) -> OccasionInfo:
    return OccasionInfo(
        id=int(row[0]),
        source=str(row[1]),
        started_at=datetime.fromisoformat(row[2]),
        closed_at=datetime.fromisoformat(row[3]) if row[3] else None,
    )


def _store_error(exc: sqlite3.Error, path: Path) -> StoreError:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return StoreError(f"database is locked: {path}")
    if "full" in text:
        return StoreError(f"disk full writing {path}")
    if "malformed" in text:
        return StoreError(f"database is corrupt: {path}")
    if "not a database" in text or "encrypted" in text:
        return StoreError(f"not a bingo-assistant database: {path}")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"database is read-only: {path}")
    if "unable to open" in text:
        return StoreError(f"cannot open database: {path}")
    if "disk i/o" in text:
        return StoreError(f"disk error on {path}")
    return StoreError(f"{str(exc).splitlines()[0]}: {path}")


# ---------------------------------------------------------------- the report, rebuilt from the journal


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


# ---------------------------------------------------------------- a procedure fed through the journal


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
