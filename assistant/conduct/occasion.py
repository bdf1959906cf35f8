"""The games of an occasion: each opened by the hall's program (or by its first words) and closed by the next;
E(2)(f): the aggregate prizes of the occasion."""

from __future__ import annotations

import math

from ..board import Board
from ..messages import GameClosed, GameOpened, GamePlan, GameRecord, Role
from .core import ConductCore, dollars
from .state import GameState, Hearing


class Occasion(ConductCore):
    """Games opened and closed, with what each left undone; E(2)(f) the prize cap of the occasion."""

    def open_game(self) -> None:
        """A game of the hall's program begins; E(2)(f): warn before its prize would cross the cap."""
        plan = self.state.now.plan or GamePlan()
        number = len(self.state.occasion.games) + 1
        record = GameRecord(number=number, plan=plan, start=self.state.now.time)
        self.state.game = GameState(record=record, plan_doubts=self.state.now.plan_doubts)
        self.state.occasion.games.append(record)
        self.state.hearings = self._carried_into_game(self.state.now.time)
        self.state.board = Board(game_number=number, plan=plan)
        self.emit(GameOpened(number, plan, self.state.now.time))
        if plan.prize:
            total = self.state.occasion.prizes_total + plan.prize
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

    def _carried_into_game(self, opened: float) -> list[Hearing]:
        """The hearings a game opened at `opened` keeps: its own, and each role's unsure hearings right before it
        (back to that role's last sure one, and never before the last game closed). A game opens on a sure "this
        game is completed" or on its first sure words (`pipeline.program_games`); in the second case the last game
        closes only now and the new one may have begun in those unsure hearings (its cards sold and prize heard
        unsure, then "last ball called is not required" heard sure): the words it owed may be in them
        (`heard_unsure`). Hall audio at 10 dB gave two false E(1) violations when they were dropped."""
        since = (
            self.state.closed_at if self.state.closed_at is not None and self.state.closed_at < opened else -math.inf
        )
        kept: list[Hearing] = []
        before_sure: set[Role] = set()
        for hearing in reversed(self.state.hearings):
            if hearing.time >= opened:
                kept.append(hearing)
            elif hearing.time > since and hearing.role not in before_sure:
                if hearing.unsure:
                    kept.append(hearing)
                else:
                    before_sure.add(hearing.role)
        return kept[::-1]

    def open_unplanned_game(self) -> None:
        """Words of a game came with no @game line: follow it as a regular game, and say so in the notes."""
        number = len(self.state.occasion.games) + 1
        self.state.occasion.notes.append(
            f"game {number}: no @game line (hall program) before its first words; followed as a regular game"
        )
        saved = self.state.now.plan
        self.state.now.plan = GamePlan()
        self.open_game()
        self.state.now.plan = saved

    def close_game(self) -> None:
        """The next game or the end of the session closes what is open: each missing step is a finding."""
        if self.state.game.record is None:
            return
        self.expire(self.state.now.time, inclusive=True)
        if self.state.phase == "announcing" and not self.state.board.called:
            self._finish("not-played")
        elif self.state.phase == "claim":
            since = self.state.game.claim.record.time if self.state.game.claim is not None else None
            self.find("claim-not-resolved", heard="", since=since)
            self._finish("claim-unresolved")
        elif self.state.phase == "closing":
            if not self.state.game.asked_other:
                self.find("other-bingos-not-asked", heard="", since=self.state.game.won_at)
            self.find("game-not-completed", heard="", since=self.state.game.won_at)
            self._finish("won-not-completed")
        else:
            self._finish("stopped")

    def _finish(self, status: str) -> None:
        """Close the game: a call said once (A(3)) or a mis-call left open (A(5)) is a finding."""
        assert self.state.game.record is not None
        self._settle_pending(closing=not self.state.now.ending)
        self._settle_correction()
        self.state.game.record.status = status
        self.state.closed_at = self.state.now.time
        self.emit(GameClosed(self.state.game.record.number, status, self.state.now.time))
        self.state.game.record = None
        self.state.game.dues.clear()
        self.state.game.claim = None

    def _count_prize(self) -> None:
        """E(2)(f): the game's prize is offered once its first ball is drawn."""
        plan = self.state.board.plan or GamePlan()
        prize = self.state.game.announced.prize if self.state.game.announced.prize is not None else plan.prize
        if not prize or self.state.game.prize_counted:
            return
        self.state.game.prize_counted = True
        before = self.state.occasion.prizes_total
        self.state.occasion.prizes_total = before + prize
        if self.state.occasion.prizes_total > self.settings.prize_cap >= before:
            self.find(
                "prize-cap-exceeded",
                total=dollars(self.state.occasion.prizes_total),
                cap=dollars(self.settings.prize_cap),
            )
