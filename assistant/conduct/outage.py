"""F: a power outage; the caller may draw by hand only with the approval of the majority of players."""

from __future__ import annotations

from ..messages import OutageRecord
from .core import ConductCore


class Outage(ConductCore):
    """F: the outage, the players' approval of a manual draw, power restored."""

    def start_outage(self) -> None:
        """F: the caller may continue by hand only with the approval of the majority of players."""
        outage = OutageRecord(
            start=self.state.now.time, game=self.state.game.record.number if self.state.game.record else None
        )
        self.state.occasion.outages.append(outage)
        self.state.outage = outage
        self.state.outage_flagged = False
        self.prompt("ask-manual-draw")

    def check_manual_draw_approved(self) -> None:
        """F: a ball drawn by hand before the players approved."""
        if not self.state.outage_flagged:
            self.state.outage_flagged = True
            since = (
                self.state.outage.start if self.state.outage is not None else None
            )  # the approval is owed from the outage
            self.find("manual-draw-without-approval", since=since)

    def approve_manual_draw(self) -> None:
        """F: the approval is recorded (occasion outages)."""
        outage = self.state.outage
        if outage is not None and outage.approved is None:
            outage.approved = self.state.now.time
        self.state.board.manual = True

    def end_outage(self) -> None:
        outage = self.state.outage
        if outage is not None and outage.restored is None:
            outage.restored = self.state.now.time
        self.state.outage = None
        self.state.board.manual = False
