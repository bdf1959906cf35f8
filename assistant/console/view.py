"""What the master board shows, kept from the stream of inputs and outputs: board, claim panel, findings, prompts.

The view is built only from the typed messages (the procedure's contract), so it shows the same thing whether
the console feeds the procedure itself or the pipeline does and publishes what passed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..messages import (
    LETTERS,
    Ball,
    BoardKey,
    CallMade,
    CallWithdrawn,
    ClaimOpened,
    ClaimResolved,
    Finding,
    GameClosed,
    GameOpened,
    GamePlan,
    GameStart,
    GameType,
    HeardForReview,
    Input,
    Output,
    Prompt,
    Role,
    SessionEnd,
    Severity,
    StepChanged,
    Tick,
    Utterance,
)

PRIZE_CAP = 2500.0
"""Aggregate prizes of one occasion (E(2)(f)), unless the hall's settings say otherwise; shown against the
prizes of the games opened."""
WINNER_RECORD_PRIZE = 600.0
"""A winner-take-all prize of this much or more needs the winner's contact information (E(2)(c))."""
PREVIOUS_SHOWN = 6
"""Previous calls shown beside the current one."""
LAST_SHOWN = 5
"""The last balls called, newest first, on the players' flashboard."""
LAST_BALL_WORDS = {"last-ball-required": True, "last-ball-not-required": False}
"""The caller's A(1) announcement, by the grammar's intent: whether last ball called is required."""
CLOSED_WORDS = {
    "completed": "completed",
    "not-played": "not played",
    "stopped": "stopped",
    "claim-unresolved": "ended with its claim not ruled on",
    "won-not-completed": "won, not declared completed",
}
"""A closed game's status (GameClosed) in the hall's words."""


@dataclass(frozen=True)
class WinnerEntry:
    """A winner's contact information as the operator enters it for the winner-take-all record (E(2)(c))."""

    game: int
    name: str
    contact: str
    prize: float
    tax_document: str | None = None
    """A reference to the tax reporting document (E(2)(d)), when one was filled in."""

    def to_json(self) -> dict[str, object]:
        return {
            "game": self.game,
            "name": self.name,
            "contact": self.contact,
            "prize": self.prize,
            "tax_document": self.tax_document,
        }


@dataclass
class ClaimPanel:
    """The claim under verification: the card read by the floor and its winning numbers against the board."""

    game: int
    time: float
    held_ball: Ball | None
    manufacturer: str | None = None
    serial: str | None = None
    winning: list[Ball] = field(default_factory=list)
    not_called: list[Ball] | None = None
    """As the procedure resolved it; None while the claim is open (then the board decides)."""
    valid: bool | None = None
    calls_when_ruled: int | None = None
    """How many balls were on the board when the claim was ruled: a ball called after it ends the ruling's news."""


@dataclass(frozen=True)
class Announced:
    """The caller's A(1) announcement as heard: whether last ball called is required, and when."""

    required: bool
    time: float
    unsure: bool

    def to_json(self) -> dict[str, object]:
        return {"required": self.required, "time": round(self.time, 2), "unsure": self.unsure}


@dataclass
class GameView:
    number: int
    plan: GamePlan
    start: float
    calls: list[Ball] = field(default_factory=list)
    status: str = "in-progress"
    claim: ClaimPanel | None = None
    last_ball: Announced | None = None
    """The caller's last announcement of this game whether last ball called is required, as heard."""

    @property
    def open(self) -> bool:
        return self.status == "in-progress"


def game_status(game: GameView | None, session_ended: bool) -> dict[str, str]:
    """The one status of the game both screens show, from the game, its claim and its calls: `phase` (a stable
    name the pages style by) and `text` (the hall's words). A closed game is closed, whatever step comes next."""
    if game is None:
        return {"phase": "waiting", "text": "Session ended" if session_ended else "Waiting for the first game"}
    if not game.open:
        return {"phase": "closed", "text": f"Game {game.number} {CLOSED_WORDS.get(game.status, game.status)}"}
    claim = game.claim
    if claim is not None and claim.valid is None:
        return {"phase": "checking", "text": "BINGO - checking the card"}
    if claim is not None and claim.valid:
        return {"phase": "valid", "text": "Valid bingo"}
    if claim is not None and claim.calls_when_ruled == len(game.calls):
        return {"phase": "not-valid", "text": "Not a valid bingo - play continues"}
    if not game.calls:
        return {"phase": "before-first-ball", "text": "Before the first ball"}
    return {"phase": "calling", "text": "Calling"}


