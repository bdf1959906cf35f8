"""B(1)-B(8), C: a bingo stops the game; the floor reads the card and the winning numbers; the caller confirms."""

from __future__ import annotations

from ..messages import ClaimOpened, ClaimRecord, ClaimResolved, Doubt, GamePlan, GameType, Role
from .core import MAY_BE_THE_NUMBER, ROOM_FOR_A_CALL, ROOM_FOR_THE_NUMBER, SAID_AGAIN, ConductCore
from .state import Claim, Hearing, SideClaim


class Claiming(ConductCore):
    """A claim from the bingo to its verdict: B(1) stop, B(3) held ball, B(5) invalid, B(7) card, B(8), C numbers."""

    def open_claim(self) -> None:
        """B(1): the game stops; B(2): the balls called so far are in play; B(3): the held ball is kept."""
        assert self.state.game.record is not None
        pending = self.state.game.pending
        interrupted = pending.ball if pending is not None and not pending.prompted else None
        self._settle_pending()
        self.state.game.pending = None
        self._settle_correction()
        self._cancel("repeat", "ask-other", "announce-completed")
        held = self.state.game.unmatched_key.ball if self.state.game.unmatched_key is not None else None
        self.state.game.unmatched_key = None
        self.state.board.held_ball = held
        record = ClaimRecord(time=self.state.now.time, held_ball=held)
        self.state.game.record.claims.append(record)
        cut_off = pending if interrupted is not None and self.state.now.unsure else None
        said = Hearing(pending.time, Role.CALLER, pending.heard, pending.unsure) if pending and interrupted else None
        self.state.game.claim = Claim(
            record=record,
            in_play=list(self.state.board.called),
            interrupted=interrupted,
            interrupted_hearing=said,
            cut_off=cut_off,
        )
        self.state.game.asked_other = False
        self.emit(ClaimOpened(self.state.game.record.number, self.state.now.time, held))
        if self.state.now.unsure:
            self.find("bingo-unsure")
            utterance = self.state.now.utterance
            if utterance is None or utterance.confidence >= self.settings.claim_ask_floor:
                self._due("bingo-unsure", self.settings.claim_wait)  # asked only if nothing sure settles it first
        else:
            self.prompt("read-card")

    def drop_unsure_claim(self) -> None:
        """The bingo was not sure and the caller goes on calling: follow the game, not the claim. A call the
        unsure bingo cut off is in hand again: perhaps the unsure hearing was its second saying (A(3))."""
        if (
            self.state.game.claim is not None
            and self.state.game.record is not None
            and self.state.game.claim.record in self.state.game.record.claims
        ):
            self.state.game.record.claims.remove(self.state.game.claim.record)
        if self.state.game.claim is not None and self.state.game.claim.cut_off is not None:
            self.state.game.pending = self.state.game.claim.cut_off
        self.state.game.claim = None
        self.state.phase_unsure = False
        self.state.game.dropped_claim = self.state.phase_hearing
        self._cancel("bingo-unsure")

    def _expired_bingo_unsure(self) -> None:
        """B(1): a bingo heard unsure, and nothing heard for sure since (the caller calling on, the floor reading a
        card, the bingo said again): ask. A question at once would stop a caller whose call was misheard as a bingo
        and who is about to say it the second time."""
        if self.state.game.claim is None or not self.state.phase_unsure:
            return
        since = self.state.game.claim.record.time
        if any(h.time > since and not h.unsure for h in self.state.hearings):
            return
        self.prompt("bingo-unsure")

    def add_claim(self) -> None:
        """B(1), B(7): another bingo while a claim is verified is another claim, with its own card to read."""
        claim = self.state.game.claim
        hearing = self.hearing_in_hand()
        if claim is None or self.state.game.record is None or hearing is None:
            return
        previous = claim.records()[-1].time
        if hearing.time == previous:
            return  # "bingo bingo" in one breath is one claim
        record = ClaimRecord(time=self.state.now.time, held_ball=claim.record.held_ball)
        self.state.game.record.claims.append(record)
        claim.also.append(SideClaim(record, hearing, self.state.now.time - previous))
        self.emit(ClaimOpened(self.state.game.record.number, self.state.now.time, record.held_ball))
        if self.state.phase_unsure and not hearing.unsure:
            # the first bingo was heard unsure, this one sure: the game is stopped for sure now (B(1))
            self.state.phase_unsure = False
            self.state.phase_hearing = None
            self._cancel("bingo-unsure")
            self.prompt("read-card")

    def note_card(self) -> None:
        """B(7): the floor reads the card's manufacturer ID and serial number; with claims side by side, each card
        read goes to the first claim whose card still lacks what it gives."""
        meaning = self.state.now.meaning
        if self.state.game.claim is None or meaning is None:
            return
        records = self.state.game.claim.records()
        if meaning.manufacturer:
            record = next((r for r in records if r.manufacturer is None), None)
            if record is None:
                record = self.state.game.claim.reading or records[-1]
            record.manufacturer = meaning.manufacturer
            self.state.game.claim.reading = record
        if meaning.serial:
            record = self.state.game.claim.reading if meaning.manufacturer else None
            if record is None or record.serial is not None:
                record = next((r for r in records if r.serial is None), self.state.game.claim.reading or records[-1])
            record.serial = meaning.serial
            self.state.game.claim.reading = record

    def confirm_winning_number(self) -> None:
        """B(8): each winning number the floor announces is confirmed on the master board."""
        claim = self.state.game.claim
        if claim is None:
            return
        ball = self._ball()
        record = claim.reading or claim.record
        if ball not in record.winning:
            record.winning.append(ball)
        if ball not in claim.in_play and ball not in record.not_called:
            record.not_called.append(ball)
            # heard sure, but as a sound-alike of a ball that was called ("n thirty one" with N 41 close behind)
            called_alike = self._room_in_hand(lambda b: b in claim.in_play, ROOM_FOR_A_CALL)
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
            for call in self._records():
                if call.ball not in claim.in_play or call.time in known:
                    continue
                why = MAY_BE_THE_NUMBER if not call.sure else ROOM_FOR_THE_NUMBER if ball in call.could_be else None
                if why is not None:
                    claim.not_called_doubts.append(
                        Doubt(call.time, Role.CALLER, self._heard_at(call.time, call.ball), why)
                    )

    def caller_call_during_claim(self) -> None:
        """B(1) no new ball, B(3) not the held ball, C the caller does not read the winning numbers."""
        claim = self.state.game.claim
        if claim is None:
            return
        ball = self._ball()
        plan = self.state.board.plan or GamePlan()
        if plan.type is GameType.COVER_ALL:
            if ball not in claim.in_play and ball not in claim.uncalled_read:
                claim.uncalled_read.append(ball)  # B(8): cover-all, the caller calls the numbers not called
            return
        # a hearing that left room for a ball in play may be the caller confirming a winning number, misheard
        doubts = self._room_in_hand(lambda b: b in claim.in_play and b != self.state.board.held_ball, ROOM_FOR_A_CALL)
        if ball == claim.interrupted:
            claim.interrupted = None  # the second saying the bingo cut off
        elif ball == self.state.board.held_ball:
            self.find("held-ball-called", ball=ball, doubts=doubts)
        elif ball not in claim.in_play:
            self.find("call-during-claim", ball=ball, doubts=doubts)
        elif any(ball in r.winning for r in claim.records()):
            pass  # the caller confirms a number the floor announced (B(8))
        elif not claim.caller_read:
            claim.caller_read = True
            self.find("caller-read-winning-numbers")

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
                self.find("card-id-not-read", since=since, rests_on=rests_on, doubts=doubts)
            elif record.manufacturer is None or record.serial is None:
                have, missing = (
                    ("serial number", "manufacturer ID")
                    if record.manufacturer is None
                    else ("manufacturer ID", "serial number")
                )
                self.find(
                    "card-id-incomplete", since=since, rests_on=rests_on, doubts=doubts, have=have, missing=missing
                )
        since = claim.record.time
        plan = self.state.board.plan or GamePlan()
        records = claim.records()
        if plan.type is GameType.COVER_ALL:
            if not claim.uncalled_read:
                self.find("uncalled-numbers-not-read", since=since)
        elif not any(r.winning for r in records):
            # which card the floor's numbers belong to is inferred from the order of reading: only none at all is sure
            self.find("winning-numbers-not-read", since=since)
        not_called = list(dict.fromkeys(b for r in records for b in r.not_called))
        if not_called:
            # a ball missing from the board may have been called in speech we could not hear clearly (owed)
            balls = ", ".join(str(b) for b in not_called)
            self.find(
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

    def resolve_valid(self) -> None:
        """B(4): the game is over; B(9) is due."""
        self._resolve(True)
        self.state.game.won = True
        self.state.game.won_at = self.state.now.time
        self.state.board.held_ball = None  # returned to the machine
        self._due("ask-other", self.settings.answer_window)

    def resolve_invalid(self) -> None:
        """B(5): the held ball is the next call. With no ball keyed on the master board, the held ball is the call
        the bingo cut off before its second saying: the ball in the caller's hand when the game stopped."""
        assert self.state.game.claim is not None
        if self.state.board.held_ball is None and self.state.game.claim.interrupted is not None:
            self.state.board.held_ball = self.state.game.claim.interrupted
            self.state.game.held_hearing = self.state.game.claim.interrupted_hearing
        held = self.state.board.held_ball
        self._resolve(False)
        if not self.state.game.won:
            self.state.game.held_next = True
            said = [self.state.game.held_hearing] if self.state.game.held_hearing is not None else []
            self.prompt("call-held-ball", rests_on=said, held=f": {self.spoken(held)}" if held else "")

    def _resolve(self, valid: bool) -> None:
        claim = self.state.game.claim
        assert self.state.game.record is not None and claim is not None
        for record in claim.records():
            record.valid = valid
            self.emit(
                ClaimResolved(
                    self.state.game.record.number,
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
            balls = ", ".join(self.spoken(b) for b in self.state.game.not_called_heard)
            self.state.game.not_called_heard = []
            claim = self.state.game.claim
            doubts = claim.not_called_doubts if claim is not None else []
            unsure = claim is not None and claim.not_called_unsure
            self.prompt("not-called", unsure=unsure, doubts=doubts, balls=balls)
