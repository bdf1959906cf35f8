"""The master board of the current game, as the procedure keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import Ball, GamePlan


@dataclass
class Board:
    """The master board of the current game."""

    game_number: int = 0
    plan: GamePlan | None = None
    called: list[Ball] = field(default_factory=list)
    """Balls in call order (withdrawn ones removed)."""
    held_ball: Ball | None = None
    """The ball in the caller's hand when a bingo stopped the game (known from the master board console)."""
    manual: bool = False
    """F: balls are drawn by hand after the players approved."""

    @property
    def last(self) -> Ball | None:
        return self.called[-1] if self.called else None
