"""What the checks hold while an occasion is followed, as one explicit state (`ConductState`, with the game's
`GameState`): the input in hand, a call said once, a mis-call, the announcements, a claim, the windows open."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..board import Board
from ..messages import (
    Ball,
    BoardKey,
    ClaimRecord,
    Doubt,
    GamePlan,
    GameRecord,
    Meaning,
    OccasionRecord,
    OutageRecord,
    Role,
    Utterance,
)


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


@dataclass(eq=False)
class GameState:
    """What the checks hold of the game being followed; a game opened starts from a fresh one."""

    record: GameRecord | None = None
    """The game's record (calls, claims, findings): None before the first game and once a game closes."""
    plan_doubts: tuple[Doubt, ...] = ()
    """Hearings where a game before this one may have ended unheard: the plan may be another game's."""
    pending: Pending | None = None
    """A(3): the call in hand, said once, owed its second saying."""
    unrepeated: list[Ball] = field(default_factory=list)
    """A(3): balls found said once; a late second saying of one is no new call."""
    correction: Correction | None = None
    """A(5): a mis-call noticed or announced, waiting for its correct call."""
    announced: Announced = field(default_factory=Announced)
    """A(1), D, E(1): what the caller announced."""
    claim: Claim | None = None
    """B(1)-B(8): the claim being verified."""
    asked_other: bool = False
    """B(9): "are there any other bingos?" was asked."""
    won: bool = False
    """B(4): a valid bingo ended the game."""
    won_at: float = 0.0
    """When it was declared valid: B(9)'s words are owed from then."""
    held_next: bool = False
    """B(5): an invalid claim was ruled: the held ball is the next call."""
    held_hearing: Hearing | None = None
    """The hearing that named the held ball, when it was the call a bingo cut off (B(5))."""
    dropped_claim: Hearing | None = None
    """A bingo heard unsure that the game went on past, or a player's or the floor's words heard unsure while
    balls were called (perhaps a bingo the recognizer could not make out: `heard_aside`), until a new ball is
    said twice, both sayings sure: till then every finding rests on it too. Calls of balls already called may
    have been the caller confirming its winning numbers (C), not balls called again (A(6)); calls of balls not
    called, each said once, may have been the caller reading a cover-all's uncalled numbers (B(8)), not calls
    said once (A(3)) or mis-calls (A(5))."""
    unmatched_key: BoardKey | None = None
    """A(4), A(5): a ball keyed on the master board before it was called."""
    prize_counted: bool = False
    """E(2)(f): the game's prize counts toward the occasion's cap."""
    not_called_heard: list[Ball] = field(default_factory=list)
    """B(8): winning numbers just heard, heard sure, that were not called: one prompt names them."""
    dues: dict[str, Due] = field(default_factory=dict)
    """The windows open (a repeat, an answer owed), by kind: each speaks when it closes."""


@dataclass(eq=False)
class ConductState:
    """Everything the checks read and write while an occasion is followed, in one place. The `transitions` machine
    keeps its state in `phase` (a state of the rule pack)."""

    occasion: OccasionRecord = field(default_factory=OccasionRecord)
    board: Board = field(default_factory=Board)
    game: GameState = field(default_factory=GameState)
    now: Now = field(default_factory=Now)
    """The input in hand."""
    phase: str = "idle"
    """The machine's state; the machine sets it."""
    phase_unsure: bool = False
    """The machine is in its state by a hearing heard unsure (a "bingo" heard unsure), while it is there."""
    phase_hearing: Hearing | None = None
    """That hearing."""
    outage: OutageRecord | None = None
    """F: the power outage in progress."""
    outage_flagged: bool = False
    """F: the outage's manual draw without approval was found (once per outage)."""
    hearings: list[Hearing] = field(default_factory=list)
    """Every hearing of the game so far, sure or not: where owed words may hide, and where that stops."""
    closed_at: float | None = None
    """When the last game closed: a game opened later began no earlier than that."""
