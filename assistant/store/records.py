"""What the store gives back: typed records, the one-line error, and the figures the E(2) record is held to."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..messages import GameRecord, GameType

GENESIS = "0" * 64
"""The previous hash of the first record ever written."""
CONTACT_THRESHOLD = 600.0
"""E(2)(c): winner contact information is required when the prize is this much or more."""
TAX_DOCUMENT_THRESHOLD = 600.0
"""E(2)(d): a winner paid this much or more has the reference of the hall's tax reporting document for the payment
in the record (a W-2G, or whatever paper the hall keeps for it): the hall's threshold, kept with E(2)(c)'s."""
PRIZE_TOLERANCE = 0.005
"""Half a cent: shares of a prize are compared in dollars and cents."""
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
class OccasionInfo:
    id: int
    source: str
    started_at: datetime
    closed_at: datetime | None


@dataclass(frozen=True)
class PruneResult:
    moved: tuple[OccasionInfo, ...]
    """Occasions moved to the archive (or, before a prune, that it will move)."""
    events: int
    """Journal rows moved."""
    archive: Path | None
    anchor_hash: str | None
    """Hash of the last moved row, kept in the journal's anchor row (None before the prune)."""

    @property
    def occasions(self) -> tuple[int, ...]:
        return tuple(info.id for info in self.moved)

    def listed(self) -> str:
        """The occasions with their dates: "occasion 3 (2019-05-01)", "occasions 3 (2019-05-01) and 4 (2019-05-08)"."""
        named = [f"{info.id} ({info.started_at.astimezone():%Y-%m-%d})" for info in self.moved]
        if len(named) == 1:
            return f"occasion {named[0]}"
        return f"occasions {', '.join(named[:-1])} and {named[-1]}"

    def describe(self) -> str:
        """One line for `prune`."""
        if not self.events:
            return "nothing older to prune"
        return f"moved {self.listed()} to {self.archive} ({self.events} records)"


def dollars(amount: float) -> str:
    return f"${amount:,.2f}"


@dataclass(frozen=True)
class Winner:
    """A winner entered by the operator (E(2)(c), (d)): one per person who won the game, with their share."""

    game: int
    name: str
    contact: str
    prize: float
    """What this winner was paid: the game's prize, or their share of it when the game was split."""
    tax_document: str | None
    recorded_at: datetime
    id: int
    """The journal row of the entry: what a correction names (`winner --corrects ID`)."""
    corrects: int | None = None
    """The entry this one replaces, when it is a correction."""


@dataclass(frozen=True)
class RecordGap:
    """Something the E(2) record of a game still lacks, naming its clause."""

    game: int
    clause: str
    what: str

    def __str__(self) -> str:
        return f"{self.what} ({self.clause})"


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
    def paid(self) -> float:
        """The winners' shares together."""
        return sum(w.prize for w in self.winners)

    @property
    def gaps(self) -> tuple[RecordGap, ...]:
        """What the E(2) record still lacks, each naming its clause."""
        gaps: list[RecordGap] = []

        def gap(clause: str, what: str) -> None:
            gaps.append(RecordGap(self.game, clause, what))

        if self.type is GameType.WINNER_TAKE_ALL and self.cards_sold is None:
            gap("E(2)(a)", "number of cards sold")
        if self.type is GameType.WINNER_TAKE_ALL and self.prize is None:
            gap("E(1)", "prize amount")
        value = max(self.prize or 0.0, self.paid)
        if value >= CONTACT_THRESHOLD:
            if not self.winners:
                gap("E(2)(c)", f"winner contact information for a prize of {dollars(value)}")
            for w in self.winners:
                if not w.contact.strip():
                    gap("E(2)(c)", f"contact information of {w.name}")
        if not self.winners and value >= TAX_DOCUMENT_THRESHOLD:
            gap("E(2)(d)", f"tax document reference for a prize of {dollars(value)}")
        for w in self.winners:
            if w.prize >= TAX_DOCUMENT_THRESHOLD and not w.tax_document:
                gap("E(2)(d)", f"tax document reference of {w.name}'s {dollars(w.prize)}")
        if self.winners and self.prize is not None and abs(self.paid - self.prize) > PRIZE_TOLERANCE:
            gap("E(2)", f"winners' shares add up to {dollars(self.paid)} of the {dollars(self.prize)} prize")
        return tuple(gaps)

    @property
    def missing(self) -> tuple[str, ...]:
        """The gaps as the reports print them: "what (clause)"."""
        return tuple(str(g) for g in self.gaps)


def winner_take_all_records(
    games: Sequence[GameRecord], winners: Sequence[Winner], started_at: datetime | None = None
) -> list[WinnerTakeAllRecord]:
    """The E(2) record of every winner-take-all game, and of any other game with a winner entered (an older record's:
    the store takes winners of winner-take-all games only). `started_at`: when the occasion began, if known."""
    records = []
    for game in games:
        game_winners = tuple(w for w in winners if w.game == game.number)
        if game.plan.type is not GameType.WINNER_TAKE_ALL and not game_winners:
            continue
        records.append(
            WinnerTakeAllRecord(
                game=game.number,
                type=game.plan.type,
                cards_sold=game.plan.cards_sold,
                conducted_at=started_at + timedelta(seconds=game.start) if started_at is not None else None,
                prize=game.plan.prize,
                winners=game_winners,
            )
        )
    return records


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
