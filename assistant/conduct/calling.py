"""A(2), A(3), A(6), D, B(5): each ball called twice, one ball at a time, none returned, the count of a limited game,
the held ball first after an invalid claim.

Two components: `Repeats` holds the call in hand (A(2), A(3)); `Calling` takes each call of the caller and decides
what it is (a second saying, the next ball, a ball called again, a correct call after the A(5) sentence)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..messages import Ball, Doubt, Role
from .announcing import ball_limit
from .core import Calls, ProcedureSettings, Windows, called_ball, check, expires
from .evidence import Evidence, clock
from .state import ConductState, Correction, Hearing, Pending

if TYPE_CHECKING:
    from .correction import Correcting, MasterBoard

TEEN_OR_TY = {13: 30, 14: 40, 15: 50, 16: 60, 17: 70}
"""Numbers said alike: "thirteen" and "thirty", ... "seventeen" and "seventy"."""
ROOM_FOR_THE_OTHER = "this hearing left room for the other ball: one ball, perhaps, heard two ways"
ROOM_FOR_ANOTHER_BALL = "this hearing left room for a ball not called yet: perhaps that ball, misheard"
ROOM_BEFORE = "the earlier hearing of the ball left room for a ball not called: perhaps it was that one"


def misread(first: Ball, second: Ball) -> bool:
    """Two readings of one ball: the number read with one digit different (16 and 19, 7 and 37, 61 and 67), its
    digits swapped (23 and 32) or its teen for its ten (14 and 40). The letter follows the number read, so it may
    differ too. Any other pair is two balls."""
    a, b = f"{first.number:02d}", f"{second.number:02d}"
    one_digit = sum(x != y for x, y in zip(a, b, strict=True)) == 1
    pair = {first.number, second.number}
    return one_digit or a == b[::-1] or any(pair == {teen, ty} for teen, ty in TEEN_OR_TY.items())


class Repeats:
    """A(3) each call said twice, A(2) one ball at a time: the call in hand from its first saying to its second (or
    to the finding that it was said once); D "last ball" prompted after the second-to-last ball. Reads the input in
    hand, the board and the announcements; writes the game's `pending` and `unrepeated`, the calls' `sure` and
    `could_be`, the hearings' unsureness, the game's `dropped_claim`, the "repeat" window."""

    def __init__(
        self, state: ConductState, evidence: Evidence, windows: Windows, calls: Calls, settings: ProcedureSettings
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.calls = calls
        self.settings = settings

    def said_once(self, ball: Ball) -> None:
        """The call in hand is this ball, said once as just heard: its second saying is due (A(3))."""
        now = self.state.now
        self.state.game.pending = Pending(ball, now.time, now.heard, now.unsure, could_be=self.calls.could_be())
        self.windows.open("repeat", self.settings.repeat_window)

    def repeated(self) -> None:
        """A(3) met; D: after the second-to-last ball of a limited game, "last ball" is due."""
        state = self.state
        game = state.game
        pending = game.pending
        if pending is not None:
            # Two hearings that agree on the ball explain each other: no owed words hide in them.
            said = (pending.time, state.now.time)
            for record in self.calls.records():
                if record.ball == pending.ball:
                    record.could_be.extend(b for b in self.calls.could_be() if b not in record.could_be)
            state.hearings = [
                replace(h, unsure=False) if h.time in said and h.role is Role.CALLER else h for h in state.hearings
            ]
            if not state.now.unsure:
                for record in self.calls.records():
                    if record.ball == pending.ball:
                        record.sure = True
                if not pending.unsure:
                    game.dropped_claim = None  # a new ball said twice, both sure: the game went on for sure
        game.pending = None
        self.windows.cancel("repeat")
        limit = ball_limit(state)
        if limit is not None and len(state.board.called) == limit - 1 and not game.announced.last_ball:
            self.evidence.prompt("announce-last-ball")

    def not_repeated(self, pending: Pending, next_ball: Ball | None = None) -> None:
        """A(3): the call in hand was said once. A(2): the next ball came while it was still owed its second
        saying; speech cannot show two balls held, so that is a warning beside A(3), never instead of it."""
        heard, unsure, since = pending.heard, pending.unsure, pending.time
        self.evidence.find("call-not-repeated", heard=heard, unsure=unsure, since=since, ball=pending.ball)
        if next_ball is not None:
            self.evidence.find(
                "next-ball-before-repeat", heard=heard, unsure=unsure, since=since, ball=pending.ball, next=next_ball
            )
        self.state.game.unrepeated.append(pending.ball)

    @expires("repeat")
    def ask_again(self) -> None:
        """A(3): the repeat window closed on a call said once: "Say it again"."""
        pending = self.state.game.pending
        if pending is not None:
            pending.prompted = True
            spoken = self.evidence.spoken(pending.ball)
            self.evidence.prompt("repeat-call", since=pending.time, unsure=pending.unsure, ball=spoken)

    def settle(self, closing: bool = False) -> None:
        """A(3): the call in hand will not be said again: said once, if it was asked for again or the game closes."""
        pending = self.state.game.pending
        if pending is None:
            return
        self.state.game.pending = None
        self.windows.cancel("repeat")
        if pending.prompted or closing:
            self.not_repeated(pending)


class Calling:
    """A call by the caller: its second saying (A(3)), a differing saying (A(3), A(5)), the next ball (D the count,
    B(5) the held ball first, A(4)/A(5) the ball keyed before it), a ball called again (A(6)). Reads the input in
    hand, the board, the game's correction, `held_next`, `unrepeated`, `dropped_claim`; writes the board's calls and
    held ball, the game's `pending`, `correction`, `held_next`, `held_hearing`, `unmatched_key`, `unrepeated`."""

    def __init__(
        self,
        state: ConductState,
        evidence: Evidence,
        windows: Windows,
        calls: Calls,
        repeats: Repeats,
        corrections: Correcting,
        master_board: MasterBoard,
        settings: ProcedureSettings,
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.calls = calls
        self.repeats = repeats
        self.corrections = corrections
        self.master_board = master_board
        self.settings = settings

    @check
    def take_call(self) -> None:
        """A call by the caller: a second saying, a correction, a mis-call, or the next ball."""
        state = self.state
        game = state.game
        board = state.board
        ball = called_ball(state.now)
        correction = game.correction
        if correction is not None and correction.sentence:
            self.corrections.correct(correction, ball, self.new_ball)
            return
        if correction is not None and ball == correction.second and correction.first is not None:
            # Said twice after all: the differing saying was the next ball, and the call before it was said once.
            game.correction = None
            self.windows.cancel("miscall")
            self.repeats.not_repeated(correction.first, ball)
            self.new_ball(ball)
            self.repeats.repeated()
            return
        if correction is not None and self._letter_misheard(correction, ball):
            # The unsure call naming no ball was this call's first saying, its letter misheard: said twice.
            game.correction = None
            self.windows.cancel("miscall")
            self.new_ball(ball)
            if game.pending is not None:
                game.pending = replace(game.pending, time=correction.time, heard=correction.heard, unsure=True)
            self.repeats.repeated()
            return
        if correction is not None:
            self.corrections.settle()
        pending = game.pending
        if pending is not None:
            if ball == pending.ball:
                self.repeats.repeated()
                return
            if not self._different_call(pending, ball):
                return
        if game.held_next and ball == board.held_ball and ball in board.called:
            # B(5): the held ball, cut off by the bingo after its first saying, is called now: no ball recalled
            # (A(6)); it is said twice from here.
            game.held_next = False
            board.held_ball = None
            game.held_hearing = None
            self.repeats.said_once(ball)
            return
        if ball in board.called and not self.calls.heard_sure(ball) and not state.now.unsure:
            # On the board only by unsure hearings (a greeting heard as "g fifty"): this is the call said for
            # sure, its first saying; neither a late second saying nor a ball called again rests on a guess.
            if ball in game.unrepeated:
                game.unrepeated.remove(ball)
            self.calls.withdraw(ball)  # the guess leaves the board; the call said for sure takes its place, now
            self.calls.add(ball)
            self.repeats.said_once(ball)
            return
        if ball in game.unrepeated:
            game.unrepeated.remove(ball)  # a late second saying: A(2)/A(3) already found
            return
        if board.called and ball == board.last and self.calls.last_record_age() <= self.settings.repeat_window:
            return  # said a third time
        if ball in board.called:
            first = next(c.time for c in self.calls.records() if c.ball == ball)
            if game.dropped_claim is not None:
                # perhaps the caller confirming a winning number of the claim heard unsure: no second saying owed
                self.evidence.find("ball-recalled", rests_on=[game.dropped_claim], ball=ball, first=clock(first))
                return
            self.evidence.find("ball-recalled", doubts=self._recall_doubts(ball), ball=ball, first=clock(first))
            self.repeats.said_once(ball)  # its second saying
            return
        self.new_ball(ball)

    def _recall_doubts(self, ball: Ball) -> list[Doubt]:
        """A(6) rests on two hearings being the same ball: the earlier one left room for a ball not on the board
        (it may have been that one, and this the ball's first call), or this one did (it may be that ball). Room
        for a ball on the board leaves a ball called again either way."""
        called = self.state.board.called
        doubts = [
            Doubt(c.time, Role.CALLER, self.calls.heard_at(c.time, c.ball), ROOM_BEFORE)
            for c in self.calls.records()
            if c.ball == ball and any(b not in called for b in c.could_be)
        ]
        return doubts + self.calls.room_in_hand(lambda b: b not in called, ROOM_FOR_ANOTHER_BALL)

    def _letter_misheard(self, correction: Correction, ball: Ball) -> bool:
        """An unsure hearing of a call naming no ball ("b fifty"), then this ball's number with its own letter
        ("g fifty") and no call in hand: the letter is the least sure part of a call heard in a hall, so the
        unsure hearing is taken as this call's first saying, not as a mis-call left uncorrected (A(5))."""
        return (
            correction.unsure
            and not correction.sentence
            and correction.noball is not None
            and correction.noball[1] == ball.number
            and self.state.game.pending is None
            and ball not in self.state.board.called
        )

    def _different_call(self, pending: Pending, ball: Ball) -> bool:
        """A call that is not the second saying of the one in hand; True when it is the next ball.

        A(3) asks for each call twice: a different call means the one in hand was said once, whenever it comes.
        Two exceptions keep the doubt open instead: either saying was heard unsure (a mis-hearing, not the
        caller's: a sure hearing replaces an unsure one on the board, within the repeat window or after it), or
        the second is a misreading of the same ball (A(5): the error sentence is prompted)."""
        now = self.state.now
        self.windows.cancel("repeat")
        self.state.game.pending = None
        if not pending.prompted or (pending.unsure and not now.unsure and _may_be_one_saying(pending, ball)):
            # an unsure hearing gives way to the sure one that contradicts it, even after "say it again": a call
            # cut by a dropout ("I twenty", unsure) stays no ball of the board once "I twenty two" is heard sure
            alike = self.calls.room_in_hand(lambda b: b == pending.ball, ROOM_FOR_THE_OTHER)
            if ball in pending.could_be:
                alike.insert(0, Doubt(pending.time, Role.CALLER, pending.heard, ROOM_FOR_THE_OTHER))
            if pending.unsure or now.unsure or alike:
                # A mis-hearing, not a mis-call: keep the surer saying on the board. Two sure hearings of which one
                # left room for the other's ball are one ball heard two ways, perhaps ("n forty one", N 31 close
                # behind, then "n thirty one").
                kept = pending.ball
                if pending.unsure and not now.unsure:
                    self.calls.withdraw(pending.ball)
                    self.calls.add(ball)
                    kept = ball
                first = Hearing(pending.time, Role.CALLER, pending.heard, pending.unsure)
                self.evidence.find("repeat-mismatch", rests_on=[first], doubts=alike, ball=pending.ball, kept=kept)
                return False
            if misread(pending.ball, ball):
                # Both heard clearly, one ball read two ways: a mis-call; A(5) wants the sentence and the right call.
                self.state.game.correction = Correction(
                    now.time, now.heard, False, wrong=pending.ball, second=ball, first=pending
                )
                self.windows.open("miscall", self.settings.answer_window)
                self.evidence.prompt("announce-error")
                return False
        self.repeats.not_repeated(pending, ball)
        return True

    def new_ball(self, ball: Ball) -> None:
        """The next ball: B(5) held ball first after an invalid claim; D ball count; A(5) master board."""
        state = self.state
        game = state.game
        board = state.board
        if game.held_next:
            game.held_next = False
            held = board.held_ball
            if held is not None and ball != held:
                rests_on = [game.held_hearing] if game.held_hearing is not None else []
                self.evidence.find("held-ball-not-called-next", rests_on=rests_on, ball=ball, held=held)
            board.held_ball = None
            game.held_hearing = None
        limit = ball_limit(state)
        count = len(board.called) + 1
        if limit is not None and count > limit:
            self.evidence.find("ball-count-exceeded", count=count, limit=limit)
        elif limit is not None and count == limit and not game.announced.last_ball:
            records = self.calls.records()
            since = records[-1].time if records else None
            self.evidence.find("last-ball-not-announced", since=since, count=count, limit=limit)
        record = self.calls.add(ball)
        key = game.unmatched_key
        if key is not None:
            game.unmatched_key = None
            self.master_board.compare(
                record, key.ball, state.now.heard, state.now.unsure, state.now.time, self.calls.could_be()
            )
        self.repeats.said_once(ball)


def _may_be_one_saying(pending: Pending, ball: Ball) -> bool:
    """The call in hand, heard unsure, may have been a saying of this ball: the same letter or number, or a ball its
    hearing left room for. A ball of another column and number after the window is the next ball, not a repeat."""
    said = pending.ball
    return said.letter == ball.letter or said.number == ball.number or ball in pending.could_be