def plan_json(plan: GamePlan) -> dict[str, object]:
    return {
        "type": plan.type.value,
        "balls": plan.balls,
        "cards_sold": plan.cards_sold,
        "prize": plan.prize,
        "last_ball_required": plan.last_ball_required,
        "pattern": plan.pattern,
    }


def event_json(item: Input | Output) -> dict[str, object]:
    """One message as the page receives it: a `kind` and the fields the page shows."""
    match item:
        case Finding():
            return {"kind": "finding", "game": item.game, **item.to_json()}
        case Prompt():
            return {
                "kind": "prompt",
                "time": round(item.time, 2),
                "text": item.text,
                "prompt_kind": item.kind,
                "priority": item.priority,
                "clause": item.clause,
            }
        case CallMade():
            return {"kind": "call", "game": item.game, "ball": str(item.ball), "time": round(item.time, 2)}
        case CallWithdrawn():
            return {"kind": "withdrawn", "game": item.game, "ball": str(item.ball), "time": round(item.time, 2)}
        case GameOpened():
            return {"kind": "game-opened", "game": item.game, "plan": plan_json(item.plan), "time": round(item.time, 2)}
        case GameClosed():
            return {"kind": "game-closed", "game": item.game, "status": item.status, "time": round(item.time, 2)}
        case ClaimOpened():
            held = str(item.held_ball) if item.held_ball else None
            return {"kind": "claim-opened", "game": item.game, "held_ball": held, "time": round(item.time, 2)}
        case ClaimResolved():
            return {
                "kind": "claim-resolved",
                "game": item.game,
                "valid": item.valid,
                "manufacturer": item.manufacturer,
                "serial": item.serial,
                "winning": [str(b) for b in item.winning],
                "not_called": [str(b) for b in item.not_called],
                "time": round(item.time, 2),
            }
        case StepChanged():
            return {"kind": "step", "step": item.step, "time": round(item.time, 2)}
        case HeardForReview():
            return {"kind": "for-review", "game": item.game, **item.to_json()}
        case Utterance():
            return {
                "kind": "heard",
                "role": item.role.value,
                "text": item.text,
                "uncertain": item.uncertain,
                "time": round(item.start, 2),
            }
        case BoardKey():
            return {"kind": "keyed", "ball": str(item.ball), "time": round(item.time, 2)}
        case GameStart():
            return {"kind": "game-start", "plan": plan_json(item.plan), "time": round(item.time, 2)}
        case Tick():
            return {"kind": "tick", "time": round(item.time, 2)}
        case SessionEnd():
            return {"kind": "session-end", "time": round(item.time, 2)}


