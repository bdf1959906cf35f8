"""The embedded back end: one SQLite file per hall (WAL, synchronous=FULL), its header telling ours from other files."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from .records import StoreError

APPLICATION_ID = 0x42494E47
"""PRAGMA application_id of our databases ("BING"): tells ours from any other SQLite file."""


class SqliteConnection:
    dialect = "sqlite"
    hall: str | None = None
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path, *, readonly: bool, busy_timeout: float) -> None:
        self.path = path
        self.where = str(path)
        if readonly and not path.exists():
            raise StoreError(f"no such database: {path}")
        if not readonly and not path.parent.is_dir():
            raise StoreError(f"no such directory for the database: {path.parent}")
        if path.is_dir():
            raise StoreError(f"is a directory, not a database: {path}")
        try:
            if readonly:
                self._db = sqlite3.connect(readonly_uri(path), uri=True, timeout=busy_timeout, isolation_level=None)
            else:
                self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise sqlite_error(exc, path) from None

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    def begin_write(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def begin_migration(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def rollback(self) -> None:
        self._db.execute("ROLLBACK")

    @property
    def in_transaction(self) -> bool:
        return self._db.in_transaction

    def used_id(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(row[0]) if row else 0

    def note_used(self, row_id: int) -> None:
        """AUTOINCREMENT's sqlite_sequence counts it already."""

    def has_table(self, name: str) -> bool:
        found = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return bool(found.fetchall())

    def schema_version(self) -> int:
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]  # reads the header: garbage fails here
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        has_tables = self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        if app_id != APPLICATION_ID and (app_id != 0 or has_tables or version != 0):
            raise StoreError(f"not a bingo-assistant database: {self.path}")
        return version

    def set_schema_version(self, version: int) -> None:
        self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        self._db.execute(f"PRAGMA user_version={int(version)}")

    def configure(self, max_bytes: int | None) -> None:
        if self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
            raise StoreError(f"cannot switch the database to WAL mode: {self.path}")
        self._db.execute("PRAGMA synchronous=FULL")
        if max_bytes is not None:
            page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
            self._db.execute(f"PRAGMA max_page_count={max(1, max_bytes // page_size)}")

    def ready(self) -> None:
        """The file is the hall's own: the v1 migration wrote its meta row."""

    def error(self, exc: BaseException) -> BaseException:
        return sqlite_error(exc, self.path) if isinstance(exc, sqlite3.Error) else exc

    def close(self) -> None:
        self._db.close()


def readonly_uri(path: Path) -> str:
    """The URI that opens the record to read only, writing nothing beside it.

    A record no writer has open (no -wal or -journal beside it: the last writer closed it, its rows all in the file)
    is opened immutable: SQLite then makes no -wal/-shm (a WAL database read mode=ro leaves both behind), takes no
    lock, and opens in a read-only folder or on read-only media too. A record with a -wal (a writer has it open, or
    one was killed before closing) is opened mode=ro, so the rows in its WAL are read (that needs its -shm, which
    is there beside the -wal). A writer that opens the record in the moment it is read immutable is the one case
    this does not cover (its checkpoint may change the file under the read): read it again once that writer closed.
    """
    resolved = path.resolve()
    written = any(resolved.with_name(resolved.name + end).exists() for end in ("-wal", "-journal"))
    return f"file:{quote(str(resolved))}?mode=ro" + ("" if written else "&immutable=1")


def sqlite_error(exc: sqlite3.Error, path: Path) -> StoreError:
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
