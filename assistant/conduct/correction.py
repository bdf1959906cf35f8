"""A(5): a number called incorrectly: the error sentence, the correct call; A(4), A(5) the master board.

Two components: `Correcting` follows a mis-call from the moment it is noticed (a call naming no ball, a differing
second saying, the error sentence) to its correct call or the finding that none came; `MasterBoard` compares each
call with the ball keyed on the master board."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..grammar import Grammar
from ..messages import Ball, CallRecord, Doubt, Meaning, Role
from .calling import Repeats, misread
from .core import Calls, ProcedureSettings, Windows, check, expires
from .evidence import Evidence
from .state import ConductState, Correction

ROOM_FOR_THE_KEYED = "the hearing of this call left room for the ball keyed on the master board"


class Correcting:
    """A(5) the error sentence (or words like it) and the correct call. Reads the input in hand and the board;
    writes the game's `correction`, `pending` and `unrepeated`, the board's calls, the "miscall" and
    "correction-call" windows. The error sentence with the correct call in one breath drives the machine again
    (`fire`), as any call does."""

    def __init__(
        self,
        state: ConductState,
        evidence: Evidence,
        windows: Windows,
        calls: Calls,
        repeats: Repeats,
        grammar: Grammar,
        settings: ProcedureSettings,
        fire: Callable[[str], bool],
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.calls = calls
        self.repeats = repeats
        self.grammar = grammar
        self.settings = settings
        self.fire = fire

    @check
    def take_bad_call(self) -> None:
        """A(5): a call that names no ball ("B thirty two") was called incorrectly: the error sentence and the
        correct call are due at once. Said again, it is the same mis-call; the call in hand keeps its due."""
        now = self.state.now
        game = self.state.game
        meaning = now.meaning
        if meaning is None or meaning.letter is None or meaning.number is None:
            return
        named = (meaning.letter, meaning.number)
        pending = game.pending
        if now.unsure and pending is not None and pending.ball.number == meaning.number:
            # Heard unsure, the call in hand's number under another letter: its second saying, the letter misheard.
            self.repeats.repeated()
            return
        correction = game.correction
        if correction is not None and correction.noball == named and not correction.sentence:
            return
        self.settle()
        game.correction = Correction(now.time, now.heard, now.unsure, wrong=None, noball=named)
        self.windows.open("miscall", self.settings.answer_window)
        if not now.unsure:
            self.evidence.prompt("announce-error")

    @check
    def start_correction(self) -> None:
        """A(5): the error sentence (or words like it); the next call is the correct number."""
        now = self.state.now
        game = self.state.game
        said = now.meaning
        exact = said is not None and said.intent == "error-correction"
        correction = game.correction
        if correction is not None and correction.sentence and not correction.exact and said and not now.unsure:
            # The sentence said with pauses comes as pieces ("an error has been made, I am reading the correct
            # number" | "please correct your card"): the pieces together, in order, may be the rule's words.
            whole = " ".join([*correction.pieces, said.words])
            read = self.grammar.parse(whole, ("error-correction",))
            exact = exact or (len(read.meanings) == 1 and not read.unknown)
        if correction is None:
            # the call in hand, or else the last on the board, is the one being corrected
            wrong = game.pending.ball if game.pending is not None else self.state.board.last
            correction = Correction(now.time, now.heard, now.unsure, wrong=wrong)
            game.correction = correction
            game.pending = None
        if not correction.sentence or not exact:
            correction.heard = now.heard
            correction.time = now.time
            correction.unsure = now.unsure
        correction.sentence = True
        correction.exact = correction.exact or exact
        if now.unsure:
            correction.pieces.clear()  # only pieces heard sure can make the rule's words together
        elif said is not None:
            correction.pieces.append(said.words)
        self.windows.cancel("repeat", "miscall")
        self.windows.open("correction-call", self.settings.repeat_window)
        if said is not None and said.ball is not None:
            # The correct call in the same breath: the machine takes it as it takes any call (A(1), D and E(1)
            # before the first ball, F during an outage), and the open correction makes it the correct number.
            self.state.now = replace(now, meaning=Meaning("call", ball=said.ball, words=said.words))
            self.fire("call")
            self.state.now = replace(self.state.now, meaning=said)

    def correct(self, correction: Correction, ball: Ball, new_ball: Callable[[Ball], None]) -> None:
        """A(5)(c): the correct call after the error sentence; the wrong ball leaves the board. After a call that
        named no ball, the call in hand (if any) is still owed its second saying: the correct call may be it.
        A correct call of a ball not on the board enters play as the next ball does (`new_ball`)."""
        state = self.state
        game = state.game
        board = state.board
        game.correction = None
        self.windows.cancel("correction-call")
        if not correction.exact:
            # the rule's exact words are what is missing: they may be in the caller's unsure speech around these
            self.evidence.find(
                "error-phrase-paraphrased",
                heard=correction.heard,
                unsure=correction.unsure,
                at=correction.time,
                since=correction.time,
            )
        pending = game.pending
        if pending is not None:
            game.pending = None
            self.windows.cancel("repeat")
            if ball != pending.ball:
                self.repeats.not_repeated(pending, ball)
        if (correction.wrong is not None and ball == correction.wrong) or (
            pending is not None and ball == pending.ball
        ):
            self.repeats.said_once(ball)  # said twice from here
            return
        wrong = self._named_wrong(correction, ball)
        if wrong is not None and wrong in board.called:
            self.calls.withdraw(wrong)
        if ball in board.called:
            if correction.wrong is None and ball == board.last:
                return  # the ball just called, read again after a call that named no ball
            if not self.calls.heard_sure(ball) and not state.now.unsure:
                # On the board only by unsure hearings (the first "G fifty" heard unsure as "g fifty five"): the
                # guess leaves the board and the correct call, said for sure, takes its place, as a call does
                # (`Calling.take_call`); no ball recalled rests on a guess.
                if ball in game.unrepeated:
                    game.unrepeated.remove(ball)
                self.calls.withdraw(ball)
                new_ball(ball)
                return
            self.evidence.find("ball-recalled", ball=ball, first="earlier")
            return
        new_ball(ball)

    def _named_wrong(self, correction: Correction, ball: Ball) -> Ball | None:
        """The ball a correction applies to: the one its correct call names, whenever the correction comes. The
        error sentence is taken to correct the ball just called, unless the correct call is a misreading of
        another ball on the board and not of that one ("G fifty" called, then "N thirty three" twice, then the
        sentence and "G fifty five"): the latest such ball of the correct call's column is the one withdrawn."""
        wrong = correction.wrong
        if not correction.sentence or correction.second is not None or (wrong is not None and misread(wrong, ball)):
            return wrong
        called = self.state.board.called
        named = [b for b in reversed(called) if b.letter == ball.letter and b != ball and misread(b, ball)]
        return named[0] if named else wrong

    @expires("miscall")
    def miscall_left(self) -> None:
        """A(5): the window for the error sentence closed."""
        self.settle()

    @expires("correction-call")
    def correct_call_missing(self) -> None:
        """A(5): the window for the correct call after the error sentence closed."""
        correction = self.state.game.correction
        if correction is not None:
            self.state.game.correction = None
            self.evidence.find(
                "correction-call-missing", heard=correction.heard, unsure=correction.unsure, since=correction.time
            )

    def settle(self) -> None:
        """A(5): a mis-call noticed but never corrected, or the error sentence with no correct call after it."""
        correction = self.state.game.correction
        if correction is None:
            return
        self.state.game.correction = None
        self.windows.cancel("miscall", "correction-call")
        find = self.evidence.find
        if correction.sentence:
            find("correction-call-missing", heard=correction.heard, unsure=correction.unsure, since=correction.time)
        elif correction.noball is not None:
            _, number = correction.noball
            find(
                "bad-call-not-corrected",
                heard=correction.heard,
                unsure=correction.unsure,
                since=correction.time,
                number=number,
                column=Ball(number).letter,
            )
        else:
            find(
                "miscall-not-corrected",
                heard=correction.heard,
                unsure=correction.unsure,
                since=correction.time,
                ball=correction.wrong,
            )


