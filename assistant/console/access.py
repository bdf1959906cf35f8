"""Who may use the console: logins against the record's users, signed sessions, CSRF and replay checks on every
action, rate-limited logins, and what each role may do. Every login, refused login and action goes to the journal.

The web app (app.py) reads cookies and headers; this module decides on plain values, so it holds no HTTP.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from itsdangerous import BadSignature, URLSafeTimedSerializer

from ..store import USER_ROLES, RecordLocation, Store, StoreError, User, record_exists

ACTIONS = ("board", "game", "claim", "winner")
"""The console's actions: key a ball, start the next game, rule on a claim, enter a winner."""
MAY_DO: dict[str, frozenset[str]] = {
    "caller": frozenset({"board", "game", "claim", "winner"}),
    "floor": frozenset({"claim", "winner"}),
    "inspector": frozenset(),
}
"""The caller keys balls, rules on claims, starts the next game and enters a winner; the floor rules on claims (the
card it checked) and takes the winner's details; the inspector only reads."""
MAY_READ: dict[str, frozenset[str]] = {
    "caller": frozenset({"console"}),
    "floor": frozenset({"console"}),
    "inspector": frozenset({"console", "records"}),
}
"""What each role may see: the master board (read-only for the inspector), and the records (report, chain, access)."""
OPEN = "open"
"""The role of everyone on a console with no users, on loopback only: everything, with no login."""
SESSION_SECONDS = 12 * 3600.0
"""A login lasts this long (an occasion and more); then the page goes back to the login."""
LOGIN_FAILURES = 5
LOGIN_WINDOW = 60.0
"""More than LOGIN_FAILURES refused logins within LOGIN_WINDOW seconds, from one address or for one name, and logins
from there or for it wait until the window has passed."""
ACTION_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")

Journal = Callable[[str, dict[str, object]], None]
"""Writes one access record (`what`, its detail) to the occasion's journal."""


class UserBook(Protocol):
    """Where the console finds its users."""

    def find(self, name: str) -> User | None: ...

    def any(self) -> bool: ...


class RecordUsers:
    """The users of a record (`users` table), read afresh at each request: `users add/remove` apply at once."""

    def __init__(self, db: RecordLocation | None) -> None:
        self.db = db

    def _all(self) -> list[User]:
        if self.db is None or not record_exists(self.db):
            return []
        with Store.open(self.db, readonly=True) as store:
            return store.users()

    def find(self, name: str) -> User | None:
        if self.db is None or not record_exists(self.db):
            return None
        with Store.open(self.db, readonly=True) as store:
            return store.user(name)

    def any(self) -> bool:
        return bool(self._all())


def users_in(db: RecordLocation | None) -> int:
    """How many console users a record holds (none without one)."""
    try:
        return len(RecordUsers(db)._all())
    except StoreError:
        return 0


_HASHER = PasswordHasher()


def hash_password(password: str) -> str:
    """The argon2id hash kept for a password (argon2-cffi's defaults)."""
    return _HASHER.hash(password)


def password_matches(password_hash: str, password: str) -> bool:
    try:
        return _HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


_NOBODY_HASH = hash_password(secrets.token_hex(16))
"""Checked against for an unknown name, so a refused login takes as long whether or not the name exists."""


@dataclass(frozen=True)
class Operator:
    """Who is at the page: a logged-in user, or anyone on an open console (`user` None, role OPEN)."""

    user: str | None
    role: str
    sid: str = ""
    csrf: str = ""
    expires: float = 0.0
    """Wall-clock time (time.time) the session ends; 0 on an open console."""

    def may(self, action: str) -> bool:
        return self.role == OPEN or action in MAY_DO.get(self.role, frozenset())

    def reads(self, part: str) -> bool:
        return self.role == OPEN or part in MAY_READ.get(self.role, frozenset())

    def who(self) -> dict[str, object]:
        return {"user": self.user, "role": self.role}

    def to_json(self) -> dict[str, object]:
        may = list(ACTIONS) if self.role == OPEN else sorted(MAY_DO.get(self.role, frozenset()))
        reads = ["console", "records"] if self.role == OPEN else sorted(MAY_READ.get(self.role, frozenset()))
        return {**self.who(), "open": self.role == OPEN, "csrf": self.csrf, "may": may, "reads": reads}


