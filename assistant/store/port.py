"""The store's one port: a SQL connection to a hall's journal, which SQLite and PostgreSQL each implement.

The store's SQL is written once, with `?` placeholders, against the tables and views both back ends present for one
hall: `events`, `meta`, `users` and the typed views. What differs (locking a hall's chain for a write, the highest id
ever used, the schema's version, how a driver's error reads) is here, behind small methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

RecordLocation = Path | str
"""Where a record lives: a SQLite file, or a `postgresql://` URL naming the hall (`?hall=NAME`)."""
SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server(location: RecordLocation) -> bool:
    """True when the record is on a PostgreSQL server rather than in a file."""
    return isinstance(location, str) and location.startswith(SERVER_SCHEMES)


def record_exists(location: RecordLocation) -> bool:
    """Whether there is a record to read: a file that exists; a server record is asked when opened."""
    return is_server(location) or Path(location).exists()


def record_location(text: str) -> RecordLocation:
    """`--db`'s value: a `postgresql://` URL kept as it is, anything else a file path."""
    return text if text.startswith(SERVER_SCHEMES) else Path(text)


class Rows(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """One hall's journal on one back end."""

    dialect: str
    """'sqlite' or 'postgresql': which folder of migrations the schema is made from."""
    where: str
    """The record named for a message: the file, or the server and hall (never a password)."""
    hall: str | None
    """The hall every occasion of this record belongs to (a server record); None for a file."""
    errors: tuple[type[BaseException], ...]
    """The driver's exceptions, which `error` turns into one line."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows: ...

    def begin_write(self) -> None:
        """Begin a transaction that holds this hall's chain: no other writer appends until commit or rollback."""

    def begin_migration(self) -> None:
        """Begin a transaction that holds the schema: one process migrates, the others wait and find it done."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    @property
    def in_transaction(self) -> bool: ...

    def used_id(self) -> int:
        """The highest journal id ever written for this hall (rows cut off the end are still counted)."""

    def note_used(self, row_id: int) -> None:
        """Count `row_id` as used (inside the write transaction)."""

    def has_table(self, name: str) -> bool: ...

    def schema_version(self) -> int:
        """The schema's version, after checking the record is ours (a StoreError otherwise)."""

    def set_schema_version(self, version: int) -> None: ...

    def configure(self, max_bytes: int | None) -> None:
        """Durability settings for a writer (and a size quota where the back end has one)."""

    def ready(self) -> None:
        """After migrating: what this hall needs in the shared schema (a server record's meta row)."""

    def error(self, exc: BaseException) -> BaseException:
        """The one-line StoreError for a driver's exception."""

    def close(self) -> None: ...
