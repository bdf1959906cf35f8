"""B(1)-B(8), C: a bingo stops the game; the floor reads the card and the winning numbers; the caller confirms."""

from __future__ import annotations

from collections.abc import Callable

from ..messages import ClaimOpened, ClaimRecord, ClaimResolved, Doubt, GamePlan, GameType, Output, Role
from .calling import Repeats
from .core import Calls, ProcedureSettings, Windows, called_ball, check, expires
from .correction import Correcting
from .evidence import Evidence
from .state import Claim, ConductState, Hearing, SideClaim

SAID_AGAIN = "a bingo this soon after another may be the same claim said again"
MAY_BE_THE_NUMBER = "a call heard unsure here may have been the number not called"
ROOM_FOR_THE_NUMBER = "the hearing of a call here left room for the number not called"
ROOM_FOR_A_CALL = "this hearing left room for a ball that was called: perhaps that ball, misheard"


class Claiming:
    """A claim from the bingo to its verdict: B(1) stop, B(2) balls in play, B(3) held ball, B(4) valid, B(5)
    invalid, B(7) card, B(8), C winning numbers. Reads the input in hand, the hearings, the board, the plan; writes
    the game's `claim`, `asked_other`, `won`, `won_at`, `held_next`, `held_hearing`, `dropped_claim`, `pending`,
    `unmatched_key`, `not_called_heard`, the board's held ball, the claims on the game's record, the state's
    `phase_unsure` and `phase_hearing`, the "bingo-unsure" and "ask-other" windows."""

    def __init__(
        self,
        state: ConductState,
        evidence: Evidence,
        windows: Windows,
        calls: Calls,
        repeats: Repeats,
        corrections: Correcting,
        settings: ProcedureSettings,
        emit: Callable[[Output], None],
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.calls = calls
        self.repeats = repeats
        self.corrections = corrections
        self.settings = settings
        self.emit = emit

    # ----- B(1): what is a claim ---------------------------------------------------------------------

    @check
    def signals_claim(self) -> bool:
        """B(1): a claim is a player's signal, or the floor's (or the caller's) report of one said as such ("bingo",
        "we have a bingo"). The word inside the caller's own sentence ("welcome to tonight's bingo") is no claim."""
        utterance = self.state.now.utterance
        if utterance is None or utterance.role is not Role.CALLER:
            return True
        return len(utterance.meanings) == 1 and not utterance.unknown

    @check
    def claim_unsure(self) -> bool:
        """B(1): the game is in its claim by a bingo heard unsure."""
        return self.state.phase_unsure

    @check
    def game_won(self) -> bool:
        """B(4): a valid bingo already ended the game."""
        return self.state.game.won

    def heard_aside(self, hearing: Hearing) -> None:
        """A player's or the floor's words heard unsure while balls are called, and taken as nothing: perhaps a bingo
        the recognizer could not make out (B(1)). "No claim is being verified" rests on them as on a bingo heard
        unsure and dropped (`dropped_claim`): the caller reading the winning numbers is not balls called again (A(6))
        nor calls said once (A(3)), until a new ball is said twice for sure (hall audio, held-out voices at 10 dB,
        where a player's bingo heard "b two", unsure, gave nine false violations)."""
        game = self.state.game
        if (
            self.state.phase == "calling"
            and hearing.unsure
            and hearing.role in (Role.PLAYER, Role.FLOOR)
            and game.dropped_claim is None
        ):
            game.dropped_claim = hearing

    # ----- B(1)-B(3): the game stops -----------------------------------------------------------------

    @check
    def open_claim(self) -> None:
        """B(1): the game stops; B(2): the balls called so far are in play; B(3): the held ball is kept."""
        state = self.state
        game = state.game
        assert game.record is not None
        pending = game.pending
        interrupted = pending.ball if pending is not None and not pending.prompted else None
        self.repeats.settle()
        game.pending = None
        self.corrections.settle()
        self.windows.cancel("repeat", "ask-other", "announce-completed")
        held = game.unmatched_key.ball if game.unmatched_key is not None else None
        game.unmatched_key = None
        state.board.held_ball = held
        record = ClaimRecord(time=state.now.time, held_ball=held)
        game.record.claims.append(record)
        cut_off = pending if interrupted is not None and state.now.unsure else None
        said = Hearing(pending.time, Role.CALLER, pending.heard, pending.unsure) if pending and interrupted else None
        game.claim = Claim(
            record=record,
            in_play=list(state.board.called),
            interrupted=interrupted,
            interrupted_hearing=said,
            cut_off=cut_off,
        )
        game.asked_other = False
        self.emit(ClaimOpened(game.record.number, state.now.time, held))
        if state.now.unsure:
            self.evidence.find("bingo-unsure")
            utterance = state.now.utterance
            # asked only if nothing sure settles it, and never before a card can have won: the board witnesses that
            # the hearing was no claim (a "bingo" heard in the crowd before the first call of a game at 10 dB made
            # the question)
            if self.could_have_won() and (utterance is None or utterance.confidence >= self.settings.claim_ask_floor):
                self.windows.open("bingo-unsure", self.settings.claim_wait)
        else:
            self.evidence.prompt("read-card")

    def could_have_won(self) -> bool:
        """Enough balls are called in this game for the smallest winning pattern of its type (`fewest_to_win`)."""
        plan = self.state.board.plan or GamePlan()
        cover_all = plan.type is GameType.COVER_ALL
        fewest = self.settings.fewest_to_win_cover_all if cover_all else self.settings.fewest_to_win
        return len(self.state.board.called) >= fewest

    @check
    def drop_unsure_claim(self) -> None:
        """The bingo was not sure and the caller goes on calling: follow the game, not the claim. A call the
        unsure bingo cut off is in hand again: perhaps the unsure hearing was its second saying (A(3))."""
        state = self.state
        game = state.game
        if game.claim is not None and game.record is not None and game.claim.record in game.record.claims:
            game.record.claims.remove(game.claim.record)
        if game.claim is not None and game.claim.cut_off is not None:
            game.pending = game.claim.cut_off
        game.claim = None
        state.phase_unsure = False
        game.dropped_claim = state.phase_hearing
        self.windows.cancel("bingo-unsure")

    @expires("bingo-unsure")
    def ask_if_bingo(self) -> None:
        """B(1): a bingo heard unsure, and nothing heard for sure since (the caller calling on, the floor reading a
        card, the bingo said again): ask. A question at once would stop a caller whose call was misheard as a bingo
        and who is about to say it the second time."""
        claim = self.state.game.claim
        if claim is None or not self.state.phase_unsure:
            return
        since = claim.record.time
        if any(h.time > since and not h.unsure for h in self.state.hearings):
            return
        self.evidence.prompt("bingo-unsure")

    @check
    def add_claim(self) -> None:
        """B(1), B(7): another bingo while a claim is verified is another claim, with its own card to read."""
        state = self.state
        game = state.game.record
        claim = state.game.claim
        hearing = self.evidence.hearing_in_hand()
        if claim is None or game is None or hearing is None:
            return
        previous = claim.records()[-1].time
        if hearing.time == previous:
            return  # "bingo bingo" in one breath is one claim
        record = ClaimRecord(time=state.now.time, held_ball=claim.record.held_ball)
        game.claims.append(record)
        claim.also.append(SideClaim(record, hearing, state.now.time - previous))
        self.emit(ClaimOpened(game.number, state.now.time, record.held_ball))
        if state.phase_unsure and not hearing.unsure:
            # the first bingo was heard unsure, this one sure: the game is stopped for sure now (B(1))
            state.phase_unsure = False
            state.phase_hearing = None
            self.windows.cancel("bingo-unsure")
            self.evidence.prompt("read-card")

    # ----- B(7), B(8), C: the card and the winning numbers --------------------------------------------

    @check
    def note_card(self) -> None:
        """B(7): the floor reads the card's manufacturer ID and serial number; with claims side by side, each card
        read goes to the first claim whose card still lacks what it gives."""
        meaning = self.state.now.meaning
        claim = self.state.game.claim
        if claim is None or meaning is None:
            return
        records = claim.records()
        if meaning.manufacturer:
            record = next((r for r in records if r.manufacturer is None), None)
            if record is None:
                record = claim.reading or records[-1]
            record.manufacturer = meaning.manufacturer
            claim.reading = record
        if meaning.serial:
            record = claim.reading if meaning.manufacturer else None
            if record is None or record.serial is not None:
                record = next((r for r in records if r.serial is None), claim.reading or records[-1])
            record.serial = meaning.serial
            claim.reading = record

    @check
    def confirm_winning_number(self) -> None:
        """B(8): each winning number the floor announces is confirmed on the master board."""
        claim = self.state.game.claim
        if claim is None:
            return
        ball = called_ball(self.state.now)
        record = claim.reading or claim.record
        if ball not in record.winning:
            record.winning.append(ball)
        if ball not in claim.in_play and ball not in record.not_called:
            record.not_called.append(ball)
            # heard sure, but as a sound-alike of a ball that was called ("n thirty one" with N 41 close behind)
            called_alike = self.calls.room_in_hand(lambda b: b in claim.in_play, ROOM_FOR_A_CALL)
            if self.state.now.unsure:
                claim.not_called_unsure = True  # perhaps a called ball, misheard: no violation rests on it
            elif called_alike:
                claim.not_called_doubts.extend(called_alike)
            else:
                self.state.game.not_called_heard.append(ball)
            # A call on the board heard unsure may have been this number, misheard: no violation rests on its
            # absence. Its two sayings agreeing on a ball tell that the call was repeated (A(3)), not which ball it
            # was (espeak en-029's "N thirty one" heard "n forty one" twice, then the floor's N 31).
            # Nor when a hearing of a call, sure or not, left room for this number (`CallRecord.could_be`): the same
            # voice's confusion repeats, so a call heard sure may be a sound-alike of the number too.
            known = {d.time for d in claim.not_called_doubts}
            for call in self.calls.records():
                if call.ball not in claim.in_play or call.time in known:
                    continue
                why = MAY_BE_THE_NUMBER if not call.sure else ROOM_FOR_THE_NUMBER if ball in call.could_be else None
                if why is not None:
                    claim.not_called_doubts.append(
                        Doubt(call.time, Role.CALLER, self.calls.heard_at(call.time, call.ball), why)
                    )

    @check
    def caller_call_during_claim(self) -> None:
        """B(1) no new ball, B(3) not the held ball, C the caller does not read the winning numbers."""
        claim = self.state.game.claim
        if claim is None:
            return
        ball = called_ball(self.state.now)
        plan = self.state.board.plan or GamePlan()
        if plan.type is GameType.COVER_ALL:
            if ball not in claim.in_play and ball not in claim.uncalled_read:
                claim.uncalled_read.append(ball)  # B(8): cover-all, the caller calls the numbers not called
            return
        # a hearing that left room for a ball in play may be the caller confirming a winning number, misheard
        held = self.state.board.held_ball
        doubts = self.calls.room_in_hand(lambda b: b in claim.in_play and b != held, ROOM_FOR_A_CALL)
        if ball == claim.interrupted:
            claim.interrupted = None  # the second saying the bingo cut off
        elif ball == held:
            self.evidence.find("held-ball-called", ball=ball, doubts=doubts)
        elif ball not in claim.in_play:
            self.evidence.find("call-during-claim", ball=ball, doubts=doubts)
        elif any(ball in r.winning for r in claim.records()):
            pass  # the caller confirms a number the floor announced (B(8))
        elif not claim.caller_read:
            claim.caller_read = True
            self.evidence.find("caller-read-winning-numbers")

    @check
    def check_verification(self) -> None:
        """B(7) each claim's card read, B(8) winning numbers announced and all called (cover-all: uncalled numbers
        called). A claim signalled beside another rests on how its own bingo was heard."""
        claim = self.state.game.claim
        if claim is None:
            return
        claims = [(claim.record, [], []), *((c.record, [c.hearing], self._same_claim(c)) for c in claim.also)]
        for record, rests_on, doubts in claims:
            since = record.time
            if record.manufacturer is None and record.serial is None:
                self.evidence.find("card-id-not-read", since=since, rests_on=rests_on, doubts=doubts)
            elif record.manufacturer is None or record.serial is None:
                have, missing = (
                    ("serial number", "manufacturer ID")
                    if record.manufacturer is None
                    else ("manufacturer ID", "serial number")
                )
                self.evidence.find(
                    "card-id-incomplete", since=since, rests_on=rests_on, doubts=doubts, have=have, missing=missing
                )
        since = claim.record.time
        plan = self.state.board.plan or GamePlan()
        records = claim.records()
        if plan.type is GameType.COVER_ALL:
            if not claim.uncalled_read:
                self.evidence.find("uncalled-numbers-not-read", since=since)
        elif not any(r.winning for r in records):
            # which card the floor's numbers belong to is inferred from the order of reading: only none at all is sure
            self.evidence.find("winning-numbers-not-read", since=since)
        not_called = list(dict.fromkeys(b for r in records for b in r.not_called))
        if not_called:
            # a ball missing from the board may have been called in speech we could not hear clearly (owed)
            balls = ", ".join(str(b) for b in not_called)
            self.evidence.find(
                "valid-with-uncalled-numbers",
                balls=balls,
                unsure=claim.not_called_unsure,
                doubts=claim.not_called_doubts,
            )

    def _same_claim(self, side: SideClaim) -> list[Doubt]:
        """A bingo a moment after another may be one player's bingo said twice ("Bingo! Bingo!"), not two cards."""
        if side.after > self.settings.claim_echo:
            return []
        h = side.hearing
        return [Doubt(h.time, h.role, h.text, SAID_AGAIN)]

    # ----- B(4), B(5): the verdict ------------------------------------------------------------------

    @check
    def resolve_valid(self) -> None:
        """B(4): the game is over; B(9) is due."""
        self._resolve(True)
        self.state.game.won = True
        self.state.game.won_at = self.state.now.time
        self.state.board.held_ball = None  # returned to the machine
        self.windows.open("ask-other", self.settings.answer_window)

    @check
    def resolve_invalid(self) -> None:
        """B(5): the held ball is the next call. With no ball keyed on the master board, the held ball is the call
        the bingo cut off before its second saying: the ball in the caller's hand when the game stopped."""
        state = self.state
        game = state.game
        assert game.claim is not None
        if state.board.held_ball is None and game.claim.interrupted is not None:
            state.board.held_ball = game.claim.interrupted
            game.held_hearing = game.claim.interrupted_hearing
        held = state.board.held_ball
        self._resolve(False)
        if not game.won:
            game.held_next = True
            said = [game.held_hearing] if game.held_hearing is not None else []
            named = f": {self.evidence.spoken(held)}" if held else ""
            self.evidence.prompt("call-held-ball", rests_on=said, held=named)

    def _resolve(self, valid: bool) -> None:
        """Each claim of the game's stop ruled valid or not; none is being verified after."""
        game = self.state.game.record
        claim = self.state.game.claim
        assert game is not None and claim is not None
        for record in claim.records():
            record.valid = valid
            self.emit(
                ClaimResolved(
                    game.number,
                    self.state.now.time,
                    valid,
                    record.manufacturer,
                    record.serial,
                    tuple(record.winning),
                    tuple(record.not_called),
                )
            )
        self.state.game.claim = None

    def flush_utterance(self) -> None:
        """B(8): one prompt naming the winning numbers just heard that were not called."""
        if self.state.game.not_called_heard:
            balls = ", ".join(self.evidence.spoken(b) for b in self.state.game.not_called_heard)
            self.state.game.not_called_heard = []
            claim = self.state.game.claim
            doubts = claim.not_called_doubts if claim is not None else []
            unsure = claim is not None and claim.not_called_unsure
            self.evidence.prompt("not-called", unsure=unsure, doubts=doubts, balls=balls)