class Refused(Exception):
    """A login or action the console refuses: the HTTP status and one line for the page (and the journal)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class LoginLimit:
    """Refused logins counted per address and per name within a sliding window."""

    def __init__(
        self, failures: int = LOGIN_FAILURES, window: float = LOGIN_WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.failures = failures
        self.window = window
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait(self, keys: Iterable[str]) -> float:
        """Seconds before a login from these keys may be tried again (0: now)."""
        now = self.clock()
        with self._lock:
            waits = [0.0]
            for key in keys:
                times = self._seen.get(key)
                while times and times[0] <= now - self.window:
                    times.popleft()
                if times is not None and len(times) >= self.failures:
                    waits.append(times[0] + self.window - now)
            return max(waits)

    def failed(self, keys: Iterable[str]) -> None:
        now = self.clock()
        with self._lock:
            for key in keys:
                self._seen.setdefault(key, deque()).append(now)


class Access:
    """The console's gate: who is logged in, what they may do, and the journal of every login and action.

    With no users and `open_allowed` (loopback), the console is open: everyone is an OPEN
    operator and needs no login. Beyond loopback the console is never open, even if every user is removed.
    """

    def __init__(
        self,
        users: UserBook,
        journal: Journal | None = None,
        *,
        open_allowed: bool = True,
        session_seconds: float = SESSION_SECONDS,
        limit: LoginLimit | None = None,
        secret: bytes | None = None,
        records: RecordLocation | None = None,
        occasion: int | None = None,
    ) -> None:
        if session_seconds <= 0:
            raise ValueError(f"a session must last some time, not {session_seconds} s")
        self.users = users
        self.journal = journal
        self.open_allowed = open_allowed
        self.session_seconds = session_seconds
        self.limit = limit or LoginLimit()
        # a new secret each run: restarting the console logs everyone out
        self._signer = URLSafeTimedSerializer(secret or secrets.token_bytes(32), salt="bingo-console-session")
        self.records = records
        """The record the inspector reads (report, chain), when there is one."""
        self.occasion = occasion
        self._ended: set[str] = set()
        self._used: set[str] = set()
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        return self.open_allowed and not self.users.any()

    def record(self, what: str, detail: dict[str, object]) -> None:
        if self.journal is not None:
            self.journal(what, detail)

    # ----- logging in and out

    def login(self, name: str, password: str, address: str) -> tuple[Operator, str]:
        """A user's name and password checked: the operator and the signed session token; refused in one line."""
        name = name.strip()[:64]
        keys = (f"address:{address}", f"name:{name.lower()}")
        wait = self.limit.wait(keys)
        if wait > 0:
            reason = f"too many refused logins: try again in {int(wait) + 1} s"
            self.record("LoginRefused", {"user": name, "address": address, "reason": reason})
            raise Refused(429, reason)
        user = self.users.find(name) if name else None
        matches = password_matches(user.password_hash if user else _NOBODY_HASH, password)
        if user is None or not matches or user.role not in USER_ROLES:
            self.limit.failed(keys)
            reason = "unknown user" if user is None else "wrong password"
            self.record("LoginRefused", {"user": name, "address": address, "reason": reason})
            raise Refused(401, "wrong name or password")
        operator = Operator(
            user=user.name,
            role=user.role,
            sid=secrets.token_urlsafe(12),
            csrf=secrets.token_urlsafe(24),
            expires=time.time() + self.session_seconds,
        )
        token = self._signer.dumps({"u": operator.user, "r": operator.role, "s": operator.sid, "c": operator.csrf})
        self.record("Login", {**operator.who(), "address": address, "session": operator.sid})
        return operator, token

    def logout(self, operator: Operator, address: str) -> None:
        with self._lock:
            self._ended.add(operator.sid)
        self.record("Logout", {**operator.who(), "address": address, "session": operator.sid})

    # ----- each request

    def session(self, token: str | None) -> Operator:
        """The operator a session token names; Refused(401) when there is none, it expired, was forged or ended."""
        if self.is_open():
            return Operator(user=None, role=OPEN)
        if not token:
            raise Refused(401, "log in first")
        try:
            data, signed = self._signer.loads(token, return_timestamp=True)
        except BadSignature:
            raise Refused(401, "the session is not one this console signed: log in again") from None
        expires = signed.timestamp() + self.session_seconds  # signed: whole seconds, when the login was taken
        if time.time() > expires:
            raise Refused(401, "the session has expired: log in again")
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("u", "r", "s", "c")):
            raise Refused(401, "the session is not one this console signed: log in again")
        with self._lock:
            if data["s"] in self._ended:
                raise Refused(401, "the session was logged out: log in again")
        user = self.users.find(data["u"])
        if user is None or user.role != data["r"]:
            raise Refused(401, f"user {data['u']} was removed or changed: log in again")
        return Operator(data["u"], data["r"], data["s"], data["c"], expires)

    def action(
        self, token: str | None, csrf: str | None, action_id: str | None, same_origin: bool, action: str, address: str
    ) -> Operator:
        """The operator allowed to take `action` with this request; every refusal is journaled with its reason."""
        where: dict[str, object] = {"action": action, "address": address}
        try:
            operator = self.session(token)
        except Refused as refused:
            self.record("ActionRefused", {"user": None, "role": None, **where, "reason": refused.reason})
            raise
        try:
            if not same_origin:
                raise Refused(403, "forged action: sent from another site")
            if operator.role != OPEN and not (csrf and hmac.compare_digest(csrf, operator.csrf)):
                raise Refused(403, "forged action: the page's token is missing or wrong")
            if not operator.may(action):
                raise Refused(403, f"a {operator.role} may not do that ({action})")
            if operator.role == OPEN:
                return operator  # loopback with no users: open to everyone
            if action_id is None or not ACTION_ID.fullmatch(action_id):
                raise Refused(400, "the action carries no action id")
            with self._lock:
                if action_id in self._used:
                    raise Refused(409, "replayed action: this action was already taken")
                self._used.add(action_id)
        except Refused as refused:
            self.record("ActionRefused", {**operator.who(), **where, "id": action_id, "reason": refused.reason})
            raise
        return operator


__all__ = [
    "ACTIONS",
    "MAY_DO",
    "MAY_READ",
    "OPEN",
    "Access",
    "LoginLimit",
    "Operator",
    "RecordUsers",
    "Refused",
    "UserBook",
    "hash_password",
    "password_matches",
    "users_in",
]
