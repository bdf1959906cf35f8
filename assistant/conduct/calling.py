"""A(2), A(3), A(6), D: each ball called twice, one ball at a time, none returned, the count of a limited game."""

from __future__ import annotations

from dataclasses import replace

from ..messages import Ball, Doubt, Role
from .core import ROOM_BEFORE, ROOM_FOR_ANOTHER_BALL, ROOM_FOR_THE_OTHER, ConductCore, clock
from .state import Correction, Hearing, Pending

TEEN_OR_TY = {13: 30, 14: 40, 15: 50, 16: 60, 17: 70}
"""Numbers said alike: "thirteen" and "thirty", ... "seventeen" and "seventy"."""


def misread(first: Ball, second: Ball) -> bool:
    """Two readings of one ball: the number read with one digit different (16 and 19, 7 and 37, 61 and 67), its
    digits swapped (23 and 32) or its teen for its ten (14 and 40). The letter follows the number read, so it may
    differ too. Any other pair is two balls."""
    a, b = f"{first.number:02d}", f"{second.number:02d}"
    one_digit = sum(x != y for x, y in zip(a, b, strict=True)) == 1
    pair = {first.number, second.number}
    return one_digit or a == b[::-1] or any(pair == {teen, ty} for teen, ty in TEEN_OR_TY.items())


