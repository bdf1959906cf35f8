"""What the store gives back: typed records, the one-line error, and the figures the E(2) record is held to."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..messages import GameType

GENESIS = "0" * 64
"""The previous hash of the first record ever written."""
CONTACT_THRESHOLD = 600.0
"""E(2)(c): winner contact information is required when the prize is this much or more."""
TAX_DOCUMENT_THRESHOLD = 1200.0
"""IRS Form W-2G is due for bingo winnings of this much or more: the E(2)(d) record expects its reference."""
PRIZE_CAP = 2500.0
"""E(2)(f): aggregate prizes of one occasion."""
USER_ROLES = ("caller", "floor", "inspector")
"""Who may log in to the console: the caller keys balls, claims and the next game; the floor claims and card checks;
the inspector reads records, reports and the chain. (The flashboard is public and needs no user.)"""
_USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class StoreError(Exception):
    """The database cannot be used or written; the message is one line naming the file."""


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


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """UTC ISO 8601; a naive datetime is local time."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
