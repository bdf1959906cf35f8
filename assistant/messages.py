"""Typed messages that travel between the ports: audio, recognizer, procedure, speaker, store."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

LETTERS = "BINGO"
"""The five columns of the master board, in order; each holds 15 consecutive balls."""


class Role(StrEnum):
    """Who spoke (or keyed) an input: from the microphone/channel or the script."""

    CALLER = "caller"
    FLOOR = "floor"
    PLAYER = "player"
    BOARD = "board"


class Severity(StrEnum):
    """How a finding weighs: a breach of the rule, a caution, or not sure what was heard."""

    VIOLATION = "violation"
    WARNING = "warning"
    UNCERTAIN = "uncertain"


class Outcome(StrEnum):
    """The four outcomes of a procedure step, as in clinical checklist systems."""

    OK = "ok"
    PROMPT = "prompt"
    VIOLATION = "violation"
    UNCERTAIN = "uncertain"


class GameType(StrEnum):
    """Game types of the hall's program."""

    REGULAR = "regular"
    LIMITED = "limited"
    WINNER_TAKE_ALL = "winner-take-all"
    COVER_ALL = "cover-all"


@dataclass(frozen=True, order=True)
class Ball:
    """One ball of the 75: the letter follows from the number."""

    number: int

    def __post_init__(self) -> None:
        if not 1 <= self.number <= 75:
            raise ValueError(f"ball number out of range 1-75: {self.number}")

    @property
    def letter(self) -> str:
        return LETTERS[(self.number - 1) // 15]

    @classmethod
    def parse(cls, text: str) -> Ball:
        """Parse the short form 'B7' / 'b-7' / 'B 7'; the letter must match the number."""
        cleaned = text.strip().upper().replace("-", "").replace(" ", "")
        if len(cleaned) < 2 or cleaned[0] not in LETTERS or not cleaned[1:].isdigit():
            raise ValueError(f"not a ball: {text!r} (expected like B7 or O75)")
        ball = cls(int(cleaned[1:]))
        if ball.letter != cleaned[0]:
            raise ValueError(f"{text!r}: {ball.number} is under {ball.letter}, not {cleaned[0]}")
        return ball

    def __str__(self) -> str:
        return f"{self.letter}{self.number}"


@dataclass(frozen=True)
class GamePlan:
    """A game as the hall's program states it (`@game` line of the transcript script)."""

    type: GameType = GameType.REGULAR
    balls: int | None = None
    """Ball count of a limited game (D)."""
    cards_sold: int | None = None
    """Cards sold of a winner-take-all game (E(1), E(2)(a))."""
    prize: float | None = None
    """Prize in dollars (E(1), E(2)(f))."""
    last_ball_required: bool | None = None
    """Whether last ball called is required (A(1)); None when the program does not say."""
    pattern: str | None = None
    """The winning pattern as the program names it (free text, shown on the board)."""


@dataclass(frozen=True)
class Meaning:
    """One thing an utterance says, as the grammar understands it.

    `intent` is a name from grammars/bingo.yaml ("call", "error-correction", "bingo", ...).
    """

    intent: str
    ball: Ball | None = None
    number: int | None = None
    """A count (balls, cards) or a dollar amount, when the intent carries one."""
    manufacturer: str | None = None
    serial: str | None = None
    letter: str | None = None
    """A column letter, when the intent names one ("read the G balls")."""
    words: str = ""
    """The normalized words this meaning was read from."""


@dataclass(frozen=True)
class Utterance:
    """One stretch of speech from one role, with what the recognizer heard."""

    start: float
    end: float
    role: Role
    text: str
    confidence: float = 1.0
    """0..1; 1.0 for typed transcripts."""
    uncertain: bool = False
    """The recognizer was not sure (low confidence, out-of-grammar): never a violation on its own."""
    meanings: tuple[Meaning, ...] = ()
    unknown: tuple[str, ...] = ()
    """Words the grammar could not place."""
    could_be: tuple[Ball, ...] = ()
    """A hearing of one call: the other balls it left room for (the recognizer's sound-alikes; `(or N31)` in a
    script). A number missing from the board may have been such a call, misheard (B(8))."""


@dataclass(frozen=True)
class BoardKey:
    """A ball keyed on the master board console (`TIME board: B7`)."""

    time: float
    ball: Ball


@dataclass(frozen=True)
class GameStart:
    """The next game of the occasion begins, with its plan."""

    time: float
    plan: GamePlan
    doubts: tuple[Doubt, ...] = ()
    """Hearings that make this game's place in the program unsure: unsure speech of the caller since the game
    before it began, where that game may have ended and another begun unheard (then the plan is another
    game's). Findings that rest on the plan are uncertain while there are any (`plan: true` in the rule pack)."""


@dataclass(frozen=True)
class Tick:
    """Time passes with nothing said: lets windows expire."""

    time: float


@dataclass(frozen=True)
class SessionEnd:
    """The recording or the live session ended."""

    time: float


Input = Utterance | BoardKey | GameStart | Tick | SessionEnd
"""Everything the procedure engine consumes."""


def time_of(item: Input) -> float:
    """When an input happened: an utterance at its start."""
    return item.start if isinstance(item, Utterance) else item.time


def end_of(item: Input) -> float:
    """When an input was over: an utterance at its end."""
    return item.end if isinstance(item, Utterance) else item.time


@dataclass(frozen=True)
class Doubt:
    """A hearing that keeps a finding from being a violation: one it rests on, heard unsure, or unsure speech of
    whoever owed the words it misses, where they were owed."""

    time: float
    role: Role
    heard: str
    why: str

    def to_json(self) -> dict[str, object]:
        return {"time": round(self.time, 2), "role": self.role.value, "heard": self.heard, "why": self.why}


@dataclass(frozen=True)
class Finding:
    """A deviation from the rule (or an unsure hearing), citing its clause as written in the rule."""

    clause: str
    code: str
    severity: Severity
    time: float
    heard: str
    message: str
    game: int | None = None
    doubts: tuple[Doubt, ...] = ()
    """Why it is uncertain: the unsure hearings it rests on or that may hold the words it misses."""

    def to_json(self) -> dict[str, object]:
        return {
            "clause": self.clause,
            "code": self.code,
            "severity": self.severity.value,
            "time": round(self.time, 2),
            "heard": self.heard,
            "message": self.message,
            "doubts": [d.to_json() for d in self.doubts],
        }


@dataclass(frozen=True)
class Prompt:
    """What the assistant tells the caller, by voice."""

    time: float
    text: str
    kind: str
    """A stable name ("repeat-call", "ask-other-bingos", ...) so kinds can be turned off."""
    priority: int = 1
    """Higher interrupts lower: 3 violation, 2 due step, 1 reminder, 0 answer/info."""
    clause: str | None = None


@dataclass(frozen=True)
class CallMade:
    """A ball entered play (said and, by the rule, to be repeated)."""

    game: int
    ball: Ball
    time: float
    heard: str


@dataclass(frozen=True)
class CallWithdrawn:
    """A mis-called ball left the board after the A(5) correction."""

    game: int
    ball: Ball
    time: float


@dataclass(frozen=True)
class GameOpened:
    game: int
    plan: GamePlan
    time: float


@dataclass(frozen=True)
class GameClosed:
    game: int
    status: str
    time: float


@dataclass(frozen=True)
class ClaimOpened:
    game: int
    time: float
    held_ball: Ball | None


@dataclass(frozen=True)
class ClaimResolved:
    game: int
    time: float
    valid: bool
    manufacturer: str | None
    serial: str | None
    winning: tuple[Ball, ...]
    not_called: tuple[Ball, ...]


@dataclass(frozen=True)
class HeardForReview:
    """Speech the procedure could not place, kept for a person to judge: words outside the grammar, nothing
    understood, or a call naming no ball that no step took. Never dropped, never a finding on its own."""

    game: int | None
    time: float
    role: Role
    heard: str
    reason: str
    unsure: bool = False
    """The recognizer was not sure of these words either."""

    def to_json(self) -> dict[str, object]:
        return {
            "time": round(self.time, 2),
            "role": self.role.value,
            "heard": self.heard,
            "reason": self.reason,
            "unsure": self.unsure,
        }


@dataclass(frozen=True)
class StepChanged:
    """The procedure moved to a new step; `expects` are the intents the recognizer should listen for."""

    time: float
    step: str
    expects: tuple[str, ...]


Output = (
    Finding
    | Prompt
    | CallMade
    | CallWithdrawn
    | GameOpened
    | GameClosed
    | ClaimOpened
    | ClaimResolved
    | StepChanged
    | HeardForReview
)
"""Everything the procedure engine emits."""


@dataclass
class CallRecord:
    ball: Ball
    time: float
    withdrawn: bool = False
    keyed: bool = False
    """The master board console showed this ball too (A(4) confirmed)."""
    sure: bool = True
    """Some hearing of this call was sure: a later call of the ball can be held against it (A(6))."""
    could_be: list[Ball] = field(default_factory=list)
    """Other balls its hearings left room for (`Utterance.could_be`)."""


@dataclass
class ClaimRecord:
    time: float
    held_ball: Ball | None
    manufacturer: str | None = None
    serial: str | None = None
    winning: list[Ball] = field(default_factory=list)
    not_called: list[Ball] = field(default_factory=list)
    valid: bool | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "time": round(self.time, 2),
            "held_ball": str(self.held_ball) if self.held_ball else None,
            "manufacturer": self.manufacturer,
            "serial": self.serial,
            "winning": [str(b) for b in self.winning],
            "not_called": [str(b) for b in self.not_called],
            "valid": self.valid,
        }


