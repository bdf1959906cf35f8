"""The shared core of the rule's checks: the game's state, the windows that fall due, findings and prompts.

Each part of the rule (announcing, calling, outage, claim, closing, occasion) is a class of its own module that
builds on this core; `Conduct` (assistant/conduct/__init__.py) composes them into the one model the rule pack's
machine drives. What one part asks of another is declared here, once, as a method the other part fills in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from transitions import Machine

from ..grammar import Grammar
from ..messages import (
    Ball,
    CallMade,
    CallRecord,
    CallWithdrawn,
    Doubt,
    Finding,
    HeardForReview,
    Meaning,
    Output,
    Prompt,
    Role,
    Severity,
)
from ..rules import RuleError, RulePack
from .state import ConductState, Correction, Due, Hearing, Now, Pending

INPUT_TRIGGERS = ("game-start", "session-end", "board-key")
"""Triggers that come from inputs other than speech."""
RESTS_ON = "the finding rests on this hearing, heard unsure"
STATE_RESTS_ON = "the step the game was in rests on this hearing, heard unsure"
MAY_HOLD = "the words owed may have been said here, heard unsure"
MAY_HOLD_UNPLACED = "the words owed may have been said here, in words the grammar could not place"
SAID_AGAIN = "a bingo this soon after another may be the same claim said again"
MAY_BE_THE_NUMBER = "a call heard unsure here may have been the number not called"
ROOM_FOR_THE_NUMBER = "the hearing of a call here left room for the number not called"
ROOM_FOR_A_CALL = "this hearing left room for a ball that was called: perhaps that ball, misheard"
ROOM_FOR_THE_OTHER = "this hearing left room for the other ball: one ball, perhaps, heard two ways"
ROOM_FOR_ANOTHER_BALL = "this hearing left room for a ball not called yet: perhaps that ball, misheard"
ROOM_BEFORE = "the earlier hearing of the ball left room for a ball not called: perhaps it was that one"


@dataclass(frozen=True)
class ProcedureSettings:
    repeat_window: float = 10.0
    """Seconds for the second saying of a call (A(3)) and for the correct call after the A(5) sentence."""
    answer_window: float = 15.0
    """Seconds for a due announcement, "are there any other bingos?", "this game is completed", a mis-call fix."""
    claim_echo: float = 1.5
    """Seconds within which a player's second bingo may be the first said again ("Bingo! Bingo!"): the card it
    would owe (B(7)) is then uncertain, for review."""
    claim_wait: float = 4.0
    """Seconds a bingo heard unsure waits before "Was that a bingo?": a sure hearing in them (the caller's call said
    the second time, the floor reading the card) answers it."""
    claim_ask_floor: float = 0.2
    """A bingo heard with less confidence than this is more likely not a bingo: it is kept for review (B(1),
    uncertain) and the game followed as before, without asking the caller "Was that a bingo?" (the crowd's
    murmur after "are there any other bingos?" read as "bingo" at 0.02)."""
    prize_cap: float = 2500.0
    """Aggregate prizes offered or given in one occasion (E(2)(f))."""
    min_confidence: float = 0.5
    """An utterance heard with less confidence counts as unsure, like one the recognizer flagged uncertain:
    a repeat that differs is then a mis-hearing (uncertain), not a mis-call (A(5))."""


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"


_CALLBACK_KEYS = ("conditions", "unless", "before", "after", "prepare")


def _bound(transition: dict[str, Any], checks: dict[str, Callable[[], object]]) -> dict[str, Any]:
    """A rule pack transition with its named checks replaced by the checks themselves."""
    bound = dict(transition)
    for key in _CALLBACK_KEYS:
        names = bound.get(key)
        if names is not None:
            bound[key] = [checks[n] for n in ([names] if isinstance(names, str) else names)]
    return bound


def dollars(amount: float) -> str:
    return f"{amount:,.0f}" if amount == int(amount) else f"{amount:,.2f}"


def clock(t: float) -> str:
    minutes, seconds = divmod(t, 60)
    return f"{int(minutes):02d}:{seconds:04.1f}"


class ConductCore:
    """The board, the game record, the windows due, findings and prompts: what every part of the rule shares."""

    def __init__(
        self, rules: RulePack, grammar: Grammar, settings: ProcedureSettings, emit: Callable[[Output], None]
    ) -> None:
        self.rules = rules
        self.grammar = grammar
        self.settings = settings
        self.emit = emit
        self.state = ConductState()
        checks: dict[str, Callable[[], object]] = {}
        for spec in rules.transitions:
            unknown = [n for n in spec.conditions + spec.callbacks if not callable(getattr(self, n, None))]
            if unknown:
                raise RuleError(
                    f"{rules.source or 'rule pack'}: transition {spec.trigger!r} names unknown checks {unknown}"
                )
            checks.update((n, getattr(self, n)) for n in spec.conditions + spec.callbacks)
        for state, step in rules.steps.items():
            if step not in grammar.steps:
                raise RuleError(f"{rules.source or 'rule pack'}: state {state!r} maps to unknown grammar step {step!r}")
        config = dict(rules.machine)
        self.machine = Machine(
            model=self.state,
            model_attribute="phase",
            states=config["states"],
            transitions=[_bound(t, checks) for t in config["transitions"]],
            initial=config["initial"],
            auto_transitions=False,
            ignore_invalid_triggers=True,
        )

    # ----- driving the machine -------------------------------------------------------------------

    def fire(self, trigger: str) -> bool:
        """Drive the machine; False when no transition of the current state took the trigger."""
        event = self.machine.events.get(trigger)
        if event is None:
            return False
        before = self.state.phase
        taken = bool(event.trigger(self.state))
        if self.state.phase != before:
            self.state.phase_unsure = trigger not in ("call", *INPUT_TRIGGERS) and self.state.now.unsure
            self.state.phase_hearing = self.hearing_in_hand() if self.state.phase_unsure else None
        return taken

    def hearing_in_hand(self) -> Hearing | None:
        utterance = self.state.now.utterance
        if utterance is None:
            return None
        return Hearing(self.state.now.time, utterance.role, self.state.now.heard, self.state.now.unsure)

    def expire(self, time: float, inclusive: bool = False) -> None:
        """Let the windows that closed before `time` speak: a prompt or a finding, never a hang."""
        while self.state.game.dues:
            due = min(self.state.game.dues.values(), key=lambda d: d.deadline)
            if due.deadline > time or (due.deadline == time and not inclusive):
                return
            del self.state.game.dues[due.kind]
            saved = self.state.now
            self.state.now = Now(time=due.deadline)
            getattr(self, "_expired_" + due.kind.replace("-", "_"))()
            self.state.now = saved

    def _due(self, kind: str, window: float) -> None:
        self.state.game.dues[kind] = Due(kind, self.state.now.time + window)

    def _cancel(self, *kinds: str) -> None:
        for kind in kinds:
            self.state.game.dues.pop(kind, None)

    # ----- speaking: findings and prompts --------------------------------------------------------

    def find(
        self,
        code: str,
        *,
        heard: str | None = None,
        unsure: bool = False,
        at: float | None = None,
        since: float | None = None,
        rests_on: Sequence[Hearing] = (),
        doubts: Sequence[Doubt] = (),
        **fields: object,
    ) -> None:
        """A finding, judged by the rule of evidence, the same way for every clause.

        It is a violation (or a warning) only when every hearing it rests on was sure (the game's place in the
        hall's program among them, for a finding that rests on the plan: `plan_doubts`) and, for a finding made
        from an absence (`owed` in the rule pack: words that were not heard), no unsure hearing of the role that
        owed the words falls in the window where they were owed (`since`, by default the game's start, up to now,
        reaching back over the role's unsure hearings just before it: see `heard_unsure`). Otherwise it is
        uncertain, and its `doubts` name the hearings that made it so.

        The hearings it rests on: the one in hand, the one that put the machine in its state (a claim heard
        unsure), and the earlier hearing the check names (`heard`, `at`), unsure when `unsure`. `doubts`: what
        else the check could not tell from what was heard (two bingos a moment apart may be one claim)."""
        spec = self.rules.findings[code]
        if since is not None and not spec.owed:
            raise RuleError(f"finding {code!r} is made from an absence (since {since}) but names no role that owed it")
        found, hidden = self._evidence(
            spec.owed,
            spec.any_words,
            spec.plan,
            heard=heard,
            unsure=unsure,
            at=at,
            since=since,
            rests_on=rests_on,
            doubts=doubts,
        )
        message = spec.message
        if hidden is not None:
            where = "the unsure hearing" if hidden.unsure else "words"
            words = hidden.text.replace("{", "{{").replace("}", "}}")
            message += f"; perhaps said in {where} at {clock(hidden.time)} ('{words}')"
        uncertain = bool(found) or self.state.phase_unsure or spec.severity is Severity.UNCERTAIN
        heard = self.state.now.heard if heard is None else heard
        finding = Finding(
            clause=spec.clause,
            code=code,
            severity=Severity.UNCERTAIN if uncertain else spec.severity,
            time=self.state.now.time if at is None else at,
            heard=heard,
            message=message.format_map(_Fields(heard=heard, **fields)),
            game=self.state.game.record.number if self.state.game.record else None,
            doubts=tuple(found),
        )
        if self.state.game.record is None or spec.clause.startswith("E(2)"):
            self.state.occasion.findings.append(finding)
        else:
            self.state.game.record.findings.append(finding)
        self.emit(finding)
        if finding.severity is Severity.VIOLATION:
            said = spec.clause.replace("(", " ").replace(")", "").strip()  # "A(3)" is said "A 3"
            self.prompt("violation-recorded", clause=said, what=code.replace("-", " "))

    def _evidence(
        self,
        owed: tuple[str, ...],
        any_words: bool,
        plan: bool,
        *,
        heard: str | None = None,
        unsure: bool = False,
        at: float | None = None,
        since: float | None = None,
        rests_on: Sequence[Hearing] = (),
        doubts: Sequence[Doubt] = (),
    ) -> tuple[list[Doubt], Hearing | None]:
        """What a finding or an accusing prompt rests on that was not heard for sure (`find`): its doubts, each
        hearing named once, and the hearing where the owed words may hide (`heard_unsure`), if any."""
        found = [*doubts, *(Doubt(h.time, h.role, h.text, RESTS_ON) for h in rests_on if h.unsure)]
        in_hand = self.hearing_in_hand()
        if unsure:
            role = in_hand.role if in_hand is not None else Role(owed[0]) if owed else Role.CALLER
            said = at if at is not None else since if since is not None else self.state.now.time
            found.append(Doubt(said, role, self.state.now.heard if heard is None else heard, RESTS_ON))
        if in_hand is not None and in_hand.unsure:
            found.append(Doubt(in_hand.time, in_hand.role, in_hand.text, RESTS_ON))
        if self.state.phase_unsure and self.state.phase_hearing is not None:
            h = self.state.phase_hearing
            found.append(Doubt(h.time, h.role, h.text, STATE_RESTS_ON))
        if plan:
            found.extend(self.state.game.plan_doubts)
        if self.state.game.dropped_claim is not None:
            h = self.state.game.dropped_claim  # "no claim is being verified" rests on this bingo being none
            found.append(Doubt(h.time, h.role, h.text, STATE_RESTS_ON))
        hidden = None
        if owed:
            start = since if since is not None else (self.state.game.record.start if self.state.game.record else 0.0)
            hidden = self.heard_unsure(owed, start, any_words=any_words)
            if hidden is not None:
                found.append(
                    Doubt(hidden.time, hidden.role, hidden.text, MAY_HOLD if hidden.unsure else MAY_HOLD_UNPLACED)
                )
        first: dict[tuple[float, str], Doubt] = {}
        for d in found:
            first.setdefault((d.time, d.heard), d)  # a hearing is named once, for the first reason found
        return list(first.values()), hidden

    def heard_unsure(self, roles: tuple[str, ...], since: float, any_words: bool = False) -> Hearing | None:
        """The latest hearing of one of these roles that may hold words it owed since `since`: one heard unsure at
        or after `since` (whatever it was read as, it may have been anything the role had to say), or, for words
        that may be said in any words (`FindingSpec.any_words`), one heard after `since` in words the grammar could
        not place, the hearing in hand aside (a hall's own words for an approval or an announcement are words said,
        not silence).

        The window reaches back before `since` over the role's unsure hearings that come right before it, up to
        its last sure hearing: where a window opens is known only as well as the hearings around it (a call's
        first saying heard unsure, then its second heard sure, leaves the first owed; the unsure one was it). The
        hearing that opened the window is no such hearing, whatever words of it were left unplaced ("looks like
        we lost power" opens the outage; it holds no approval)."""
        in_hand = self.state.hearings[-1] if self.state.now.utterance is not None and self.state.hearings else None
        for hearing in reversed(self.state.hearings):
            if hearing.role.value not in roles:
                continue
            if hearing.unsure:
                return hearing
            if hearing.time < since:
                return None
            if any_words and hearing.unplaced and hearing.time > since and hearing is not in_hand:
                return hearing
        return None

    def prompt(
        self,
        kind: str,
        *,
        since: float | None = None,
        unsure: bool = False,
        rests_on: Sequence[Hearing] = (),
        doubts: Sequence[Doubt] = (),
        **fields: object,
    ) -> None:
        """Tell the caller. A prompt that tells the caller something went wrong (`asks` in the rule pack: not
        called, say it again, the error sentence, the held ball, the board differs) rests on the same evidence as
        a finding (`_evidence`: the hearings it rests on, unsure speech or a gap of the role that owed the words
        since `since`, the claim or the plan in doubt): with any doubt it asks instead of asserting."""
        spec = self.rules.prompts[kind]
        if spec.asks is not None:
            heard = fields.get("heard")
            found, _ = self._evidence(
                spec.owed,
                False,
                False,
                heard=None if heard is None else str(heard),
                unsure=unsure,
                since=since,
                rests_on=rests_on,
                doubts=doubts,
            )
            if found or self.state.phase_unsure:
                kind, spec = spec.asks, self.rules.prompts[spec.asks]
        fields.setdefault("heard", self.state.now.heard)
        text = spec.text.format_map(_Fields(fields))
        self.emit(Prompt(time=self.state.now.time, text=text, kind=kind, priority=spec.priority, clause=spec.clause))

    def keep_for_review(self, untaken: Sequence[Meaning]) -> None:
        """Caller speech the grammar could not place, and calls naming no ball that no step took, go on the record
        for a person to judge: they never vanish, and they are no finding on their own."""
        utterance = self.state.now.utterance
        if utterance is None:
            return
        reasons = []
        if utterance.role is Role.CALLER:
            if utterance.unknown:
                reasons.append(f"words the grammar cannot place: {' '.join(utterance.unknown)}")
            elif not utterance.meanings:
                reasons.append("not understood")
        for meaning in untaken:
            if meaning.intent == "bingo":
                reasons.append(f"'{meaning.words}' in the caller's own sentence is no claim")
            elif meaning.number is not None:
                column = Ball(meaning.number).letter
                reasons.append(f"'{meaning.words}' names no ball ({meaning.number} is under {column})")
        if not reasons:
            return
        item = HeardForReview(
            game=self.state.game.record.number if self.state.game.record else None,
            time=self.state.now.time,
            role=utterance.role,
            heard=utterance.text,
            reason="; ".join(reasons),
            unsure=self.state.now.unsure,
        )
        (self.state.game.record.review if self.state.game.record else self.state.occasion.review).append(item)
        self.emit(item)

    def spoken(self, ball: Ball) -> str:
        return self.grammar.spoken(ball)

    def _ball(self) -> Ball:
        meaning = self.state.now.meaning
        if meaning is None or meaning.ball is None:
            raise RuleError("a call check ran without a called ball")
        return meaning.ball

    # ----- conditions ----------------------------------------------------------------------------

    def said_by_caller(self) -> bool:
        return self.state.now.utterance is not None and self.state.now.utterance.role is Role.CALLER

    def said_by_floor(self) -> bool:
        return self.state.now.utterance is not None and self.state.now.utterance.role is Role.FLOOR

    def heard_aside(self, hearing: Hearing) -> None:
        """A player's or the floor's words heard unsure while balls are called, and taken as nothing: perhaps a bingo
        the recognizer could not make out (B(1)). "No claim is being verified" rests on them as on a bingo heard
        unsure and dropped (`dropped_claim`): the caller reading the winning numbers is not balls called again (A(6))
        nor calls said once (A(3)), until a new ball is said twice for sure (hall audio, held-out voices at 10 dB,
        where a player's bingo heard "b two", unsure, gave nine false violations)."""
        if (
            self.state.phase == "calling"
            and hearing.unsure
            and hearing.role in (Role.PLAYER, Role.FLOOR)
            and self.state.game.dropped_claim is None
        ):
            self.state.game.dropped_claim = hearing

    def signals_claim(self) -> bool:
        """B(1): a claim is a player's signal, or the floor's (or the caller's) report of one said as such ("bingo",
        "we have a bingo"). The word inside the caller's own sentence ("welcome to tonight's bingo") is no claim."""
        utterance = self.state.now.utterance
        if utterance is None or utterance.role is not Role.CALLER:
            return True
        return len(utterance.meanings) == 1 and not utterance.unknown

    def said_by_player(self) -> bool:
        return self.state.now.utterance is not None and self.state.now.utterance.role is Role.PLAYER

    def has_calls(self) -> bool:
        return bool(self.state.board.called)

    def game_won(self) -> bool:
        return self.state.game.won

    def claim_unsure(self) -> bool:
        return self.state.phase_unsure

    # ----- the board's calls ---------------------------------------------------------------------

    def _add_call(self, ball: Ball) -> CallRecord:
        assert self.state.game.record is not None
        record = CallRecord(ball, self.state.now.time, sure=not self.state.now.unsure, could_be=list(self._could_be()))
        self.state.game.record.calls.append(record)
        self.state.board.called.append(ball)
        self.emit(CallMade(self.state.game.record.number, ball, self.state.now.time, self.state.now.heard))
        return record

    def _withdraw(self, ball: Ball) -> None:
        assert self.state.game.record is not None
        for record in reversed(self.state.game.record.calls):
            if record.ball == ball and not record.withdrawn:
                record.withdrawn = True
                break
        if ball in self.state.board.called:
            self.state.board.called.remove(ball)
        self.emit(CallWithdrawn(self.state.game.record.number, ball, self.state.now.time))

    def _said_once(self, ball: Ball) -> None:
        """The call in hand is this ball, said once as just heard: its second saying is due (A(3))."""
        self.state.game.pending = Pending(
            ball, self.state.now.time, self.state.now.heard, self.state.now.unsure, could_be=self._could_be()
        )
        self._due("repeat", self.settings.repeat_window)

    def _could_be(self) -> tuple[Ball, ...]:
        """The other balls the hearing in hand left room for (`Utterance.could_be`: the recognizer's sound-alikes)."""
        utterance = self.state.now.utterance
        return utterance.could_be if utterance is not None else ()

    def _room_in_hand(self, among: Callable[[Ball], bool], why: str) -> list[Doubt]:
        """The hearing in hand as a doubt, for `why`, when it left room for a ball `among` accepts."""
        in_hand = self.hearing_in_hand()
        if in_hand is None or not any(among(b) for b in self._could_be()):
            return []
        return [Doubt(in_hand.time, in_hand.role, in_hand.text, why)]

    def _heard_at(self, time: float, ball: Ball) -> str:
        """The caller's words heard at this time (the ball's words when no hearing is kept)."""
        return next(
            (h.text for h in self.state.hearings if h.time == time and h.role is Role.CALLER), self.spoken(ball)
        )

    def _heard_sure(self, ball: Ball) -> bool:
        """The ball is on the board by a sure hearing (not only by unsure ones, which may have been anything)."""
        return any(c.sure for c in self._records() if c.ball == ball)

    def _records(self) -> list[CallRecord]:
        return [c for c in self.state.game.record.calls if not c.withdrawn] if self.state.game.record else []

    def _last_record_age(self) -> float:
        records = self._records()
        return self.state.now.time - records[-1].time if records else float("inf")

    # ----- what one part asks of another (each filled in by the part named) ----------------------

    def _limit(self) -> int | None:
        """D: the number of balls of a limited game, as announced or planned (announcing)."""
        raise NotImplementedError

    def _count_prize(self) -> None:
        """E(2)(f): the game's prize counts toward the occasion's cap (occasion)."""
        raise NotImplementedError

    def _new_ball(self, ball: Ball) -> None:
        """The next ball enters play (calling)."""
        raise NotImplementedError

    def _repeated(self) -> None:
        """A(3): the call in hand was said the second time (calling)."""
        raise NotImplementedError

    def _settle_pending(self, closing: bool = False) -> None:
        """A(3): the call in hand will not be said again (calling)."""
        raise NotImplementedError

    def _not_repeated(self, pending: Pending, next_ball: Ball | None = None) -> None:
        """A(3): the call in hand was said once; A(2) a warning when the next ball came (calling)."""
        raise NotImplementedError

    def _settle_correction(self) -> None:
        """A(5): a mis-call left open is a finding (correction)."""
        raise NotImplementedError

    def _correct(self, correction: Correction, ball: Ball) -> None:
        """A(5)(c): the correct call after the error sentence (correction)."""
        raise NotImplementedError

    def _compare_key(self, record: CallRecord, keyed: Ball, heard: str, unsure: bool) -> None:
        """A(4), A(5): a call against the ball keyed on the master board (correction)."""
        raise NotImplementedError

    def _finish(self, status: str) -> None:
        """Close the game with this status (occasion)."""
        raise NotImplementedError
