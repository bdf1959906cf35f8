"""What every part of the rule shares: the settings, the marks of the machine's checks and of the window handlers,
the windows open, the board's calls, who said it.

Each part of the rule is a component of its own module (assistant/conduct/): it receives the one explicit state
(`state.ConductState`) and the services it uses (`evidence.Evidence`, `Windows`, `Calls`, and the parts it asks
something of) when it is made. A method the rule pack names as a callback or condition is marked `@check`; one that
speaks when a window closes is marked `@expires(kind)`. `Conduct` (assistant/conduct/machine.py) composes them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..messages import Ball, CallMade, CallRecord, CallWithdrawn, Doubt, Output, Role
from ..rules import RuleError
from .evidence import Evidence
from .state import ConductState, Due, Now

INPUT_TRIGGERS = ("game-start", "session-end", "board-key")
"""Triggers that come from inputs other than speech."""

Method = TypeVar("Method", bound=Callable[..., object])


def check(method: Method) -> Method:
    """Marks a method the rule pack's machine calls by its name: a callback or a condition of a transition."""
    setattr(method, "_rule_check", True)  # noqa: B010 (a mark on the function, read by `named_checks`)
    return method


def expires(kind: str) -> Callable[[Method], Method]:
    """Marks a method that speaks when the window `kind` closes (`Windows.open`)."""

    def mark(method: Method) -> Method:
        setattr(method, "_window", kind)  # noqa: B010 (a mark on the function, read by `window_handlers`)
        return method

    return mark


def named_checks(part: object) -> dict[str, Callable[[], object]]:
    """The checks a part gives the machine, by the names the rule pack calls them."""
    return {
        name: getattr(part, name)
        for name, member in inspect.getmembers(type(part), inspect.isfunction)
        if getattr(member, "_rule_check", False)
    }


def window_handlers(part: object) -> dict[str, Callable[[], None]]:
    """The windows a part speaks for when they close, by kind."""
    handlers: dict[str, Callable[[], None]] = {}
    for name, member in inspect.getmembers(type(part), inspect.isfunction):
        kind = getattr(member, "_window", None)
        if kind is not None:
            handlers[str(kind)] = getattr(part, name)
    return handlers


@dataclass(frozen=True)
class ProcedureSettings:
    repeat_window: float = 10.0
    """Seconds for the second saying of a call (A(3)) and for the correct call after the A(5) sentence."""
    answer_window: float = 15.0
    """Seconds for a due announcement, "are there any other bingos?", "this game is completed", a mis-call fix."""
    claim_echo: float = 1.5
    """Seconds within which a player's second bingo may be the first said again ("Bingo! Bingo!"): the card it
    would owe (B(7)) is then uncertain, for review."""
    claim_wait: float = 4.0
    """Seconds a bingo heard unsure waits before "Was that a bingo?": a sure hearing in them (the caller's call said
    the second time, the floor reading the card) answers it."""
    claim_ask_floor: float = 0.2
    """A bingo heard with less confidence than this is more likely not a bingo: it is kept for review (B(1),
    uncertain) and the game followed as before, without asking the caller "Was that a bingo?" (the crowd's
    murmur after "are there any other bingos?" read as "bingo" at 0.02)."""
    fewest_to_win: int = 4
    """Balls the smallest winning pattern needs (a line through the free center, four corners): before that many
    are called in a game no card can have won, so a bingo heard unsure is kept for review (B(1), uncertain) and
    the caller is not asked "Was that a bingo?" (the board witnesses that no one claimed)."""
    fewest_to_win_cover_all: int = 24
    """The same for a cover-all: every square but the free center (a floor employee's "no" heard as an unsure
    "bingo" after nine balls of a cover-all made the question at 20 dB)."""
    prize_cap: float = 2500.0
    """Aggregate prizes offered or given in one occasion (E(2)(f))."""
    min_confidence: float = 0.5
    """An utterance heard with less confidence counts as unsure, like one the recognizer flagged uncertain:
    a repeat that differs is then a mis-hearing (uncertain), not a mis-call (A(5))."""


def called_ball(now: Now) -> Ball:
    """The ball named by the call in hand."""
    meaning = now.meaning
    if meaning is None or meaning.ball is None:
        raise RuleError("a call check ran without a called ball")
    return meaning.ball


