"""The checks of N.M. Admin. Code § 15.4.7.11: one component per part of the rule, over one explicit state.

| module | the rule |
| --- | --- |
| `announcing.py` | A(1) last ball required or not, D ball count, E(1) cards sold and prize: before the first ball |
| `calling.py` | A(2), A(3) each call twice (`Repeats`); A(6), D, B(5) the next ball, a ball called again |
| `correction.py` | A(5) the error sentence and the correct call; A(4), A(5) the master board (`MasterBoard`) |
| `outage.py` | F: a manual draw with the players' approval |
| `claim.py` | B(1)-B(8), C: the claim stops the game and is verified |
| `closing.py` | B(4), B(9): after a valid bingo |
| `occasion.py` | games opened and closed, with what each left undone |
| `prizes.py` | E(2)(f) the prize cap |
| `state.py` | the one state they read and write (`ConductState`, with the game's `GameState`) |
| `evidence.py` | findings and prompts weighed by the rule of evidence; speech kept for review |
| `core.py` | the settings, the windows open, the board's calls, who said it; `@check` and `@expires` |
| `machine.py` | `Conduct`: the state, the services and the parts, driven by the rule pack's `transitions` machine |

Each part is a class made with the state and the services it uses (and the parts it asks something of); its
docstring says what of the state it reads and writes. The rule pack (config/rules/nm-15.4.7.11.yaml) names the
checks marked `@check` as the machine's callbacks and conditions and holds every finding's code, clause and message:
the modules hold the logic only.
"""

from __future__ import annotations

from .core import INPUT_TRIGGERS, ProcedureSettings, named_checks
from .machine import Conduct
from .state import ConductState, GameState, Hearing, Now

__all__ = [
    "INPUT_TRIGGERS",
    "Conduct",
    "ConductState",
    "GameState",
    "Hearing",
    "Now",
    "ProcedureSettings",
    "named_checks",
]