class ConsoleView:
    """The state of the occasion as the console shows it; not thread-safe (the hub holds the lock)."""

    def __init__(self, history: int = 50, prize_cap: float = PRIZE_CAP) -> None:
        self.prize_cap = prize_cap
        self.games: list[GameView] = []
        self.step: str | None = None
        self.findings: deque[Finding] = deque(maxlen=history)
        self.for_review: deque[HeardForReview] = deque(maxlen=history)
        self.last_ball_heard: Announced | None = None
        """An announcement heard while no game was open: the game it opens (by the program or by these very
        words, which reach the view before the procedure opens the game) takes it."""
        self.prompts: deque[Prompt] = deque(maxlen=history)
        self.heard: deque[dict[str, object]] = deque(maxlen=history)
        self.winners: list[WinnerEntry] = []
        self.finding_count = 0
        self.violation_count = 0
        self.session_ended = False
        self.last_time = 0.0
        self.version = 0

    @property
    def game(self) -> GameView | None:
        return self.games[-1] if self.games else None

    def apply(self, item: Input | Output) -> bool:
        """Take one message into the view; False when it changes nothing shown (a bare Tick)."""
        self._note_time(item)
        game = self.game
        match item:
            case GameOpened():
                heard, self.last_ball_heard = self.last_ball_heard, None
                self.games.append(GameView(number=item.game, plan=item.plan, start=item.time, last_ball=heard))
            case GameClosed():
                for g in self.games:
                    if g.number == item.game:
                        g.status = item.status
            case CallMade():
                if game is not None and item.game == game.number and item.ball not in game.calls:
                    game.calls.append(item.ball)
            case CallWithdrawn():
                if game is not None and item.game == game.number and item.ball in game.calls:
                    game.calls.remove(item.ball)
            case ClaimOpened():
                if game is not None:
                    game.claim = ClaimPanel(game=item.game, time=item.time, held_ball=item.held_ball)
            case ClaimResolved():
                if game is not None:
                    claim = game.claim or ClaimPanel(game=item.game, time=item.time, held_ball=None)
                    claim.valid = item.valid
                    claim.manufacturer = item.manufacturer or claim.manufacturer
                    claim.serial = item.serial or claim.serial
                    if item.winning:
                        claim.winning = list(item.winning)
                    claim.not_called = list(item.not_called)
                    claim.calls_when_ruled = len(game.calls)
                    game.claim = claim
            case Finding():
                self.findings.append(item)
                self.finding_count += 1
                if item.severity is Severity.VIOLATION:
                    self.violation_count += 1
            case Prompt():
                self.prompts.append(item)
            case StepChanged():
                self.step = item.step
            case HeardForReview():
                self.for_review.append(item)
            case Utterance():
                self.heard.append(event_json(item))
                self._read_claim(item)
                self._read_last_ball(item)
            case BoardKey():
                self.heard.append(event_json(item))
                self._hold(item.ball)
            case SessionEnd():
                self.session_ended = True
            case GameStart():
                pass
            case Tick():
                return False
        self.version += 1
        return True

    def _note_time(self, item: Input | Output) -> None:
        if isinstance(item, Utterance):
            self.last_time = max(self.last_time, item.end)
        else:
            self.last_time = max(self.last_time, item.time)

    def _read_claim(self, utterance: Utterance) -> None:
        """While a claim is open, show the card and the winning numbers as the floor reads them (B(7), B(8))."""
        game = self.game
        if game is None or game.claim is None or game.claim.valid is not None or utterance.role != Role.FLOOR:
            return
        claim = game.claim
        for meaning in utterance.meanings:
            if meaning.intent == "card":
                claim.manufacturer = meaning.manufacturer or claim.manufacturer
                claim.serial = meaning.serial or claim.serial
            elif meaning.intent == "call" and meaning.ball is not None and meaning.ball not in claim.winning:
                claim.winning.append(meaning.ball)

    def _read_last_ball(self, utterance: Utterance) -> None:
        """A(1): the caller's announcement whether last ball called is required, shown as heard (sure or not)."""
        if utterance.role != Role.CALLER:
            return
        for meaning in utterance.meanings:
            if meaning.intent in LAST_BALL_WORDS:
                heard = Announced(LAST_BALL_WORDS[meaning.intent], utterance.start, utterance.uncertain)
                game = self.game
                if game is not None and game.open:
                    game.last_ball = heard
                else:
                    self.last_ball_heard = heard

    def _hold(self, ball: Ball) -> None:
        """B(3): a ball keyed while a claim is verified, not on the board, is the ball the caller holds."""
        game = self.game
        claim = game.claim if game is not None else None
        if game is None or claim is None or claim.valid is not None or claim.held_ball is not None:
            return
        if ball not in game.calls:
            claim.held_ball = ball

    def add_winner(self, entry: WinnerEntry) -> None:
        self.winners.append(entry)
        self.version += 1

    def prizes_offered(self) -> float:
        return sum(g.plan.prize or 0.0 for g in self.games)

    def snapshot(self) -> dict[str, object]:
        """Everything a newly connected page needs, as JSON-ready data."""
        game = self.game
        calls = list(game.calls) if game else []
        remaining: int | None = None
        game_json: dict[str, object] | None = None
        if game is not None:
            if game.plan.type == GameType.LIMITED and game.plan.balls is not None:
                remaining = max(game.plan.balls - len(calls), 0)
            game_json = {
                "number": game.number,
                "status": game.status,
                "start": round(game.start, 2),
                **plan_json(game.plan),
                "winner_record_required": (
                    game.plan.type == GameType.WINNER_TAKE_ALL and (game.plan.prize or 0.0) >= WINNER_RECORD_PRIZE
                ),
                "last_ball_announced": game.last_ball.to_json() if game.last_ball else None,
            }
        return {
            "version": self.version,
            "time": round(self.last_time, 2),
            "step": self.step,
            "status": game_status(game, self.session_ended),
            "game": game_json,
            "letters": LETTERS,
            "calls": [str(b) for b in calls],
            "current": str(calls[-1]) if calls else None,
            "previous": [str(b) for b in reversed(calls[-1 - PREVIOUS_SHOWN : -1])],
            "last": [str(b) for b in reversed(calls[-LAST_SHOWN:])],
            "count": len(calls),
            "remaining": remaining,
            "claim": self._claim_json(game, calls),
            "findings": [{**f.to_json(), "game": f.game} for f in self.findings],
            "for_review": [{**r.to_json(), "game": r.game} for r in self.for_review],
            "finding_count": self.finding_count,
            "violation_count": self.violation_count,
            "prompts": [event_json(p) for p in self.prompts],
            "heard": list(self.heard),
            "winners": [w.to_json() for w in self.winners],
            "prizes_offered": self.prizes_offered(),
            "prize_cap": self.prize_cap,
            "session_ended": self.session_ended,
        }

    @staticmethod
    def _claim_json(game: GameView | None, calls: list[Ball]) -> dict[str, object] | None:
        if game is None or game.claim is None:
            return None
        claim = game.claim
        missing = (
            set(claim.not_called) if claim.not_called is not None else {b for b in claim.winning if b not in calls}
        )
        return {
            "game": claim.game,
            "time": round(claim.time, 2),
            "held_ball": str(claim.held_ball) if claim.held_ball else None,
            "manufacturer": claim.manufacturer,
            "serial": claim.serial,
            "winning": [{"ball": str(b), "called": b not in missing} for b in claim.winning],
            "not_called": [str(b) for b in sorted(missing)],
            "valid": claim.valid,
            "open": claim.valid is None,
        }


