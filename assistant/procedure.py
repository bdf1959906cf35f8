"""The procedure engine: N.M. Admin. Code § 15.4.7.11 as a `transitions` machine declared in a rule pack.

The rule pack (config/rules/nm-15.4.7.11.yaml) holds the states, the transitions (triggered by the grammar's
intents), the findings with their clauses and messages, and the prompts. The named checks the transitions call are
in assistant/conduct/, one module per part of the rule. This module feeds inputs to them. Time moves only with the
inputs, so a replay gives the same outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .board import Board
from .conduct import Conduct, Hearing, Now, ProcedureSettings
from .diagram import write_diagram
from .grammar import Grammar
from .messages import (
    BoardKey,
    Doubt,
    GameStart,
    Input,
    Meaning,
    OccasionRecord,
    Output,
    SessionEnd,
    StepChanged,
    Tick,
    Utterance,
    end_of,
    time_of,
)
from .rules import DEFAULT_RULES, ClauseStatus, RuleError, RulePack, clause_table

NAMES_NO_BALL = "bad-call"
"""The grammar's intent for a call naming no ball: when no step takes it, it is kept for review."""
CLAIM = "bingo"
"""The grammar's intent for a claim: inside the caller's own sentence it is no claim, and is kept for review."""


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
        return self._conduct.state.phase

    @property
    def step(self) -> str:
        """The grammar step now expected (a key of grammar.steps)."""
        return self.rules.steps[self._conduct.state.phase]

    @property
    def board(self) -> Board:
        return self._conduct.state.board

    @property
    def next_due(self) -> float | None:
        """The earliest time a window closes (a repeat, an answer owed), or None: the time a `Tick` is due."""
        return min((due.deadline for due in self._conduct.state.game.dues.values()), default=None)

    @property
    def plan_doubts(self) -> tuple[Doubt, ...]:
        """What makes the current game's place in the hall's program unsure (`GameStart.doubts`)."""
        return self._conduct.state.game.plan_doubts

    @property
    def occasion(self) -> OccasionRecord:
        return self._conduct.state.occasion

    def feed(self, item: Input) -> None:
        """One input: windows that closed before it speak first, then the input drives the machine."""
        conduct = self._conduct
        time = time_of(item)
        if time < self._time:
            time = self._time  # never backwards: a late utterance end does not rewind the windows
        self._time = time
        conduct.windows.expire(time, inclusive=isinstance(item, SessionEnd | Tick))
        if isinstance(item, GameStart):
            conduct.state.now = Now(time=time, plan=item.plan, plan_doubts=item.doubts)
            conduct.fire("game-start")
        elif isinstance(item, SessionEnd):
            conduct.state.now = Now(time=time, ending=True)
            conduct.fire("session-end")
        elif isinstance(item, BoardKey):
            conduct.state.now = Now(time=time, key=item)
            conduct.fire("board-key")
        elif isinstance(item, Utterance):
            unsure = item.uncertain or item.confidence < self.settings.min_confidence
            hearing = Hearing(time, item.role, item.text, unsure, unplaced=bool(item.unknown) or not item.meanings)
            conduct.state.hearings.append(hearing)
            untaken: list[Meaning] = []
            for meaning in item.meanings:
                intent = self.grammar.known.get(meaning.intent)
                if intent is not None and intent.roles and item.role.value not in intent.roles:
                    continue
                conduct.state.now = Now(time=time, utterance=item, meaning=meaning, unsure=unsure)
                if conduct.fire(meaning.intent):
                    continue
                if meaning.intent == NAMES_NO_BALL or (meaning.intent == CLAIM and not conduct.claims.signals_claim()):
                    untaken.append(meaning)
            conduct.state.now = Now(time=time, utterance=item, unsure=unsure)
            conduct.claims.flush_utterance()
            conduct.evidence.keep_for_review(untaken)
            conduct.claims.heard_aside(hearing)
        conduct.state.now = Now(time=time)
        step = self.step
        if step != self._step:
            self._step = step
            self._emit(StepChanged(time, step, self.grammar.step_intents(step)))


def check_inputs(
    items: Iterable[Input], rules: RulePack, grammar: Grammar, settings: ProcedureSettings | None = None
) -> tuple[OccasionRecord, list[Output]]:
    """Run a whole session through a fresh procedure; the session ends when the last speech does (as `check`
    ends a script), unless it says when."""
    outputs: list[Output] = []
    procedure = Procedure(rules, grammar, settings or ProcedureSettings(), outputs.append)
    last: Input | None = None
    end = 0.0
    for item in items:
        procedure.feed(item)
        last = item
        end = max(end, end_of(item))
    if not isinstance(last, SessionEnd):
        procedure.feed(SessionEnd(end))
    return procedure.occasion, outputs


__all__ = [
    "DEFAULT_RULES",
    "Board",
    "ClauseStatus",
    "Conduct",
    "Procedure",
    "ProcedureSettings",
    "RuleError",
    "RulePack",
    "check_inputs",
    "clause_table",
    "write_diagram",
]