@dataclass
class GameRecord:
    number: int
    plan: GamePlan
    start: float
    calls: list[CallRecord] = field(default_factory=list)
    claims: list[ClaimRecord] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    status: str = "in-progress"
    review: list[HeardForReview] = field(default_factory=list)
    """Speech of this game the procedure could not place (for review)."""

    def to_json(self) -> dict[str, object]:
        return {
            "number": self.number,
            "type": self.plan.type.value,
            "plan": {
                "balls": self.plan.balls,
                "cards_sold": self.plan.cards_sold,
                "prize": self.plan.prize,
                "last_ball_required": self.plan.last_ball_required,
            },
            "calls": [{"ball": str(c.ball), "time": round(c.time, 2)} for c in self.calls if not c.withdrawn],
            "withdrawn": [{"ball": str(c.ball), "time": round(c.time, 2)} for c in self.calls if c.withdrawn],
            "claims": [c.to_json() for c in self.claims],
            "status": self.status,
            "findings": [f.to_json() for f in self.findings],
            "review": [r.to_json() for r in self.review],
        }


@dataclass
class OutageRecord:
    """A power outage (F): when it began, when the majority of players approved a manual draw, when power returned."""

    start: float
    game: int | None = None
    approved: float | None = None
    restored: float | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "start": round(self.start, 2),
            "game": self.game,
            "approved": None if self.approved is None else round(self.approved, 2),
            "restored": None if self.restored is None else round(self.restored, 2),
        }


@dataclass
class OccasionRecord:
    """All games of one session of play, with the findings that belong to no single game."""

    games: list[GameRecord] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    prizes_total: float = 0.0
    outages: list[OutageRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the check assumed (e.g. no hall program given): not findings."""
    review: list[HeardForReview] = field(default_factory=list)
    """Speech outside any game the procedure could not place (for review)."""
    incomplete: list[str] = field(default_factory=list)
    """What the input lacked (a truncated file, no speech heard on a channel): the check covers only what it held,
    and the occasion is never compliant."""

    def all_review(self) -> list[HeardForReview]:
        return [r for g in self.games for r in g.review] + list(self.review)

    def all_findings(self) -> list[Finding]:
        return [f for g in self.games for f in g.findings] + list(self.findings)

    def to_json(self) -> dict[str, object]:
        return {
            "games": [g.to_json() for g in self.games],
            "occasion": {
                "prizes_total": self.prizes_total,
                "findings": [f.to_json() for f in self.findings],
                "outages": [o.to_json() for o in self.outages],
                "notes": list(self.notes),
                "review": [r.to_json() for r in self.review],
                "incomplete": list(self.incomplete),
            },
        }
