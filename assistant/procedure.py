"""The procedure engine: N.M. Admin. Code § 15.4.7.11 as a `transitions` machine declared in a rule pack.

The rule pack (config/rules/nm-15.4.7.11.yaml) holds the states, the transitions (triggered by the grammar's
intents), the findings with their clauses and messages, and the prompts. This module holds the named checks the
transitions call; each cites its clause. Time moves only with the inputs, so a replay gives the same outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from transitions import Machine

from .board import Board
from .diagram import write_diagram
from .grammar import Grammar
from .messages import (
    Ball,
    BoardKey,
    CallMade,
    CallRecord,
    CallWithdrawn,
    ClaimOpened,
    ClaimRecord,
    ClaimResolved,
    Finding,
    GameClosed,
    GameOpened,
    GamePlan,
    GameRecord,
    GameStart,
    GameType,
    Input,
    Meaning,
    OccasionRecord,
    OutageRecord,
    Output,
    Prompt,
    Role,
    SessionEnd,
    Severity,
    StepChanged,
    Tick,
    Utterance,
    end_of,
    time_of,
)
from .rules import DEFAULT_RULES, ClauseStatus, RuleError, RulePack, clause_table

INPUT_TRIGGERS = ("game-start", "session-end", "board-key")
"""Triggers that come from inputs other than speech."""


@dataclass(frozen=True)
class ProcedureSettings:
    repeat_window: float = 10.0
    """Seconds for the second saying of a call (A(3)) and for the correct call after the A(5) sentence."""
    answer_window: float = 15.0
    """Seconds for a due announcement, "are there any other bingos?", "this game is completed", a mis-call fix."""
    prize_cap: float = 2500.0
    """Aggregate prizes offered or given in one occasion (E(2)(f))."""
    min_confidence: float = 0.5
    """An utterance heard with less confidence counts as unsure, like one the recognizer flagged uncertain:
    a repeat that differs is then a mis-hearing (uncertain), not a mis-call (A(5))."""


@dataclass
class _Now:
    """The input being handled: what the checks read."""

    time: float = 0.0
    utterance: Utterance | None = None
    meaning: Meaning | None = None
    plan: GamePlan | None = None
    key: BoardKey | None = None
    ending: bool = False
    """The recording or live session ends: a call still inside its repeat window is not held against it."""
    unsure: bool = False
    """The utterance was heard unsure (flagged by the recognizer or below the confidence floor)."""

    @property
    def heard(self) -> str:
        if self.utterance is None:
            return ""
        if len(self.utterance.meanings) > 1 and self.meaning is not None:
            return self.meaning.words
        return self.utterance.text


@dataclass(frozen=True)
class _Hearing:
    """Something heard unsure: owed words may hide in it."""

    time: float
    role: Role
    text: str


@dataclass
class _Pending:
    """A call said once, waiting for its second saying (A(3))."""

    ball: Ball
    time: float
    heard: str
    unsure: bool
    prompted: bool = False


@dataclass
class _Correction:
    """A(5): a mis-call noticed (a repeat that differs) or announced (the error sentence)."""

    time: float
    heard: str
    unsure: bool
    wrong: Ball | None
    sentence: bool = False
    """The error sentence (or a paraphrase of it) was said: the next call is the correct number."""
    exact: bool = False
    """The exact words of A(5)(b) were said."""
    second: Ball | None = None
    """The differing second saying that raised the doubt."""
    pending_heard: str = ""


@dataclass
class _Announced:
    last_ball_status: bool | None = None
    ball_count: int | None = None
    cards_sold: int | None = None
    prize: float | None = None
    last_ball: bool = False


@dataclass
class _Claim:
    record: ClaimRecord
    in_play: list[Ball]
    """B(2): only the balls called before the bingo are in play."""
    caller_read: bool = False
    uncalled_read: list[Ball] = field(default_factory=list)
    interrupted: Ball | None = None
    """The call the bingo cut off before its second saying: saying it now is no reading (C)."""


@dataclass
class _Due:
    kind: str
    deadline: float


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"


class Conduct:
    """The model the rule pack's machine drives: the board, the game record and the named checks."""

    state: str

    def __init__(
        self, rules: RulePack, grammar: Grammar, settings: ProcedureSettings, emit: Callable[[Output], None]
    ) -> None:
        self.rules = rules
        self.grammar = grammar
        self.settings = settings
        self.emit = emit
        self.occasion = OccasionRecord()
        self.board = Board()
        self.game: GameRecord | None = None
        self.now = _Now()
        self.state_unsure = False
        self.outage: OutageRecord | None = None
        self.outage_flagged = False
        self.unsure_hearings: list[_Hearing] = []
        self._reset_game()
        known = set(dir(self))
        for spec in rules.transitions:
            unknown = [n for n in spec.conditions + spec.callbacks if n not in known]
            if unknown:
                raise RuleError(
                    f"{rules.source or 'rule pack'}: transition {spec.trigger!r} names unknown checks {unknown}"
                )
        for state, step in rules.steps.items():
            if step not in grammar.steps:
                raise RuleError(f"{rules.source or 'rule pack'}: state {state!r} maps to unknown grammar step {step!r}")
        config = dict(rules.machine)
        self.machine = Machine(
            model=self,
            states=config["states"],
            transitions=config["transitions"],
            initial=config["initial"],
            auto_transitions=False,
            ignore_invalid_triggers=True,
        )

    def _reset_game(self) -> None:
        self.pending: _Pending | None = None
        self.unrepeated: list[Ball] = []
        self.correction: _Correction | None = None
        self.announced = _Announced()
        self.claim: _Claim | None = None
        self.asked_other = False
        self.won = False
        self.held_next = False
        self.unmatched_key: BoardKey | None = None
        self.prize_counted = False
        self.dues: dict[str, _Due] = {}
        self.not_called_heard: list[Ball] = []
        self.won_at = 0.0

    # ----- driving the machine -------------------------------------------------------------------

    def fire(self, trigger: str) -> None:
        event = self.machine.events.get(trigger)
        if event is None:
            return
        before = self.state
        event.trigger(self)
        if self.state != before:
            self.state_unsure = trigger not in ("call", *INPUT_TRIGGERS) and self.now.unsure

    def expire(self, time: float, inclusive: bool = False) -> None:
        """Let the windows that closed before `time` speak: a prompt or a finding, never a hang."""
        while self.dues:
            due = min(self.dues.values(), key=lambda d: d.deadline)
            if due.deadline > time or (due.deadline == time and not inclusive):
                return
            del self.dues[due.kind]
            saved = self.now
            self.now = _Now(time=due.deadline)
            getattr(self, "_expired_" + due.kind.replace("-", "_"))()
            self.now = saved

    def _due(self, kind: str, window: float) -> None:
        self.dues[kind] = _Due(kind, self.now.time + window)

    def _cancel(self, *kinds: str) -> None:
        for kind in kinds:
            self.dues.pop(kind, None)

    # ----- speaking: findings and prompts --------------------------------------------------------

    def find(
        self,
        code: str,
        *,
        heard: str | None = None,
        unsure: bool = False,
        at: float | None = None,
        since: float | None = None,
        **fields: object,
    ) -> None:
        """A finding; one made from an absence (`owed` in the rule pack) is uncertain when a hearing of
        the role that owed the words was unsure between `since` (default: the game's start) and now."""
        spec = self.rules.findings[code]
        unsure = unsure or self.now.unsure or self.state_unsure or spec.severity is Severity.UNCERTAIN
        message = spec.message
        if spec.owed and not unsure:
            start = since if since is not None else (self.game.start if self.game else 0.0)
            hidden = self.heard_unsure(spec.owed, start)
            if hidden is not None:
                unsure = True
                words = hidden.text.replace("{", "{{").replace("}", "}}")
                message += f"; perhaps said in the unsure hearing at {_clock(hidden.time)} ('{words}')"
        heard = self.now.heard if heard is None else heard
        finding = Finding(
            clause=spec.clause,
            code=code,
            severity=Severity.UNCERTAIN if unsure else spec.severity,
            time=self.now.time if at is None else at,
            heard=heard,
            message=message.format_map(_Fields(heard=heard, **fields)),
            game=self.game.number if self.game else None,
        )
        if self.game is None or spec.clause.startswith("E(2)"):
            self.occasion.findings.append(finding)
        else:
            self.game.findings.append(finding)
        self.emit(finding)

    def heard_unsure(self, roles: tuple[str, ...], since: float) -> _Hearing | None:
        """The latest hearing of one of these roles, at or after `since`, that was unsure. Whatever it was read
        as, an unsure hearing may have been anything the role had to say."""
        for hearing in reversed(self.unsure_hearings):
            if hearing.time < since:
                return None
            if hearing.role.value in roles:
                return hearing
        return None

    def prompt(self, kind: str, **fields: object) -> None:
        spec = self.rules.prompts[kind]
        text = spec.text.format_map(_Fields(fields))
        self.emit(Prompt(time=self.now.time, text=text, kind=kind, priority=spec.priority, clause=spec.clause))

    def spoken(self, ball: Ball) -> str:
        return self.grammar.spoken(ball)

    def _ball(self) -> Ball:
        meaning = self.now.meaning
        if meaning is None or meaning.ball is None:
            raise RuleError("a call check ran without a called ball")
        return meaning.ball

    # ----- conditions ----------------------------------------------------------------------------

    def said_by_caller(self) -> bool:
        return self.now.utterance is not None and self.now.utterance.role is Role.CALLER

    def said_by_floor(self) -> bool:
        return self.now.utterance is not None and self.now.utterance.role is Role.FLOOR

    def has_calls(self) -> bool:
        return bool(self.board.called)

    def game_won(self) -> bool:
        return self.won

    def claim_unsure(self) -> bool:
        return self.state_unsure

    # ----- games of the occasion -----------------------------------------------------------------

    def open_game(self) -> None:
        """A game of the hall's program begins; E(2)(f): warn before its prize would cross the cap."""
        plan = self.now.plan or GamePlan()
        self._reset_game()
        number = len(self.occasion.games) + 1
        self.game = GameRecord(number=number, plan=plan, start=self.now.time)
        self.occasion.games.append(self.game)
        self.unsure_hearings = [h for h in self.unsure_hearings if h.time >= self.now.time]
        self.board = Board(game_number=number, plan=plan)
        self.emit(GameOpened(number, plan, self.now.time))
        if plan.prize:
            total = self.occasion.prizes_total + plan.prize
            if total > self.settings.prize_cap:
                self.find(
                    "prize-cap-ahead",
                    heard="",
                    game=number,
                    prize=_dollars(plan.prize),
                    total=_dollars(total),
                    cap=_dollars(self.settings.prize_cap),
                )
                self.prompt("prize-cap", total=_dollars(total))
        self._due("announce", self.settings.answer_window)

    def open_unplanned_game(self) -> None:
        """Words of a game came with no @game line: follow it as a regular game, and say so in the notes."""
        number = len(self.occasion.games) + 1
        self.occasion.notes.append(
            f"game {number}: no @game line (hall program) before its first words; followed as a regular game"
        )
        saved = self.now.plan
        self.now.plan = GamePlan()
        self.open_game()
        self.now.plan = saved

    def close_game(self) -> None:
        """The next game or the end of the session closes what is open: each missing step is a finding."""
        if self.game is None:
            return
        self.expire(self.now.time, inclusive=True)
        if self.state == "announcing" and not self.board.called:
            self._finish("not-played")
        elif self.state == "claim":
            since = self.claim.record.time if self.claim is not None else None
            self.find("claim-not-resolved", heard="", since=since)
            self._finish("claim-unresolved")
        elif self.state == "closing":
            if not self.asked_other:
                self.find("other-bingos-not-asked", heard="", since=self.won_at)
            self.find("game-not-completed", heard="", since=self.won_at)
            self._finish("won-not-completed")
        else:
            self._finish("stopped")

    def complete_game(self) -> None:
        """B(9): "this game is completed", after "are there any other bingos?" when the game was won."""
        if self.won:
            if not self.asked_other:
                self.find("other-bingos-not-asked", since=self.won_at)
            if self.now.meaning is not None and self.now.meaning.intent.endswith("paraphrase"):
                self.find("game-completed-paraphrased")
        self._finish("completed")

    def _finish(self, status: str) -> None:
        """Close the game: a call said once (A(3)) or a mis-call left open (A(5)) is a finding."""
        assert self.game is not None
        self._settle_pending(closing=not self.now.ending)
        self._settle_correction()
        self.game.status = status
        self.emit(GameClosed(self.game.number, status, self.now.time))
        self.game = None
        self.dues.clear()
        self.claim = None

    def _settle_pending(self, closing: bool = False) -> None:
        """A(3): the call in hand was never said twice."""
        pending = self.pending
        if pending is None:
            return
        self.pending = None
        self._cancel("repeat")
        if pending.prompted or closing:
            self.find(
                "call-not-repeated", heard=pending.heard, unsure=pending.unsure, since=pending.time, ball=pending.ball
            )
            self.unrepeated.append(pending.ball)

    def _settle_correction(self) -> None:
        """A(5): a mis-call noticed but never corrected, or the error sentence with no correct call after it."""
        correction = self.correction
        if correction is None:
            return
        self.correction = None
        self._cancel("miscall", "correction-call")
        if correction.sentence:
            self.find(
                "correction-call-missing", heard=correction.heard, unsure=correction.unsure, since=correction.time
            )
        else:
            self.find(
                "miscall-not-corrected",
                heard=correction.heard,
                unsure=correction.unsure,
                since=correction.time,
                ball=correction.wrong,
            )

    # ----- A(1), D, E(1): announcements ----------------------------------------------------------

    def note_last_ball_status(self) -> None:
        """A(1): whether last ball called is required; it must agree with the program."""
        required = self.now.meaning is not None and self.now.meaning.intent == "last-ball-required"
        planned = self.board.plan.last_ball_required if self.board.plan else None
        if planned is not None and planned != required:
            self.find("last-ball-status-contradicts-plan", plan="required" if planned else "not required")
        self.announced.last_ball_status = required

    def note_ball_count(self) -> None:
        """D: the number of balls of a limited game; it must agree with the program."""
        said = self.now.meaning.number if self.now.meaning else None
        planned = self.board.plan.balls if self.board.plan else None
        if planned is not None and said != planned:
            self.find("ball-count-contradicts-plan", said=said, plan=planned)
        self.announced.ball_count = said

    def note_last_ball(self) -> None:
        """D: "last ball" before the last ball is drawn."""
        self.announced.last_ball = True

    def note_cards_sold(self) -> None:
        """E(1): the number of cards sold."""
        said = self.now.meaning.number if self.now.meaning else None
        planned = self.board.plan.cards_sold if self.board.plan else None
        if planned is not None and said != planned:
            self.find("cards-sold-contradicts-plan", said=said, plan=planned)
        self.announced.cards_sold = said

    def note_prize(self) -> None:
        """E(1): the prize amount; E(2)(f) counts the announced prize when the program gives none."""
        said = self.now.meaning.number if self.now.meaning else None
        planned = self.board.plan.prize if self.board.plan else None
        if planned is not None and said is not None and float(said) != planned:
            self.find("prize-contradicts-plan", said=said, plan=_dollars(planned))
        self.announced.prize = None if said is None else float(said)
        if self.board.called and not self.prize_counted:
            self._count_prize()

    def _expired_announce(self) -> None:
        if self.state != "announcing":
            return
        plan = self.board.plan or GamePlan()
        if self.announced.last_ball_status is None:
            required = {True: "required", False: "not required", None: "required or not required"}
            self.prompt("announce-last-ball-status", required=required[plan.last_ball_required])
        if self._limit() is not None and self.announced.ball_count is None:
            self.prompt("announce-ball-count", balls=self.grammar.number_words(self._limit() or 0))
        if plan.type is GameType.WINNER_TAKE_ALL and (
            self.announced.cards_sold is None or self.announced.prize is None
        ):
            self.prompt("announce-cards-and-prize")

    def check_before_first_ball(self) -> None:
        """A(1), D, E(1): what must be announced before the first ball; E(2)(f): the prize now counts."""
        self._cancel("announce")
        plan = self.board.plan or GamePlan()
        if self.announced.last_ball_status is None:
            self.find("last-ball-status-not-announced")
        if plan.type is GameType.LIMITED and self.announced.ball_count is None:
            self.find("ball-count-not-announced")
        if plan.type is GameType.WINNER_TAKE_ALL:
            if self.announced.cards_sold is None:
                self.find("cards-sold-not-announced")
            if self.announced.prize is None:
                self.find("prize-not-announced")
        self._count_prize()

    def _count_prize(self) -> None:
        """E(2)(f): the game's prize is offered once its first ball is drawn."""
        plan = self.board.plan or GamePlan()
        prize = self.announced.prize if self.announced.prize is not None else plan.prize
        if not prize or self.prize_counted:
            return
        self.prize_counted = True
        before = self.occasion.prizes_total
        self.occasion.prizes_total = before + prize
        if self.occasion.prizes_total > self.settings.prize_cap >= before:
            self.find(
                "prize-cap-exceeded",
                total=_dollars(self.occasion.prizes_total),
                cap=_dollars(self.settings.prize_cap),
            )

    def _limit(self) -> int | None:
        if self.announced.ball_count is not None:
            return self.announced.ball_count
        plan = self.board.plan
        return plan.balls if plan is not None else None

    # ----- A(2), A(3), A(5), A(6), D: calling ----------------------------------------------------

    def take_call(self) -> None:
        """A call by the caller: a second saying, a correction, a mis-call, or the next ball."""
        ball = self._ball()
        correction = self.correction
        if correction is not None and correction.sentence:
            self._correct(correction, ball)
            return
        if correction is not None and ball == correction.second and correction.wrong is not None:
            # Said twice after all: it was the next ball, drawn before the previous one was said twice (A(2)).
            self.correction = None
            self._cancel("miscall")
            self.find(
                "next-ball-before-repeat",
                heard=correction.pending_heard,
                since=correction.time,
                ball=correction.wrong,
                next=ball,
            )
            self.unrepeated.append(correction.wrong)
            self._new_ball(ball)
            self._repeated()
            return
        if correction is not None:
            self._settle_correction()
        pending = self.pending
        if pending is not None:
            if ball == pending.ball:
                self._repeated()
                return
            if not self._different_call(pending, ball):
                return
        if ball in self.unrepeated:
            self.unrepeated.remove(ball)  # a late second saying: A(2)/A(3) already found
            return
        if self.board.called and ball == self.board.last and self._last_record_age() <= self.settings.repeat_window:
            return  # said a third time
        if ball in self.board.called:
            first = next(c.time for c in self._records() if c.ball == ball)
            self.find("ball-recalled", ball=ball, first=_clock(first))
            self.pending = _Pending(ball, self.now.time, self.now.heard, self.now.unsure)  # its second saying
            self._due("repeat", self.settings.repeat_window)
            return
        self._new_ball(ball)

    def _different_call(self, pending: _Pending, ball: Ball) -> bool:
        """A call that is not the second saying of the one in hand; True when it is the next ball."""
        self._cancel("repeat")
        self.pending = None
        if pending.prompted:
            self.find(
                "call-not-repeated", heard=pending.heard, unsure=pending.unsure, since=pending.time, ball=pending.ball
            )
            self.unrepeated.append(pending.ball)
            return True
        if pending.unsure or self.now.unsure:
            # A mis-hearing, not a mis-call: keep the surer saying on the board.
            kept = pending.ball
            if pending.unsure and not self.now.unsure:
                self._withdraw(pending.ball)
                self._add_call(ball)
                kept = ball
            self.find("repeat-mismatch", unsure=True, ball=pending.ball, kept=kept)
            return False
        if ball.letter == pending.ball.letter or ball.number % 10 == pending.ball.number % 10:
            # Both heard clearly and close: a mis-call; A(5) wants the error sentence and the correct call.
            self.correction = _Correction(
                self.now.time, self.now.heard, False, wrong=pending.ball, second=ball, pending_heard=pending.heard
            )
            self._due("miscall", self.settings.answer_window)
            self.prompt("announce-error")
            return False
        self.find("next-ball-before-repeat", heard=pending.heard, since=pending.time, ball=pending.ball, next=ball)
        self.unrepeated.append(pending.ball)
        return True

    def _repeated(self) -> None:
        """A(3) met; D: after the second-to-last ball of a limited game, "last ball" is due."""
        pending = self.pending
        if pending is not None:
            # Two hearings that agree on the ball explain each other: no owed words hide in them.
            said = (pending.time, self.now.time)
            self.unsure_hearings = [h for h in self.unsure_hearings if h.time not in said or h.role is not Role.CALLER]
        self.pending = None
        self._cancel("repeat")
        limit = self._limit()
        if limit is not None and len(self.board.called) == limit - 1 and not self.announced.last_ball:
            self.prompt("announce-last-ball")

    def _new_ball(self, ball: Ball) -> None:
        """The next ball: B(5) held ball first after an invalid claim; D ball count; A(5) master board."""
        if self.held_next:
            self.held_next = False
            held = self.board.held_ball
            if held is not None and ball != held:
                self.find("held-ball-not-called-next", ball=ball, held=held)
            self.board.held_ball = None
        limit = self._limit()
        count = len(self.board.called) + 1
        if limit is not None and count > limit:
            self.find("ball-count-exceeded", count=count, limit=limit)
        elif limit is not None and count == limit and not self.announced.last_ball:
            records = self._records()
            since = records[-1].time if records else None
            self.find("last-ball-not-announced", since=since, count=count, limit=limit)
        record = self._add_call(ball)
        key = self.unmatched_key
        if key is not None:
            self.unmatched_key = None
            self._compare_key(record, key.ball, self.now.heard, self.now.unsure)
        self.pending = _Pending(ball, self.now.time, self.now.heard, self.now.unsure)
        self._due("repeat", self.settings.repeat_window)

    def _add_call(self, ball: Ball) -> CallRecord:
        assert self.game is not None
        record = CallRecord(ball, self.now.time)
        self.game.calls.append(record)
        self.board.called.append(ball)
        self.emit(CallMade(self.game.number, ball, self.now.time, self.now.heard))
        return record

    def _withdraw(self, ball: Ball) -> None:
        assert self.game is not None
        for record in reversed(self.game.calls):
            if record.ball == ball and not record.withdrawn:
                record.withdrawn = True
                break
        if ball in self.board.called:
            self.board.called.remove(ball)
        self.emit(CallWithdrawn(self.game.number, ball, self.now.time))

    def _records(self) -> list[CallRecord]:
        return [c for c in self.game.calls if not c.withdrawn] if self.game else []

    def _last_record_age(self) -> float:
        records = self._records()
        return self.now.time - records[-1].time if records else float("inf")

    def _expired_repeat(self) -> None:
        if self.pending is not None:
            self.pending.prompted = True
            self.prompt("repeat-call", ball=self.spoken(self.pending.ball))

    def start_correction(self) -> None:
        """A(5): the error sentence (or something like it); the next call is the correct number."""
        exact = self.now.meaning is not None and self.now.meaning.intent == "error-correction"
        correction = self.correction
        if correction is None:
            wrong = self.pending.ball if self.pending is not None else self.board.last
            correction = _Correction(self.now.time, self.now.heard, self.now.unsure, wrong=wrong)
            self.correction = correction
        if not correction.sentence or not exact:
            correction.heard = self.now.heard
            correction.time = self.now.time
            correction.unsure = self.now.unsure
        correction.sentence = True
        correction.exact = correction.exact or exact
        self.pending = None
        self._cancel("repeat", "miscall")
        self._due("correction-call", self.settings.repeat_window)

    def _correct(self, correction: _Correction, ball: Ball) -> None:
        """A(5)(c): the correct call after the error sentence; the wrong ball leaves the board."""
        self.correction = None
        self._cancel("correction-call")
        if not correction.exact:
            self.find("error-phrase-paraphrased", heard=correction.heard, unsure=correction.unsure, at=correction.time)
        if correction.wrong is not None and ball == correction.wrong:
            self.pending = _Pending(ball, self.now.time, self.now.heard, self.now.unsure)
            self._due("repeat", self.settings.repeat_window)
            return
        if correction.wrong is not None and correction.wrong in self.board.called:
            self._withdraw(correction.wrong)
        if ball in self.board.called:
            self.find("ball-recalled", ball=ball, first="earlier")
            return
        self._new_ball(ball)

    def _expired_miscall(self) -> None:
        self._settle_correction()

    def _expired_correction_call(self) -> None:
        correction = self.correction
        if correction is not None:
            self.correction = None
            self.find(
                "correction-call-missing", heard=correction.heard, unsure=correction.unsure, since=correction.time
            )

    # ----- A(4), A(5): the master board console --------------------------------------------------

    def key_ball(self) -> None:
        """A ball keyed on the master board: the held ball during a claim, else the call it shows."""
        key = self.now.key
        if key is None:
            return
        if self.state == "claim":
            if self.board.held_ball is None and key.ball not in self.board.called:
                self.board.held_ball = key.ball
                if self.claim is not None:
                    self.claim.record.held_ball = key.ball
            return
        records = self._records()
        pending = self.pending
        if pending is not None and records and records[-1].ball == pending.ball and not records[-1].keyed:
            self._compare_key(records[-1], key.ball, pending.heard, pending.unsure)  # keyed while being called
        else:
            self.unmatched_key = key  # keyed before it is called

    def _compare_key(self, record: CallRecord, keyed: Ball, heard: str, unsure: bool) -> None:
        """A(5): a spoken call that differs from the keyed ball is a mis-call; A(4): a match shows the ball."""
        if record.ball == keyed:
            record.keyed = True
            return
        self.find("call-differs-from-board", heard=heard, unsure=unsure, keyed=keyed)
        self.prompt("board-differs", keyed=self.spoken(keyed))

    # ----- F: power outage -----------------------------------------------------------------------

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
            self.find("manual-draw-without-approval")

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

    # ----- B(1)-B(8): the claim ------------------------------------------------------------------

    def open_claim(self) -> None:
        """B(1): the game stops; B(2): the balls called so far are in play; B(3): the held ball is kept."""
        assert self.game is not None
        pending = self.pending
        interrupted = pending.ball if pending is not None and not pending.prompted else None
        self._settle_pending()
        self.pending = None
        self._settle_correction()
        self._cancel("repeat", "ask-other", "announce-completed")
        held = self.unmatched_key.ball if self.unmatched_key is not None else None
        self.unmatched_key = None
        self.board.held_ball = held
        record = ClaimRecord(time=self.now.time, held_ball=held)
        self.game.claims.append(record)
        self.claim = _Claim(record=record, in_play=list(self.board.called), interrupted=interrupted)
        self.asked_other = False
        self.emit(ClaimOpened(self.game.number, self.now.time, held))
        if self.now.unsure:
            self.find("bingo-unsure")
            self.prompt("bingo-unsure")
        else:
            self.prompt("read-card")

    def drop_unsure_claim(self) -> None:
        """The bingo was not sure and the caller goes on calling: follow the game, not the claim."""
        if self.claim is not None and self.game is not None and self.claim.record in self.game.claims:
            self.game.claims.remove(self.claim.record)
        self.claim = None
        self.state_unsure = False

    def note_card(self) -> None:
        """B(7): the floor reads the card's manufacturer ID and serial number."""
        meaning = self.now.meaning
        if self.claim is None or meaning is None:
            return
        if meaning.manufacturer:
            self.claim.record.manufacturer = meaning.manufacturer
        if meaning.serial:
            self.claim.record.serial = meaning.serial

    def confirm_winning_number(self) -> None:
        """B(8): each winning number the floor announces is confirmed on the master board."""
        claim = self.claim
        if claim is None:
            return
        ball = self._ball()
        if ball not in claim.record.winning:
            claim.record.winning.append(ball)
        if ball not in claim.in_play and ball not in claim.record.not_called:
            claim.record.not_called.append(ball)
            self.not_called_heard.append(ball)

    def caller_call_during_claim(self) -> None:
        """B(1) no new ball, B(3) not the held ball, C the caller does not read the winning numbers."""
        claim = self.claim
        if claim is None:
            return
        ball = self._ball()
        plan = self.board.plan or GamePlan()
        if plan.type is GameType.COVER_ALL:
            if ball not in claim.in_play and ball not in claim.uncalled_read:
                claim.uncalled_read.append(ball)  # B(8): cover-all, the caller calls the numbers not called
            return
        if ball == claim.interrupted:
            claim.interrupted = None  # the second saying the bingo cut off
        elif ball == self.board.held_ball:
            self.find("held-ball-called", ball=ball)
        elif ball not in claim.in_play:
            self.find("call-during-claim", ball=ball)
        elif ball in claim.record.winning:
            pass  # the caller confirms a number the floor announced (B(8))
        elif not claim.caller_read:
            claim.caller_read = True
            self.find("caller-read-winning-numbers")

    def check_verification(self) -> None:
        """B(7) card read, B(8) winning numbers announced and all called (cover-all: uncalled numbers called)."""
        claim = self.claim
        if claim is None:
            return
        record = claim.record
        since = record.time
        if record.manufacturer is None and record.serial is None:
            self.find("card-id-not-read", since=since)
        elif record.manufacturer is None or record.serial is None:
            have, missing = (
                ("serial number", "manufacturer ID")
                if record.manufacturer is None
                else ("manufacturer ID", "serial number")
            )
            self.find("card-id-incomplete", since=since, have=have, missing=missing)
        plan = self.board.plan or GamePlan()
        if plan.type is GameType.COVER_ALL:
            if not claim.uncalled_read:
                self.find("uncalled-numbers-not-read", since=since)
        elif not record.winning:
            self.find("winning-numbers-not-read", since=since)
        if record.not_called:
            # a ball missing from the board may have been called in speech we could not hear clearly (owed)
            balls = ", ".join(str(b) for b in record.not_called)
            self.find("valid-with-uncalled-numbers", balls=balls)

    def resolve_valid(self) -> None:
        """B(4): the game is over; B(9) is due."""
        self._resolve(True)
        self.won = True
        self.won_at = self.now.time
        self.board.held_ball = None  # returned to the machine
        self._due("ask-other", self.settings.answer_window)

    def resolve_invalid(self) -> None:
        """B(5): the held ball is the next call."""
        held = self.board.held_ball
        self._resolve(False)
        if not self.won:
            self.held_next = True
            self.prompt("call-held-ball", held=f": {self.spoken(held)}" if held else "")

    def _resolve(self, valid: bool) -> None:
        claim = self.claim
        assert self.game is not None and claim is not None
        claim.record.valid = valid
        record = claim.record
        self.emit(
            ClaimResolved(
                self.game.number,
                self.now.time,
                valid,
                record.manufacturer,
                record.serial,
                tuple(record.winning),
                tuple(record.not_called),
            )
        )
        self.claim = None

    # ----- B(4), B(9): closing -------------------------------------------------------------------

    def call_after_valid_claim(self) -> None:
        """B(4): after a valid bingo the game is over: no new ball."""
        ball = self._ball()
        if ball not in self.board.called:
            self.find("call-after-valid-claim", ball=ball)

    def note_other_bingos_asked(self) -> None:
        """B(9): "are there any other bingos?" in those words."""
        if self.now.meaning is not None and self.now.meaning.intent == "other-bingos-paraphrase":
            self.find("other-bingos-paraphrased")
        self.asked_other = True
        self._cancel("ask-other")
        self._due("announce-completed", self.settings.answer_window)

    def _expired_ask_other(self) -> None:
        if self.state == "closing":
            self.prompt("ask-other-bingos")

    def _expired_announce_completed(self) -> None:
        if self.state == "closing":
            self.prompt("announce-completed")

    # ----- per utterance -------------------------------------------------------------------------

    def flush_utterance(self) -> None:
        """B(8): one prompt naming the winning numbers just heard that were not called."""
        if self.not_called_heard:
            balls = ", ".join(self.spoken(b) for b in self.not_called_heard)
            self.not_called_heard = []
            self.prompt("not-called", balls=balls)