FLASHBOARD_EVENTS = frozenset({"call", "withdrawn", "game-opened", "game-closed"})
"""What the public flashboard hears of the updates: the balls and the games, never findings, speech or winners."""


def flashboard_json(state: dict[str, object]) -> dict[str, object]:
    """The public part of a snapshot: the board the players see, the game's pattern and prize, and whether a claim
    is being checked or how it was ruled (no findings, card, speech or winners' details)."""
    game = state.get("game")
    public_game = (
        {key: game.get(key) for key in ("number", "status", "type", "balls", "pattern", "prize")}
        if isinstance(game, dict)
        else None
    )
    shown = (
        "version",
        "time",
        "letters",
        "calls",
        "current",
        "previous",
        "last",
        "count",
        "remaining",
        "status",
        "session_ended",
    )
    return {**{key: state.get(key) for key in shown}, "game": public_game}


def flashboard_message(message: dict[str, object]) -> dict[str, object]:
    """A live update as the flashboard receives it."""
    events = message.get("events")
    state = message.get("state")
    return {
        **message,
        "events": [e for e in events if isinstance(e, dict) and e.get("kind") in FLASHBOARD_EVENTS]
        if isinstance(events, list)
        else [],
        "state": flashboard_json(state) if isinstance(state, dict) else None,
    }
