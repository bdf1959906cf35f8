"""The shared back end: several halls' journals on one PostgreSQL server, each hall its own chain.

Every table has a `hall` column; the connection sets `bingo.hall` and reads and writes the views `events`, `meta`
and `users`, which show (and, being simple views, take inserts and deletes for) that hall's rows only. So the store's
SQL is the same as on SQLite, and one hall's writer never sees, locks or numbers another's rows: a write holds the
hall's advisory lock, not the table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .records import StoreError

HALL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SCHEMA_LOCK = 0x42494E47
"""The advisory lock key a migration holds (the chains' locks are two-key, a separate space)."""


class ServerRecord:
    """A `postgresql://` URL split into what libpq takes and the hall; `where` names it without the password."""

    def __init__(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise StoreError(f"not a PostgreSQL URL ({exc}): postgresql://HOST[:PORT]/DATABASE?hall=NAME") from None
        query = parse_qsl(parts.query, keep_blank_values=True)
        halls = [value for key, value in query if key == "hall"]
        if not halls or not halls[0]:
            raise StoreError("a postgresql:// record names its hall: add ?hall=NAME to the URL")
        if not HALL_NAME.fullmatch(halls[0]):
            raise StoreError(
                "a hall name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit: "
                f"{halls[0]!r}"
            )
        self.hall = halls[0]
        rest = [(key, value) for key, value in query if key != "hall"]
        if not any(key == "connect_timeout" for key, _ in rest):
            rest.append(("connect_timeout", "5"))
        self.conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), ""))
        host = parts.hostname or "localhost"
        shown = f"{host}:{port}" if port else host
        self.where = f"postgresql://{shown}{parts.path} hall {self.hall}"


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "a postgresql:// record needs the psycopg driver: pip install 'bingo-assistant[postgresql]'"
        ) from None
    return psycopg


class PostgresConnection:
    dialect = "postgresql"

    def __init__(self, url: str, *, readonly: bool, busy_timeout: float) -> None:
        record = ServerRecord(url)
        psycopg = _driver()
        self.where = record.where
        self.hall: str | None = record.hall
        self.errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._psycopg = psycopg
        try:
            self._db = psycopg.connect(record.conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise self.error(exc) from None
        try:
            self._db.execute("SELECT set_config('bingo.hall', %s, false)", (record.hall,))
            self._db.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(busy_timeout * 1000)}ms",))
            if readonly:
                self._db.execute("SET default_transaction_read_only = on")
        except psycopg.Error as exc:
            self._db.close()
            raise self.error(exc) from None

    def execute(self, sql: str, params: Sequence[object] = ()) -> Any:
        if params:
            return self._db.execute(sql.replace("?", "%s"), tuple(params))
        return self._db.execute(sql)

    def begin_write(self) -> None:
        self._db.execute("BEGIN")
        self._db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_SCHEMA_LOCK, self.hall))

    def begin_migration(self) -> None:
        self._db.execute("BEGIN")
        self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def rollback(self) -> None:
        self._db.execute("ROLLBACK")

    @property
    def in_transaction(self) -> bool:
        status = self._db.info.transaction_status
        return bool(status != self._psycopg.pq.TransactionStatus.IDLE)

    def used_id(self) -> int:
        row = self._db.execute(
            "SELECT last_id FROM hall_sequence WHERE hall = current_setting('bingo.hall')"
        ).fetchone()
        return int(row[0]) if row else 0

    def note_used(self, row_id: int) -> None:
        self._db.execute(
            "INSERT INTO hall_sequence (hall, last_id) VALUES (current_setting('bingo.hall'), %s) "
            "ON CONFLICT (hall) DO UPDATE SET last_id = greatest(hall_sequence.last_id, excluded.last_id)",
            (row_id,),
        )

    def has_table(self, name: str) -> bool:
        # pg_class read with this statement's snapshot: a table another process just created is seen at once
        row = self._db.execute(
            "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relname = %s AND n.nspname = ANY (current_schemas(false))",
            (name,),
        ).fetchone()
        return bool(row[0])

    def schema_version(self) -> int:
        if not self.has_table("bingo_schema"):
            return 0
        row = self._db.execute("SELECT max(version) FROM bingo_schema").fetchone()
        return int(row[0] or 0)

    def set_schema_version(self, version: int) -> None:
        if not self.has_table("bingo_schema"):
            self._db.execute("CREATE TABLE bingo_schema (version INTEGER NOT NULL)")
        self._db.execute("DELETE FROM bingo_schema")
        self._db.execute("INSERT INTO bingo_schema (version) VALUES (%s)", (version,))

    def configure(self, max_bytes: int | None) -> None:
        """Commits wait for the server's WAL flush (the server's own setting decides; we ask for it)."""
        self._db.execute("SET synchronous_commit = on")

    def ready(self) -> None:
        self._db.execute(
            "INSERT INTO hall_meta (hall, key, value) VALUES (current_setting('bingo.hall'), 'role', 'journal') "
            "ON CONFLICT DO NOTHING"
        )

    def error(self, exc: BaseException) -> BaseException:
        psycopg = self._psycopg
        if not isinstance(exc, psycopg.Error):
            return exc
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, psycopg.OperationalError) and self._db_closed():
            return StoreError(f"cannot reach the record server {self.where}: {first}")
        if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.QueryCanceled):
            return StoreError(f"database is locked: {self.where}")
        if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
            return StoreError(f"database is read-only: {self.where}")
        return StoreError(f"{first}: {self.where}")

    def _db_closed(self) -> bool:
        db = getattr(self, "_db", None)
        return db is None or bool(db.closed) or bool(db.broken)

    def close(self) -> None:
        self._db.close()
