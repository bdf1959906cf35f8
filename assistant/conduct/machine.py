"""The rule pack's `transitions` machine over the parts of the rule: `Conduct` makes the one state, the services and
each part, and gives the machine each part's named checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from transitions import Machine

from ..grammar import Grammar
from ..messages import Output
from ..rules import RuleError, RulePack
from .announcing import Announcing
from .calling import Calling, Repeats
from .claim import Claiming
from .closing import Closing
from .core import INPUT_TRIGGERS, Calls, ProcedureSettings, Speakers, Windows, named_checks, window_handlers
from .correction import Correcting, MasterBoard
from .evidence import Evidence
from .occasion import Occasion
from .outage import Outage
from .prizes import PrizeCap
from .state import ConductState

_CALLBACK_KEYS = ("conditions", "unless", "before", "after", "prepare")
"""Keys of a transition that name checks."""


def _bound(transition: dict[str, Any], checks: dict[str, Callable[[], object]]) -> dict[str, Any]:
    """A rule pack transition with its named checks replaced by the checks themselves."""
    bound = dict(transition)
    for key in _CALLBACK_KEYS:
        names = bound.get(key)
        if names is not None:
            bound[key] = [checks[n] for n in ([names] if isinstance(names, str) else names)]
    return bound


class Conduct:
    """The parts of the rule over one explicit state (`state`), driven by the rule pack's machine (`fire`).

    Each part is made with the state and the services it uses: `evidence` (findings and prompts by the rule of
    evidence), `windows` (what falls due), `calls` (the board's calls), and the parts it asks something of. The
    machine keeps its state in `state.phase` and calls the parts' checks by the names the rule pack gives them."""

    def __init__(
        self, rules: RulePack, grammar: Grammar, settings: ProcedureSettings, emit: Callable[[Output], None]
    ) -> None:
        self.rules = rules
        state = self.state = ConductState()
        evidence = self.evidence = Evidence(state, rules, grammar, emit)
        windows = self.windows = Windows(state)
        calls = Calls(state, evidence, emit)
        prizes = PrizeCap(state, evidence, settings)
        self.repeats = repeats = Repeats(state, evidence, windows, calls, settings)
        self.corrections = corrections = Correcting(
            state, evidence, windows, calls, repeats, grammar, settings, self.fire
        )
        master_board = MasterBoard(state, evidence, calls)
        self.claims = Claiming(state, evidence, windows, calls, repeats, corrections, settings, emit)
        games = Occasion(state, evidence, windows, repeats, corrections, prizes, settings, emit)
        self.parts: tuple[object, ...] = (
            Speakers(state),
            Announcing(state, evidence, windows, prizes, grammar),
            repeats,
            Calling(state, evidence, windows, calls, repeats, corrections, master_board, settings),
            corrections,
            master_board,
            Outage(state, evidence),
            self.claims,
            Closing(state, evidence, windows, games, settings),
            games,
        )
        checks: dict[str, Callable[[], object]] = {}
        for part in self.parts:
            for name, found in named_checks(part).items():
                if name in checks:
                    raise RuleError(f"check {name!r} is given by two parts of the rule")
                checks[name] = found
            for kind, handler in window_handlers(part).items():
                if kind in windows.handlers:
                    raise RuleError(f"window {kind!r} is handled by two parts of the rule")
                windows.handlers[kind] = handler
        for spec in rules.transitions:
            unknown = [n for n in spec.conditions + spec.callbacks if n not in checks]
            if unknown:
                raise RuleError(
                    f"{rules.source or 'rule pack'}: transition {spec.trigger!r} names unknown checks {unknown}"
                )
        for name, step in rules.steps.items():
            if step not in grammar.steps:
                raise RuleError(f"{rules.source or 'rule pack'}: state {name!r} maps to unknown grammar step {step!r}")
        config = dict(rules.machine)
        self.machine = Machine(
            model=state,
            model_attribute="phase",
            states=config["states"],
            transitions=[_bound(t, checks) for t in config["transitions"]],
            initial=config["initial"],
            auto_transitions=False,
            ignore_invalid_triggers=True,
        )

    def fire(self, trigger: str) -> bool:
        """Drive the machine; False when no transition of the current state took the trigger. A step entered by
        an unsure hearing (a "bingo" heard unsure) is unsure while the game is in it (`phase_unsure`)."""
        event = self.machine.events.get(trigger)
        if event is None:
            return False
        state = self.state
        before = state.phase
        taken = bool(event.trigger(state))
        if state.phase != before:
            state.phase_unsure = trigger not in ("call", *INPUT_TRIGGERS) and state.now.unsure
            state.phase_hearing = self.evidence.hearing_in_hand() if state.phase_unsure else None
        return taken