def _dollars(amount: float) -> str:
    return f"{amount:,.0f}" if amount == int(amount) else f"{amount:,.2f}"


def _clock(t: float) -> str:
    minutes, seconds = divmod(t, 60)
    return f"{int(minutes):02d}:{seconds:04.1f}"


class Procedure:
    """Follows an occasion input by input and says what the rule wants: findings, prompts, the board."""

    def __init__(
        self, rules: RulePack, grammar: Grammar, settings: ProcedureSettings, emit: Callable[[Output], None]
    ) -> None:
        self.rules = rules
        self.grammar = grammar
        self.settings = settings
        self._conduct = Conduct(rules, grammar, settings, emit)
        self._emit = emit
        self._step: str | None = None
        self._time = 0.0

    @property
    def state(self) -> str:
        """The machine's state (a state of the rule pack)."""
        return self._conduct.state

    @property
    def step(self) -> str:
        """The grammar step now expected (a key of grammar.steps)."""
        return self.rules.steps[self._conduct.state]

    @property
    def board(self) -> Board:
        return self._conduct.board

    @property
    def occasion(self) -> OccasionRecord:
        return self._conduct.occasion

    def feed(self, item: Input) -> None:
        """One input: windows that closed before it speak first, then the input drives the machine."""
        conduct = self._conduct
        time = time_of(item)
        if time < self._time:
            time = self._time  # never backwards: a late utterance end does not rewind the windows
        self._time = time
        conduct.expire(time, inclusive=isinstance(item, SessionEnd | Tick))
        if isinstance(item, GameStart):
            conduct.now = _Now(time=time, plan=item.plan)
            conduct.fire("game-start")
        elif isinstance(item, SessionEnd):
            conduct.now = _Now(time=time, ending=True)
            conduct.fire("session-end")
        elif isinstance(item, BoardKey):
            conduct.now = _Now(time=time, key=item)
            conduct.fire("board-key")
        elif isinstance(item, Utterance):
            unsure = item.uncertain or item.confidence < self.settings.min_confidence
            if unsure:
                conduct.unsure_hearings.append(_Hearing(time, item.role, item.text))
            for meaning in item.meanings:
                intent = self.grammar.intents.get(meaning.intent)
                if intent is not None and intent.roles and item.role.value not in intent.roles:
                    continue
                conduct.now = _Now(time=time, utterance=item, meaning=meaning, unsure=unsure)
                conduct.fire(meaning.intent)
            conduct.now = _Now(time=time, utterance=item, unsure=unsure)
            conduct.flush_utterance()
        conduct.now = _Now(time=time)
        step = self.step
        if step != self._step:
            self._step = step
            self._emit(StepChanged(time, step, self.grammar.step_intents(step)))


def check_inputs(
    items: Iterable[Input], rules: RulePack, grammar: Grammar, settings: ProcedureSettings | None = None
) -> tuple[OccasionRecord, list[Output]]:
    """Run a whole session through a fresh procedure; the session ends after the last input."""
    outputs: list[Output] = []
    procedure = Procedure(rules, grammar, settings or ProcedureSettings(), outputs.append)
    last: Input | None = None
    for item in items:
        procedure.feed(item)
        last = item
    if not isinstance(last, SessionEnd):
        end = 0.0 if last is None else end_of(last)
        procedure.feed(SessionEnd(end))
    return procedure.occasion, outputs


__all__ = [
    "DEFAULT_RULES",
    "Board",
    "ClauseStatus",
    "Procedure",
    "ProcedureSettings",
    "RuleError",
    "RulePack",
    "check_inputs",
    "clause_table",
    "write_diagram",
]