class Windows:
    """The windows open in the game (`GameState.dues`): a repeat, an answer owed. Each kind is handled, when it
    closes, by the part that marked a method `@expires(kind)`."""

    def __init__(self, state: ConductState) -> None:
        self.state = state
        self.handlers: dict[str, Callable[[], None]] = {}

    def open(self, kind: str, window: float) -> None:
        self.state.game.dues[kind] = Due(kind, self.state.now.time + window)

    def cancel(self, *kinds: str) -> None:
        for kind in kinds:
            self.state.game.dues.pop(kind, None)

    def expire(self, time: float, inclusive: bool = False) -> None:
        """Let the windows that closed before `time` speak: a prompt or a finding, never a hang."""
        while self.state.game.dues:
            due = min(self.state.game.dues.values(), key=lambda d: d.deadline)
            if due.deadline > time or (due.deadline == time and not inclusive):
                return
            del self.state.game.dues[due.kind]
            saved = self.state.now
            self.state.now = Now(time=due.deadline)
            self.handlers[due.kind]()
            self.state.now = saved


class Calls:
    """The game's calls, on its record and on the board, and what the hearing in hand left room for. Reads and
    writes the game's record of calls and the board's called balls."""

    def __init__(self, state: ConductState, evidence: Evidence, emit: Callable[[Output], None]) -> None:
        self.state = state
        self.evidence = evidence
        self.emit = emit

    def add(self, ball: Ball) -> CallRecord:
        """The ball goes on the record and the board as called now."""
        state = self.state
        game = state.game.record
        assert game is not None
        record = CallRecord(ball, state.now.time, sure=not state.now.unsure, could_be=list(self.could_be()))
        game.calls.append(record)
        state.board.called.append(ball)
        self.emit(CallMade(game.number, ball, state.now.time, state.now.heard))
        return record

    def withdraw(self, ball: Ball) -> None:
        """The ball leaves the board; its latest call on the record is withdrawn."""
        state = self.state
        game = state.game.record
        assert game is not None
        for record in reversed(game.calls):
            if record.ball == ball and not record.withdrawn:
                record.withdrawn = True
                break
        if ball in state.board.called:
            state.board.called.remove(ball)
        self.emit(CallWithdrawn(game.number, ball, state.now.time))

    def could_be(self) -> tuple[Ball, ...]:
        """The other balls the hearing in hand left room for (`Utterance.could_be`: the recognizer's sound-alikes)."""
        utterance = self.state.now.utterance
        return utterance.could_be if utterance is not None else ()

    def room_in_hand(self, among: Callable[[Ball], bool], why: str) -> list[Doubt]:
        """The hearing in hand as a doubt, for `why`, when it left room for a ball `among` accepts."""
        in_hand = self.evidence.hearing_in_hand()
        if in_hand is None or not any(among(b) for b in self.could_be()):
            return []
        return [Doubt(in_hand.time, in_hand.role, in_hand.text, why)]

    def heard_at(self, time: float, ball: Ball) -> str:
        """The caller's words heard at this time (the ball's words when no hearing is kept)."""
        hearings = self.state.hearings
        return next((h.text for h in hearings if h.time == time and h.role is Role.CALLER), self.evidence.spoken(ball))

    def heard_sure(self, ball: Ball) -> bool:
        """The ball is on the board by a sure hearing (not only by unsure ones, which may have been anything)."""
        return any(c.sure for c in self.records() if c.ball == ball)

    def records(self) -> list[CallRecord]:
        """The game's calls not withdrawn."""
        game = self.state.game.record
        return [c for c in game.calls if not c.withdrawn] if game else []

    def last_record_age(self) -> float:
        records = self.records()
        return self.state.now.time - records[-1].time if records else float("inf")


class Speakers:
    """Conditions of the machine: who said the words in hand, and whether the game has calls."""

    def __init__(self, state: ConductState) -> None:
        self.state = state

    def _role(self) -> Role | None:
        utterance = self.state.now.utterance
        return utterance.role if utterance is not None else None

    @check
    def said_by_caller(self) -> bool:
        return self._role() is Role.CALLER

    @check
    def said_by_floor(self) -> bool:
        return self._role() is Role.FLOOR

    @check
    def said_by_player(self) -> bool:
        return self._role() is Role.PLAYER

    @check
    def has_calls(self) -> bool:
        return bool(self.state.board.called)
