"""F: a power outage; the caller may draw by hand only with the approval of the majority of players."""

from __future__ import annotations

from ..messages import OutageRecord
from .core import check
from .evidence import Evidence
from .state import ConductState


class Outage:
    """F: the outage, the players' approval of a manual draw, power restored. Reads the input in hand; writes the
    occasion's outages, the state's `outage` and `outage_flagged`, the board's `manual`."""

    def __init__(self, state: ConductState, evidence: Evidence) -> None:
        self.state = state
        self.evidence = evidence

    @check
    def start_outage(self) -> None:
        """F: the caller may continue by hand only with the approval of the majority of players."""
        state = self.state
        game = state.game.record
        outage = OutageRecord(start=state.now.time, game=game.number if game else None)
        state.occasion.outages.append(outage)
        state.outage = outage
        state.outage_flagged = False
        self.evidence.prompt("ask-manual-draw")

    @check
    def check_manual_draw_approved(self) -> None:
        """F: a ball drawn by hand before the players approved."""
        state = self.state
        if not state.outage_flagged:
            state.outage_flagged = True
            since = state.outage.start if state.outage is not None else None  # the approval is owed from the outage
            self.evidence.find("manual-draw-without-approval", since=since)

    @check
    def approve_manual_draw(self) -> None:
        """F: the approval is recorded (occasion outages)."""
        outage = self.state.outage
        if outage is not None and outage.approved is None:
            outage.approved = self.state.now.time
        self.state.board.manual = True

    @check
    def end_outage(self) -> None:
        """F: power is restored: the draw is the machine's again."""
        outage = self.state.outage
        if outage is not None and outage.restored is None:
            outage.restored = self.state.now.time
        self.state.outage = None
        self.state.board.manual = False
