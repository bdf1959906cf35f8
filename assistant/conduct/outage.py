"""F: a power outage; the caller may draw by hand only with the approval of the majority of players."""

from __future__ import annotations

from ..messages import OutageRecord
from .core import ConductCore


class Outage(ConductCore):
    """F: the outage, the players' approval of a manual draw, power restored."""

    def start_outage(self) -> None:
        """F: the caller may continue by hand only with the approval of the majority of players."""
        outage = OutageRecord(start=self.now.time, game=self.game.number if self.game else None)
        self.occasion.outages.append(outage)
        self.outage = outage
        self.outage_flagged = False
        self.prompt("ask-manual-draw")

    def check_manual_draw_approved(self) -> None:
        """F: a ball drawn by hand before the players approved."""
        if not self.outage_flagged:
            self.outage_flagged = True
            since = self.outage.start if self.outage is not None else None  # the approval is owed from the outage
            self.find("manual-draw-without-approval", since=since)

    def approve_manual_draw(self) -> None:
        """F: the approval is recorded (occasion outages)."""
        outage = self.outage
        if outage is not None and outage.approved is None:
            outage.approved = self.now.time
        self.board.manual = True

    def end_outage(self) -> None:
        outage = self.outage
        if outage is not None and outage.restored is None:
            outage.restored = self.now.time
        self.outage = None
        self.board.manual = False
