"""The games of an occasion: each opened by the hall's program (or by its first words) and closed by the next."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..board import Board
from ..messages import GameClosed, GameOpened, GamePlan, GameRecord, Output, Role
from .calling import Repeats
from .core import ProcedureSettings, Windows, check
from .correction import Correcting
from .evidence import Evidence
from .prizes import PrizeCap
from .state import ConductState, GameState, Hearing


class Occasion:
    """Games opened and closed, with what each left undone (A(3), A(5), B(8), B(9)); E(2)(f) the prize cap checked
    as a game opens. Reads the input in hand and the machine's phase; writes the occasion's games and notes, the
    state's `game` (a fresh `GameState` per game), `board`, `hearings` and `closed_at`, the "announce" window."""

    def __init__(
        self,
        state: ConductState,
        evidence: Evidence,
        windows: Windows,
        repeats: Repeats,
        corrections: Correcting,
        prizes: PrizeCap,
        settings: ProcedureSettings,
        emit: Callable[[Output], None],
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.repeats = repeats
        self.corrections = corrections
        self.prizes = prizes
        self.settings = settings
        self.emit = emit

    @check
    def open_game(self) -> None:
        """A game of the hall's program begins; E(2)(f): warn before its prize would cross the cap."""
        state = self.state
        plan = state.now.plan or GamePlan()
        number = len(state.occasion.games) + 1
        record = GameRecord(number=number, plan=plan, start=state.now.time)
        state.game = GameState(record=record, plan_doubts=state.now.plan_doubts)
        state.occasion.games.append(record)
        state.hearings = self._carried_into_game(state.now.time)
        state.board = Board(game_number=number, plan=plan)
        self.emit(GameOpened(number, plan, state.now.time))
        self.prizes.ahead(plan, number)
        self.windows.open("announce", self.settings.answer_window)

    def _carried_into_game(self, opened: float) -> list[Hearing]:
        """The hearings a game opened at `opened` keeps: its own, and each role's unsure hearings right before it
        (back to that role's last sure one, and never before the last game closed). A game opens on a sure "this
        game is completed" or on its first sure words (`pipeline.program_games`); in the second case the last game
        closes only now and the new one may have begun in those unsure hearings (its cards sold and prize heard
        unsure, then "last ball called is not required" heard sure): the words it owed may be in them
        (`heard_unsure`). Hall audio at 10 dB gave two false E(1) violations when they were dropped."""
        closed = self.state.closed_at
        since = closed if closed is not None and closed < opened else -math.inf
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

    @check
    def open_unplanned_game(self) -> None:
        """Words of a game came with no @game line: follow it as a regular game, and say so in the notes."""
        state = self.state
        number = len(state.occasion.games) + 1
        state.occasion.notes.append(
            f"game {number}: no @game line (hall program) before its first words; followed as a regular game"
        )
        saved = state.now.plan
        state.now.plan = GamePlan()
        self.open_game()
        state.now.plan = saved

    @check
    def close_game(self) -> None:
        """The next game or the end of the session closes what is open: each missing step is a finding (B(8) a
        claim never ruled, B(9) the question and the completion after a valid bingo)."""
        state = self.state
        game = state.game
        if game.record is None:
            return
        self.windows.expire(state.now.time, inclusive=True)
        if state.phase == "announcing" and not state.board.called:
            self.finish("not-played")
        elif state.phase == "claim":
            since = game.claim.record.time if game.claim is not None else None
            self.evidence.find("claim-not-resolved", heard="", since=since)
            self.finish("claim-unresolved")
        elif state.phase == "closing":
            if not game.asked_other:
                self.evidence.find("other-bingos-not-asked", heard="", since=game.won_at)
            self.evidence.find("game-not-completed", heard="", since=game.won_at)
            self.finish("won-not-completed")
        else:
            self.finish("stopped")

    def finish(self, status: str) -> None:
        """Close the game: a call said once (A(3)) or a mis-call left open (A(5)) is a finding."""
        state = self.state
        game = state.game
        assert game.record is not None
        self.repeats.settle(closing=not state.now.ending)
        self.corrections.settle()
        game.record.status = status
        state.closed_at = state.now.time
        self.emit(GameClosed(game.record.number, status, state.now.time))
        game.record = None
        game.dues.clear()
        game.claim = None
