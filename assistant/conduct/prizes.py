"""E(2)(f): the aggregate prizes offered or given in one occasion, and the cap on them."""

from __future__ import annotations

from ..messages import GamePlan
from .core import ProcedureSettings
from .evidence import Evidence, dollars
from .state import ConductState


class PrizeCap:
    """E(2)(f): a warning before a game's planned prize would cross the cap, and a finding once the prizes counted
    cross it. Reads the game's plan and announced prize; writes the occasion's prize total and the game's
    `prize_counted`."""

    def __init__(self, state: ConductState, evidence: Evidence, settings: ProcedureSettings) -> None:
        self.state = state
        self.evidence = evidence
        self.settings = settings

    def ahead(self, plan: GamePlan, game: int) -> None:
        """E(2)(f): a game of the program opens whose prize would take the occasion over the cap."""
        if not plan.prize:
            return
        total = self.state.occasion.prizes_total + plan.prize
        if total > self.settings.prize_cap:
            self.evidence.find(
                "prize-cap-ahead",
                heard="",
                game=game,
                prize=dollars(plan.prize),
                total=dollars(total),
                cap=dollars(self.settings.prize_cap),
            )
            self.evidence.prompt("prize-cap", total=dollars(total))

    def count(self) -> None:
        """E(2)(f): the game's prize is offered once its first ball is drawn."""
        state = self.state
        plan = state.board.plan or GamePlan()
        announced = state.game.announced
        prize = announced.prize if announced.prize is not None else plan.prize
        if not prize or state.game.prize_counted:
            return
        state.game.prize_counted = True
        before = state.occasion.prizes_total
        state.occasion.prizes_total = before + prize
        if state.occasion.prizes_total > self.settings.prize_cap >= before:
            self.evidence.find(
                "prize-cap-exceeded",
                total=dollars(state.occasion.prizes_total),
                cap=dollars(self.settings.prize_cap),
            )
