"""The console's users and who did what: the `users` table, and journal rows of kind 'access' in the chain."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from .codec import canonical, plain
from .records import AccessRecord, StoreError, User, check_user, iso, now

if TYPE_CHECKING:
    from . import Store


def add_user(store: Store, name: str, role: str, password_hash: str) -> None:
    """Add a console user (the password already hashed); the journal records who was added, with which role."""
    check_user(name, role)
    with store._transaction() as db:
        if db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
            raise StoreError(f"user {name} already exists in {store.path}")
        moment = now()
        db.execute(
            "INSERT INTO users (name, role, password_hash, added_at) VALUES (?, ?, ?, ?)",
            (name, role, password_hash, iso(moment)),
        )
        payload = canonical({"user": name, "role": role})
        store._append(occasion=None, kind="access", type="UserAdded", payload=payload, recorded_at=moment)


def remove_user(store: Store, name: str) -> None:
    """Remove a console user: their sessions stop working at their next request; the journal records it."""
    with store._transaction() as db:
        row = db.execute("SELECT role FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise StoreError(f"no user {name} in {store.path}")
        db.execute("DELETE FROM users WHERE name = ?", (name,))
        payload = canonical({"user": name, "role": row[0]})
        store._append(occasion=None, kind="access", type="UserRemoved", payload=payload)


def record_access(store: Store, occasion: int | None, what: str, detail: dict[str, object]) -> None:
    """Journal a login, a refused login or a console action, with who did it, in the occasion's chain."""
    with store._transaction():
        if occasion is not None:
            store._require_occasion(occasion, open_=False)
        store._append(occasion=occasion, kind="access", type=what, payload=canonical(plain(detail)))


def users(store: Store) -> list[User]:
    """The console's users by name (none in a record older than v2)."""
    if not store._has_users():
        return []
    rows = store._read("SELECT name, role, password_hash, added_at FROM users ORDER BY name")
    return [User(row[0], row[1], row[2], datetime.fromisoformat(row[3])) for row in rows]


def user(store: Store, name: str) -> User | None:
    if not store._has_users():
        return None
    rows = store._read("SELECT name, role, password_hash, added_at FROM users WHERE name = ?", (name,))
    return User(rows[0][0], rows[0][1], rows[0][2], datetime.fromisoformat(rows[0][3])) if rows else None


def access_log(store: Store, occasion: int | None = None) -> list[AccessRecord]:
    """Users added and removed, logins, refused logins and actions, in the order recorded (of one occasion)."""
    sql = "SELECT id, occasion, type, payload, recorded_at FROM events WHERE kind = 'access'"
    rows = store._read(
        sql + " AND occasion = ? ORDER BY id" if occasion is not None else sql + " ORDER BY id",
        (occasion,) if occasion is not None else (),
    )
    return [AccessRecord(row[0], row[1], row[2], json.loads(row[3]), datetime.fromisoformat(row[4])) for row in rows]
