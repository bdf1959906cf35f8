"""The games of an occasion: each opened by the hall's program (or by its first words) and closed by the next;
E(2)(f): the aggregate prizes of the occasion."""

from __future__ import annotations

from ..board import Board
from ..messages import GameClosed, GameOpened, GamePlan, GameRecord
from .core import ConductCore, dollars


class Occasion(ConductCore):
    """Games opened and closed, with what each left undone; E(2)(f) the prize cap of the occasion."""

    def open_game(self) -> None:
        """A game of the hall's program begins; E(2)(f): warn before its prize would cross the cap."""
        plan = self.now.plan or GamePlan()
        self._reset_game()
        number = len(self.occasion.games) + 1
        self.game = GameRecord(number=number, plan=plan, start=self.now.time)
        self.occasion.games.append(self.game)
        self.hearings = [h for h in self.hearings if h.time >= self.now.time]
        self.board = Board(game_number=number, plan=plan)
        self.emit(GameOpened(number, plan, self.now.time))
        if plan.prize:
            total = self.occasion.prizes_total + plan.prize
            if total > self.settings.prize_cap:
                self.find(
                    "prize-cap-ahead",
                    heard="",
                    game=number,
                    prize=dollars(plan.prize),
                    total=dollars(total),
                    cap=dollars(self.settings.prize_cap),
                )
                self.prompt("prize-cap", total=dollars(total))
        self._due("announce", self.settings.answer_window)

    def open_unplanned_game(self) -> None:
        """Words of a game came with no @game line: follow it as a regular game, and say so in the notes."""
        number = len(self.occasion.games) + 1
        self.occasion.notes.append(
            f"game {number}: no @game line (hall program) before its first words; followed as a regular game"
        )
        saved = self.now.plan
        self.now.plan = GamePlan()
        self.open_game()
        self.now.plan = saved

    def close_game(self) -> None:
        """The next game or the end of the session closes what is open: each missing step is a finding."""
        if self.game is None:
            return
        self.expire(self.now.time, inclusive=True)
        if self.state == "announcing" and not self.board.called:
            self._finish("not-played")
        elif self.state == "claim":
            since = self.claim.record.time if self.claim is not None else None
            self.find("claim-not-resolved", heard="", since=since)
            self._finish("claim-unresolved")
        elif self.state == "closing":
            if not self.asked_other:
                self.find("other-bingos-not-asked", heard="", since=self.won_at)
            self.find("game-not-completed", heard="", since=self.won_at)
            self._finish("won-not-completed")
        else:
            self._finish("stopped")

    def _finish(self, status: str) -> None:
        """Close the game: a call said once (A(3)) or a mis-call left open (A(5)) is a finding."""
        assert self.game is not None
        self._settle_pending(closing=not self.now.ending)
        self._settle_correction()
        self.game.status = status
        self.emit(GameClosed(self.game.number, status, self.now.time))
        self.game = None
        self.dues.clear()
        self.claim = None

    def _count_prize(self) -> None:
        """E(2)(f): the game's prize is offered once its first ball is drawn."""
        plan = self.board.plan or GamePlan()
        prize = self.announced.prize if self.announced.prize is not None else plan.prize
        if not prize or self.prize_counted:
            return
        self.prize_counted = True
        before = self.occasion.prizes_total
        self.occasion.prizes_total = before + prize
        if self.occasion.prizes_total > self.settings.prize_cap >= before:
            self.find(
                "prize-cap-exceeded",
                total=dollars(self.occasion.prizes_total),
                cap=dollars(self.settings.prize_cap),
            )