class MasterBoard:
    """A(4) the ball shown, A(5) a call that differs from the ball keyed on the master board console. Reads the
    input in hand, the game's `pending` and calls; writes a call's `keyed`, the game's `unmatched_key`, the held
    ball during a claim (B(3))."""

    def __init__(self, state: ConductState, evidence: Evidence, calls: Calls) -> None:
        self.state = state
        self.evidence = evidence
        self.calls = calls

    @check
    def key_ball(self) -> None:
        """A ball keyed on the master board: the held ball during a claim, else the call it shows."""
        state = self.state
        key = state.now.key
        if key is None:
            return
        if state.phase == "claim":
            if state.board.held_ball is None and key.ball not in state.board.called:
                state.board.held_ball = key.ball
                if state.game.claim is not None:
                    state.game.claim.record.held_ball = key.ball
            return
        records = self.calls.records()
        pending = state.game.pending
        if pending is not None and records and records[-1].ball == pending.ball and not records[-1].keyed:
            # keyed while being called
            self.compare(records[-1], key.ball, pending.heard, pending.unsure, pending.time, pending.could_be)
        else:
            state.game.unmatched_key = key  # keyed before it is called

    def compare(
        self, record: CallRecord, keyed: Ball, heard: str, unsure: bool, at: float, could_be: tuple[Ball, ...]
    ) -> None:
        """A(5): a spoken call that differs from the keyed ball is a mis-call; A(4): a match shows the ball. The
        keyed ball is a witness, not the answer: a call heard as another ball stays that ball, and where its
        hearing left room for the keyed ball (`Utterance.could_be`) the mismatch is a doubt, never a violation."""
        if record.ball == keyed:
            record.keyed = True
            return
        doubts = [Doubt(at, Role.CALLER, heard, ROOM_FOR_THE_KEYED)] if keyed in could_be else []
        self.evidence.find("call-differs-from-board", heard=heard, unsure=unsure, keyed=keyed, doubts=doubts)
        spoken = self.evidence.spoken(keyed)
        self.evidence.prompt("board-differs", unsure=unsure, heard=heard, keyed=spoken, called=heard, doubts=doubts)
