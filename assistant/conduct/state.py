"""What the checks hold while a game is followed: the input in hand, a call said once, a mis-call, a claim."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..messages import Ball, BoardKey, ClaimRecord, Doubt, GamePlan, Meaning, Role, Utterance


@dataclass
class Now:
    """The input being handled: what the checks read."""

    time: float = 0.0
    utterance: Utterance | None = None
    meaning: Meaning | None = None
    plan: GamePlan | None = None
    plan_doubts: tuple[Doubt, ...] = ()
    """What makes the plan's game unsure (`GameStart.doubts`)."""
    key: BoardKey | None = None
    ending: bool = False
    """The recording or live session ends: a call still inside its repeat window is not held against it."""
    unsure: bool = False
    """The utterance was heard unsure (flagged by the recognizer or below the confidence floor)."""

    @property
    def heard(self) -> str:
        if self.utterance is None:
            return ""
        if len(self.utterance.meanings) > 1 and self.meaning is not None:
            return self.meaning.words
        return self.utterance.text


@dataclass(frozen=True)
class Hearing:
    """Something heard, by whom, whether sure, and whether the grammar placed all of it: owed words may hide in an
    unsure hearing, and in words the grammar could not place ("that's well over half the room, the players
    approve")."""

    time: float
    role: Role
    text: str
    unsure: bool = True
    unplaced: bool = False
    """Words of it the grammar could not place, or nothing of it understood (`Utterance.unknown`, no meaning)."""


@dataclass
class Pending:
    """A call said once, waiting for its second saying (A(3))."""

    ball: Ball
    time: float
    heard: str
    unsure: bool
    prompted: bool = False
    could_be: tuple[Ball, ...] = ()
    """Other balls its hearing left room for (`Utterance.could_be`)."""


@dataclass
class Correction:
    """A(5): a mis-call noticed (a repeat that differs) or announced (the error sentence)."""

    time: float
    heard: str
    unsure: bool
    wrong: Ball | None
    sentence: bool = False
    """The error sentence (or a paraphrase of it) was said: the next call is the correct number."""
    exact: bool = False
    """The exact words of A(5)(b) were said."""
    second: Ball | None = None
    """The differing second saying that raised the doubt."""
    first: Pending | None = None
    """The call in hand whose second saying differed."""
    noball: tuple[str, int] | None = None
    """The letter and number of a call that names no ball ("B thirty two"): the mis-call itself."""
    pieces: list[str] = field(default_factory=list)
    """The words of the sentence as heard, piece by piece: said with pauses, it is cut into several hearings."""


@dataclass
class Announced:
    last_ball_status: bool | None = None
    ball_count: int | None = None
    cards_sold: int | None = None
    prize: float | None = None
    last_ball: bool = False


@dataclass
class Claim:
    record: ClaimRecord
    in_play: list[Ball]
    """B(2): only the balls called before the bingo are in play."""
    caller_read: bool = False
    uncalled_read: list[Ball] = field(default_factory=list)
    interrupted: Ball | None = None
    """The call the bingo cut off before its second saying: saying it now is no reading (C)."""
    interrupted_hearing: Hearing | None = None
    """How that call was heard: if the claim proves invalid it is the held ball (B(5)), and rests on this."""
    cut_off: Pending | None = None
    """That call in hand, kept while the bingo is unsure: if the game goes on, it is owed its second saying."""
    not_called_unsure: bool = False
    """A winning number missing from the board was heard unsure: it may be a called ball misheard (B(8))."""
    not_called_doubts: list[Doubt] = field(default_factory=list)
    """Calls on the board heard unsure, each of which may have been a winning number missing from it (B(8))."""
    also: list[SideClaim] = field(default_factory=list)
    """Other claims signalled while this one is verified: each is its own claim, with its own card (B(7))."""
    reading: ClaimRecord | None = None
    """The claim whose card the floor read last: the winning numbers announced next are its."""

    def records(self) -> list[ClaimRecord]:
        return [self.record, *(c.record for c in self.also)]


@dataclass
class SideClaim:
    """A claim signalled beside another, and how its bingo was heard."""

    record: ClaimRecord
    hearing: Hearing
    after: float
    """Seconds since the bingo before it: a moment apart, it may be one player's bingo said twice."""


@dataclass
class Due:
    kind: str
    deadline: float
