"""A(5): a number called incorrectly: the game stops, the error sentence, the correct call; A(4) the master board."""

from __future__ import annotations

from dataclasses import replace

from ..messages import Ball, CallRecord, Meaning
from .calling import misread
from .core import ConductCore
from .state import Correction


class Correcting(ConductCore):
    """A(5) the error sentence (or words like it) and the correct call; A(4), A(5) the ball keyed on the board."""

    def take_bad_call(self) -> None:
        """A(5): a call that names no ball ("B thirty two") was called incorrectly: the error sentence and the
        correct call are due at once. Said again, it is the same mis-call; the call in hand keeps its due."""
        meaning = self.state.now.meaning
        if meaning is None or meaning.letter is None or meaning.number is None:
            return
        named = (meaning.letter, meaning.number)
        pending = self.state.game.pending
        if self.state.now.unsure and pending is not None and pending.ball.number == meaning.number:
            # Heard unsure, the call in hand's number under another letter: its second saying, the letter misheard.
            self._repeated()
            return
        correction = self.state.game.correction
        if correction is not None and correction.noball == named and not correction.sentence:
            return
        self._settle_correction()
        self.state.game.correction = Correction(
            self.state.now.time, self.state.now.heard, self.state.now.unsure, wrong=None, noball=named
        )
        self._due("miscall", self.settings.answer_window)
        if not self.state.now.unsure:
            self.prompt("announce-error")

    def start_correction(self) -> None:
        """A(5): the error sentence (or words like it); the next call is the correct number."""
        said = self.state.now.meaning
        exact = said is not None and said.intent == "error-correction"
        correction = self.state.game.correction
        if (
            correction is not None
            and correction.sentence
            and not correction.exact
            and said
            and not self.state.now.unsure
        ):
            # The sentence said with pauses comes as pieces ("an error has been made, I am reading the correct
            # number" | "please correct your card"): the pieces together, in order, may be the rule's words.
            whole = " ".join([*correction.pieces, said.words])
            read = self.grammar.parse(whole, ("error-correction",))
            exact = exact or (len(read.meanings) == 1 and not read.unknown)
        if correction is None:
            # the call in hand, or else the last on the board, is the one being corrected
            wrong = self.state.game.pending.ball if self.state.game.pending is not None else self.state.board.last
            correction = Correction(self.state.now.time, self.state.now.heard, self.state.now.unsure, wrong=wrong)
            self.state.game.correction = correction
            self.state.game.pending = None
        if not correction.sentence or not exact:
            correction.heard = self.state.now.heard
            correction.time = self.state.now.time
            correction.unsure = self.state.now.unsure
        correction.sentence = True
        correction.exact = correction.exact or exact
        if self.state.now.unsure:
            correction.pieces.clear()  # only pieces heard sure can make the rule's words together
        elif said is not None:
            correction.pieces.append(said.words)
        self._cancel("repeat", "miscall")
        self._due("correction-call", self.settings.repeat_window)
        if said is not None and said.ball is not None:
            # The correct call in the same breath: the machine takes it as it takes any call (A(1), D and E(1)
            # before the first ball, F during an outage), and the open correction makes it the correct number.
            self.state.now = replace(self.state.now, meaning=Meaning("call", ball=said.ball, words=said.words))
            self.fire("call")
            self.state.now = replace(self.state.now, meaning=said)

    def _correct(self, correction: Correction, ball: Ball) -> None:
        """A(5)(c): the correct call after the error sentence; the wrong ball leaves the board. After a call that
        named no ball, the call in hand (if any) is still owed its second saying: the correct call may be it."""
        self.state.game.correction = None
        self._cancel("correction-call")
        if not correction.exact:
            # the rule's exact words are what is missing: they may be in the caller's unsure speech around these
            self.find(
                "error-phrase-paraphrased",
                heard=correction.heard,
                unsure=correction.unsure,
                at=correction.time,
                since=correction.time,
            )
        pending = self.state.game.pending
        if pending is not None:
            self.state.game.pending = None
            self._cancel("repeat")
            if ball != pending.ball:
                self._not_repeated(pending, ball)
        if (correction.wrong is not None and ball == correction.wrong) or (
            pending is not None and ball == pending.ball
        ):
            self._said_once(ball)  # said twice from here
            return
        wrong = self._named_wrong(correction, ball)
        if wrong is not None and wrong in self.state.board.called:
            self._withdraw(wrong)
        if ball in self.state.board.called:
            if correction.wrong is None and ball == self.state.board.last:
                return  # the ball just called, read again after a call that named no ball
            if not self._heard_sure(ball) and not self.state.now.unsure:
                # On the board only by unsure hearings (the first "G fifty" heard unsure as "g fifty five"): the
                # guess leaves the board and the correct call, said for sure, takes its place, as a call does
                # (`take_call`); no ball recalled rests on a guess.
                if ball in self.state.game.unrepeated:
                    self.state.game.unrepeated.remove(ball)
                self._withdraw(ball)
                self._new_ball(ball)
                return
            self.find("ball-recalled", ball=ball, first="earlier")
            return
        self._new_ball(ball)

    def _named_wrong(self, correction: Correction, ball: Ball) -> Ball | None:
        """The ball a correction applies to: the one its correct call names, whenever the correction comes. The
        error sentence is taken to correct the ball just called, unless the correct call is a misreading of
        another ball on the board and not of that one ("G fifty" called, then "N thirty three" twice, then the
        sentence and "G fifty five"): the latest such ball of the correct call's column is the one withdrawn."""
        wrong = correction.wrong
        if not correction.sentence or correction.second is not None or (wrong is not None and misread(wrong, ball)):
            return wrong
        named = [
            b for b in reversed(self.state.board.called) if b.letter == ball.letter and b != ball and misread(b, ball)
        ]
        return named[0] if named else wrong

    def _expired_miscall(self) -> None:
        self._settle_correction()

    def _expired_correction_call(self) -> None:
        correction = self.state.game.correction
        if correction is not None:
            self.state.game.correction = None
            self.find(
                "correction-call-missing", heard=correction.heard, unsure=correction.unsure, since=correction.time
            )

    def _settle_correction(self) -> None:
        """A(5): a mis-call noticed but never corrected, or the error sentence with no correct call after it."""
        correction = self.state.game.correction
        if correction is None:
            return
        self.state.game.correction = None
        self._cancel("miscall", "correction-call")
        if correction.sentence:
            self.find(
                "correction-call-missing", heard=correction.heard, unsure=correction.unsure, since=correction.time
            )
        elif correction.noball is not None:
            _, number = correction.noball
            self.find(
                "bad-call-not-corrected",
                heard=correction.heard,
                unsure=correction.unsure,
                since=correction.time,
                number=number,
                column=Ball(number).letter,
            )
        else:
            self.find(
                "miscall-not-corrected",
                heard=correction.heard,
                unsure=correction.unsure,
                since=correction.time,
                ball=correction.wrong,
            )

    # ----- A(4), A(5): the master board console --------------------------------------------------

    def key_ball(self) -> None:
        """A ball keyed on the master board: the held ball during a claim, else the call it shows."""
        key = self.state.now.key
        if key is None:
            return
        if self.state.phase == "claim":
            if self.state.board.held_ball is None and key.ball not in self.state.board.called:
                self.state.board.held_ball = key.ball
                if self.state.game.claim is not None:
                    self.state.game.claim.record.held_ball = key.ball
            return
        records = self._records()
        pending = self.state.game.pending
        if pending is not None and records and records[-1].ball == pending.ball and not records[-1].keyed:
            self._compare_key(records[-1], key.ball, pending.heard, pending.unsure)  # keyed while being called
        else:
            self.state.game.unmatched_key = key  # keyed before it is called

    def _compare_key(self, record: CallRecord, keyed: Ball, heard: str, unsure: bool) -> None:
        """A(5): a spoken call that differs from the keyed ball is a mis-call; A(4): a match shows the ball."""
        if record.ball == keyed:
            record.keyed = True
            return
        self.find("call-differs-from-board", heard=heard, unsure=unsure, keyed=keyed)
        self.prompt("board-differs", unsure=unsure, heard=heard, keyed=self.spoken(keyed), called=heard)
