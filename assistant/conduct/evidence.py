"""The rule of evidence, the same for every clause: findings and prompts weighed by what was heard for sure, and
speech no clause took kept for review."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..grammar import Grammar
from ..messages import Ball, Doubt, Finding, HeardForReview, Meaning, Output, Prompt, Role, Severity
from ..rules import RuleError, RulePack
from .state import ConductState, Hearing

RESTS_ON = "the finding rests on this hearing, heard unsure"
STATE_RESTS_ON = "the step the game was in rests on this hearing, heard unsure"
MAY_HOLD = "the words owed may have been said here, heard unsure"
MAY_HOLD_UNPLACED = "the words owed may have been said here, in words the grammar could not place"


class _Fields(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"


def dollars(amount: float) -> str:
    return f"{amount:,.0f}" if amount == int(amount) else f"{amount:,.2f}"


def clock(t: float) -> str:
    minutes, seconds = divmod(t, 60)
    return f"{int(minutes):02d}:{seconds:04.1f}"


class Evidence:
    """What every clause says through: `find` (a finding) and `prompt` (words to the caller), each weighed by the
    same rule of evidence (`weigh`), and `keep_for_review`. Reads the input in hand, the hearings, the game's record,
    the step's hearing, the plan's doubts and a dropped claim; writes the findings and the review list."""

    def __init__(self, state: ConductState, rules: RulePack, grammar: Grammar, emit: Callable[[Output], None]) -> None:
        self.state = state
        self.rules = rules
        self.grammar = grammar
        self.emit = emit

    def hearing_in_hand(self) -> Hearing | None:
        """The input in hand as a hearing, if it is speech."""
        utterance = self.state.now.utterance
        if utterance is None:
            return None
        return Hearing(self.state.now.time, utterance.role, self.state.now.heard, self.state.now.unsure)

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
        found, hidden = self.weigh(
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

    def weigh(
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
        a finding (`weigh`: the hearings it rests on, unsure speech or a gap of the role that owed the words
        since `since`, the claim or the plan in doubt): with any doubt it asks instead of asserting."""
        spec = self.rules.prompts[kind]
        if spec.asks is not None:
            heard = fields.get("heard")
            found, _ = self.weigh(
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
        """The ball in the hall's words ("B seven")."""
        return self.grammar.spoken(ball)
