"""A(1), D, E(1): what the caller announces before the first ball of a game."""

from __future__ import annotations

from ..grammar import Grammar
from ..messages import GamePlan, GameType
from .core import Windows, check, expires
from .evidence import Evidence, dollars
from .prizes import PrizeCap
from .state import ConductState


def ball_limit(state: ConductState) -> int | None:
    """D: the number of balls of a limited game, as announced, else as planned."""
    announced = state.game.announced.ball_count
    if announced is not None:
        return announced
    plan = state.board.plan
    return plan.balls if plan is not None else None


class Announcing:
    """A(1) whether last ball called is required; D the ball count of a limited game and "last ball"; E(1) cards
    sold and prize. Reads the input in hand, the plan and the board's calls; writes the game's `announced`."""

    def __init__(
        self, state: ConductState, evidence: Evidence, windows: Windows, prizes: PrizeCap, grammar: Grammar
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.prizes = prizes
        self.grammar = grammar

    def _said_number(self) -> int | None:
        meaning = self.state.now.meaning
        return meaning.number if meaning else None

    @check
    def note_last_ball_status(self) -> None:
        """A(1): whether last ball called is required; it must agree with the program."""
        state = self.state
        required = state.now.meaning is not None and state.now.meaning.intent == "last-ball-required"
        planned = state.board.plan.last_ball_required if state.board.plan else None
        if planned is not None and planned != required:
            self.evidence.find("last-ball-status-contradicts-plan", plan="required" if planned else "not required")
        state.game.announced.last_ball_status = required

    @check
    def note_ball_count(self) -> None:
        """D: the number of balls of a limited game; it must agree with the program."""
        said = self._said_number()
        planned = self.state.board.plan.balls if self.state.board.plan else None
        if planned is not None and said != planned:
            self.evidence.find("ball-count-contradicts-plan", said=said, plan=planned)
        self.state.game.announced.ball_count = said

    @check
    def note_last_ball(self) -> None:
        """D: "last ball" before the last ball is drawn."""
        self.state.game.announced.last_ball = True

    @check
    def note_cards_sold(self) -> None:
        """E(1): the number of cards sold."""
        said = self._said_number()
        planned = self.state.board.plan.cards_sold if self.state.board.plan else None
        if planned is not None and said != planned:
            self.evidence.find("cards-sold-contradicts-plan", said=said, plan=planned)
        self.state.game.announced.cards_sold = said

    @check
    def note_prize(self) -> None:
        """E(1): the prize amount; E(2)(f) counts the announced prize when the program gives none."""
        state = self.state
        said = self._said_number()
        planned = state.board.plan.prize if state.board.plan else None
        if planned is not None and said is not None and float(said) != planned:
            self.evidence.find("prize-contradicts-plan", said=said, plan=dollars(planned))
        state.game.announced.prize = None if said is None else float(said)
        if state.board.called and not state.game.prize_counted:
            self.prizes.count()

    @expires("announce")
    def remind(self) -> None:
        """A(1), D, E(1): what is still owed when the window after the game's opening closes, as prompts."""
        state = self.state
        if state.phase != "announcing":
            return
        plan = state.board.plan or GamePlan()
        announced = state.game.announced
        if announced.last_ball_status is None:
            required = {True: "required", False: "not required", None: "required or not required"}
            self.evidence.prompt("announce-last-ball-status", required=required[plan.last_ball_required])
        limit = ball_limit(state)
        if limit is not None and announced.ball_count is None:
            self.evidence.prompt("announce-ball-count", balls=self.grammar.number_words(limit or 0))
        if plan.type is GameType.WINNER_TAKE_ALL and (announced.cards_sold is None or announced.prize is None):
            self.evidence.prompt("announce-cards-and-prize")

    @check
    def check_before_first_ball(self) -> None:
        """A(1), D, E(1): what must be announced before the first ball; E(2)(f): the prize now counts."""
        self.windows.cancel("announce")
        plan = self.state.board.plan or GamePlan()
        announced = self.state.game.announced
        if announced.last_ball_status is None:
            self.evidence.find("last-ball-status-not-announced")
        if plan.type is GameType.LIMITED and announced.ball_count is None:
            self.evidence.find("ball-count-not-announced")
        if plan.type is GameType.WINNER_TAKE_ALL:
            if announced.cards_sold is None:
                self.evidence.find("cards-sold-not-announced")
            if announced.prize is None:
                self.evidence.find("prize-not-announced")
        self.prizes.count()