class Calling(ConductCore):
    """A call by the caller: its second saying, the next ball, a ball called again; D the ball count."""

    def take_call(self) -> None:
        """A call by the caller: a second saying, a correction, a mis-call, or the next ball."""
        ball = self._ball()
        correction = self.state.game.correction
        if correction is not None and correction.sentence:
            self._correct(correction, ball)
            return
        if correction is not None and ball == correction.second and correction.first is not None:
            # Said twice after all: the differing saying was the next ball, and the call before it was said once.
            self.state.game.correction = None
            self._cancel("miscall")
            self._not_repeated(correction.first, ball)
            self._new_ball(ball)
            self._repeated()
            return
        if correction is not None and self._letter_misheard(correction, ball):
            # The unsure call naming no ball was this call's first saying, its letter misheard: said twice.
            self.state.game.correction = None
            self._cancel("miscall")
            self._new_ball(ball)
            if self.state.game.pending is not None:
                self.state.game.pending = replace(
                    self.state.game.pending, time=correction.time, heard=correction.heard, unsure=True
                )
            self._repeated()
            return
        if correction is not None:
            self._settle_correction()
        pending = self.state.game.pending
        if pending is not None:
            if ball == pending.ball:
                self._repeated()
                return
            if not self._different_call(pending, ball):
                return
        if self.state.game.held_next and ball == self.state.board.held_ball and ball in self.state.board.called:
            # B(5): the held ball, cut off by the bingo after its first saying, is called now: no ball recalled
            # (A(6)); it is said twice from here.
            self.state.game.held_next = False
            self.state.board.held_ball = None
            self.state.game.held_hearing = None
            self._said_once(ball)
            return
        if ball in self.state.board.called and not self._heard_sure(ball) and not self.state.now.unsure:
            # On the board only by unsure hearings (a greeting heard as "g fifty"): this is the call said for
            # sure, its first saying; neither a late second saying nor a ball called again rests on a guess.
            if ball in self.state.game.unrepeated:
                self.state.game.unrepeated.remove(ball)
            self._withdraw(ball)  # the guess leaves the board; the call said for sure takes its place, now
            self._add_call(ball)
            self._said_once(ball)
            return
        if ball in self.state.game.unrepeated:
            self.state.game.unrepeated.remove(ball)  # a late second saying: A(2)/A(3) already found
            return
        if (
            self.state.board.called
            and ball == self.state.board.last
            and self._last_record_age() <= self.settings.repeat_window
        ):
            return  # said a third time
        if ball in self.state.board.called:
            first = next(c.time for c in self._records() if c.ball == ball)
            if self.state.game.dropped_claim is not None:
                # perhaps the caller confirming a winning number of the claim heard unsure: no second saying owed
                self.find("ball-recalled", rests_on=[self.state.game.dropped_claim], ball=ball, first=clock(first))
                return
            self.find("ball-recalled", doubts=self._recall_doubts(ball), ball=ball, first=clock(first))
            self._said_once(ball)  # its second saying
            return
        self._new_ball(ball)

    def _recall_doubts(self, ball: Ball) -> list[Doubt]:
        """A(6) rests on two hearings being the same ball: the earlier one left room for a ball not on the board
        (it may have been that one, and this the ball's first call), or this one did (it may be that ball). Room
        for a ball on the board leaves a ball called again either way."""
        doubts = [
            Doubt(c.time, Role.CALLER, self._heard_at(c.time, c.ball), ROOM_BEFORE)
            for c in self._records()
            if c.ball == ball and any(b not in self.state.board.called for b in c.could_be)
        ]
        return doubts + self._room_in_hand(lambda b: b not in self.state.board.called, ROOM_FOR_ANOTHER_BALL)

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
        self._cancel("repeat")
        self.state.game.pending = None
        if not pending.prompted or (pending.unsure and not self.state.now.unsure and _may_be_one_saying(pending, ball)):
            # an unsure hearing gives way to the sure one that contradicts it, even after "say it again": a call
            # cut by a dropout ("I twenty", unsure) stays no ball of the board once "I twenty two" is heard sure
            alike = self._room_in_hand(lambda b: b == pending.ball, ROOM_FOR_THE_OTHER)
            if ball in pending.could_be:
                alike.insert(0, Doubt(pending.time, Role.CALLER, pending.heard, ROOM_FOR_THE_OTHER))
            if pending.unsure or self.state.now.unsure or alike:
                # A mis-hearing, not a mis-call: keep the surer saying on the board. Two sure hearings of which one
                # left room for the other's ball are one ball heard two ways, perhaps ("n forty one", N 31 close
                # behind, then "n thirty one").
                kept = pending.ball
                if pending.unsure and not self.state.now.unsure:
                    self._withdraw(pending.ball)
                    self._add_call(ball)
                    kept = ball
                first = Hearing(pending.time, Role.CALLER, pending.heard, pending.unsure)
                self.find("repeat-mismatch", rests_on=[first], doubts=alike, ball=pending.ball, kept=kept)
                return False
            if misread(pending.ball, ball):
                # Both heard clearly, one ball read two ways: a mis-call; A(5) wants the sentence and the right call.
                self.state.game.correction = Correction(
                    self.state.now.time, self.state.now.heard, False, wrong=pending.ball, second=ball, first=pending
                )
                self._due("miscall", self.settings.answer_window)
                self.prompt("announce-error")
                return False
        self._not_repeated(pending, ball)
        return True

    def _not_repeated(self, pending: Pending, next_ball: Ball | None = None) -> None:
        """A(3): the call in hand was said once. A(2): the next ball came while it was still owed its second
        saying; speech cannot show two balls held, so that is a warning beside A(3), never instead of it."""
        heard, unsure, since = pending.heard, pending.unsure, pending.time
        self.find("call-not-repeated", heard=heard, unsure=unsure, since=since, ball=pending.ball)
        if next_ball is not None:
            self.find(
                "next-ball-before-repeat", heard=heard, unsure=unsure, since=since, ball=pending.ball, next=next_ball
            )
        self.state.game.unrepeated.append(pending.ball)

    def _repeated(self) -> None:
        """A(3) met; D: after the second-to-last ball of a limited game, "last ball" is due."""
        pending = self.state.game.pending
        if pending is not None:
            # Two hearings that agree on the ball explain each other: no owed words hide in them.
            said = (pending.time, self.state.now.time)
            for record in self._records():
                if record.ball == pending.ball:
                    record.could_be.extend(b for b in self._could_be() if b not in record.could_be)
            self.state.hearings = [
                replace(h, unsure=False) if h.time in said and h.role is Role.CALLER else h for h in self.state.hearings
            ]
            if not self.state.now.unsure:
                for record in self._records():
                    if record.ball == pending.ball:
                        record.sure = True
                if not pending.unsure:
                    self.state.game.dropped_claim = None  # a new ball said twice, both sure: the game went on for sure
        self.state.game.pending = None
        self._cancel("repeat")
        limit = self._limit()
        if limit is not None and len(self.state.board.called) == limit - 1 and not self.state.game.announced.last_ball:
            self.prompt("announce-last-ball")

    def _new_ball(self, ball: Ball) -> None:
        """The next ball: B(5) held ball first after an invalid claim; D ball count; A(5) master board."""
        if self.state.game.held_next:
            self.state.game.held_next = False
            held = self.state.board.held_ball
            if held is not None and ball != held:
                rests_on = [self.state.game.held_hearing] if self.state.game.held_hearing is not None else []
                self.find("held-ball-not-called-next", rests_on=rests_on, ball=ball, held=held)
            self.state.board.held_ball = None
            self.state.game.held_hearing = None
        limit = self._limit()
        count = len(self.state.board.called) + 1
        if limit is not None and count > limit:
            self.find("ball-count-exceeded", count=count, limit=limit)
        elif limit is not None and count == limit and not self.state.game.announced.last_ball:
            records = self._records()
            since = records[-1].time if records else None
            self.find("last-ball-not-announced", since=since, count=count, limit=limit)
        record = self._add_call(ball)
        key = self.state.game.unmatched_key
        if key is not None:
            self.state.game.unmatched_key = None
            self._compare_key(record, key.ball, self.state.now.heard, self.state.now.unsure)
        self._said_once(ball)

    def _expired_repeat(self) -> None:
        if self.state.game.pending is not None:
            self.state.game.pending.prompted = True
            pending = self.state.game.pending
            self.prompt("repeat-call", since=pending.time, unsure=pending.unsure, ball=self.spoken(pending.ball))

    def _settle_pending(self, closing: bool = False) -> None:
        """A(3): the call in hand was never said twice."""
        pending = self.state.game.pending
        if pending is None:
            return
        self.state.game.pending = None
        self._cancel("repeat")
        if pending.prompted or closing:
            self._not_repeated(pending)


def _may_be_one_saying(pending: Pending, ball: Ball) -> bool:
    """The call in hand, heard unsure, may have been a saying of this ball: the same letter or number, or a ball its
    hearing left room for. A ball of another column and number after the window is the next ball, not a repeat."""
    said = pending.ball
    return said.letter == ball.letter or said.number == ball.number or ball in pending.could_be
