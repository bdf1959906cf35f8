"""A(1), D, E(1): what the caller announces before the first ball of a game."""

from __future__ import annotations

from ..messages import GamePlan, GameType
from .core import ConductCore, dollars


class Announcing(ConductCore):
    """A(1) whether last ball called is required; D the ball count of a limited game; E(1) cards sold and prize."""

    def note_last_ball_status(self) -> None:
        """A(1): whether last ball called is required; it must agree with the program."""
        required = self.state.now.meaning is not None and self.state.now.meaning.intent == "last-ball-required"
        planned = self.state.board.plan.last_ball_required if self.state.board.plan else None
        if planned is not None and planned != required:
            self.find("last-ball-status-contradicts-plan", plan="required" if planned else "not required")
        self.state.game.announced.last_ball_status = required

    def note_ball_count(self) -> None:
        """D: the number of balls of a limited game; it must agree with the program."""
        said = self.state.now.meaning.number if self.state.now.meaning else None
        planned = self.state.board.plan.balls if self.state.board.plan else None
        if planned is not None and said != planned:
            self.find("ball-count-contradicts-plan", said=said, plan=planned)
        self.state.game.announced.ball_count = said

    def note_last_ball(self) -> None:
        """D: "last ball" before the last ball is drawn."""
        self.state.game.announced.last_ball = True

    def note_cards_sold(self) -> None:
        """E(1): the number of cards sold."""
        said = self.state.now.meaning.number if self.state.now.meaning else None
        planned = self.state.board.plan.cards_sold if self.state.board.plan else None
        if planned is not None and said != planned:
            self.find("cards-sold-contradicts-plan", said=said, plan=planned)
        self.state.game.announced.cards_sold = said

    def note_prize(self) -> None:
        """E(1): the prize amount; E(2)(f) counts the announced prize when the program gives none."""
        said = self.state.now.meaning.number if self.state.now.meaning else None
        planned = self.state.board.plan.prize if self.state.board.plan else None
        if planned is not None and said is not None and float(said) != planned:
            self.find("prize-contradicts-plan", said=said, plan=dollars(planned))
        self.state.game.announced.prize = None if said is None else float(said)
        if self.state.board.called and not self.state.game.prize_counted:
            self._count_prize()

    def _expired_announce(self) -> None:
        if self.state.phase != "announcing":
            return
        plan = self.state.board.plan or GamePlan()
        if self.state.game.announced.last_ball_status is None:
            required = {True: "required", False: "not required", None: "required or not required"}
            self.prompt("announce-last-ball-status", required=required[plan.last_ball_required])
        if self._limit() is not None and self.state.game.announced.ball_count is None:
            self.prompt("announce-ball-count", balls=self.grammar.number_words(self._limit() or 0))
        if plan.type is GameType.WINNER_TAKE_ALL and (
            self.state.game.announced.cards_sold is None or self.state.game.announced.prize is None
        ):
            self.prompt("announce-cards-and-prize")

    def check_before_first_ball(self) -> None:
        """A(1), D, E(1): what must be announced before the first ball; E(2)(f): the prize now counts."""
        self._cancel("announce")
        plan = self.state.board.plan or GamePlan()
        if self.state.game.announced.last_ball_status is None:
            self.find("last-ball-status-not-announced")
        if plan.type is GameType.LIMITED and self.state.game.announced.ball_count is None:
            self.find("ball-count-not-announced")
        if plan.type is GameType.WINNER_TAKE_ALL:
            if self.state.game.announced.cards_sold is None:
                self.find("cards-sold-not-announced")
            if self.state.game.announced.prize is None:
                self.find("prize-not-announced")
        self._count_prize()

    def _limit(self) -> int | None:
        if self.state.game.announced.ball_count is not None:
            return self.state.game.announced.ball_count
        plan = self.state.board.plan
        return plan.balls if plan is not None else None
