"""The schema and its migrations: numbered SQL files, a folder per back end, each applied once in a transaction."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from importlib import resources

from .port import Connection
from .records import StoreError

Splitter = Callable[[str], Iterable[str]]


def migrations(dialect: str = "sqlite") -> list[tuple[int, str, str]]:
    """(number, file name, script) of each migration, in order: `migrations/` for SQLite, a subfolder for others."""
    folder = resources.files("assistant").joinpath("migrations")
    if dialect != "sqlite":
        folder = folder.joinpath(dialect)
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def statements(script: str) -> Iterator[str]:
    """The statements of a migration script, one at a time."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip() and not all(not part.strip() or part.strip().startswith("--") for part in buffer.splitlines()):
        raise StoreError(f"migration ends inside a statement: {buffer.strip()[:40]}")


SCHEMA_VERSION = max(number for number, _, _ in migrations())
"""The newest schema this program writes."""
READS_FROM = 1
"""The oldest schema this program reads without migrating: v2 only added the console's users (a v1 record reads as
one with no users), so `verify` and `report` still open a v1 record or archive read-only."""


def prepare(db: Connection, *, readonly: bool, max_bytes: int | None, split: Splitter) -> None:
    """Check the record is ours and not newer than this program; a writer also migrates it to `SCHEMA_VERSION`."""
    version = db.schema_version()
    if version > SCHEMA_VERSION:
        raise StoreError(f"database schema v{version} is newer than this program (v{SCHEMA_VERSION}): {db.where}")
    if readonly:
        if version < READS_FROM:
            raise StoreError(f"database schema v{version} needs migrating; open it writable once: {db.where}")
        return
    db.configure(max_bytes)
    migrate(db, split)
    db.ready()


def migrate(db: Connection, split: Splitter) -> None:
    for number, _name, script in migrations(db.dialect):
        if db.schema_version() >= number:
            continue
        db.begin_migration()
        try:
            if db.schema_version() < number:  # else another process migrated while we waited
                for statement in split(script):
                    db.execute(statement)
                if number == 1 and db.dialect == "sqlite":
                    db.execute("INSERT INTO meta (key, value) VALUES ('role', 'journal')")
                db.set_schema_version(number)
            db.commit()
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(*db.errors):
                    db.rollback()
            raise
