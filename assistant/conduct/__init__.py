"""The checks of N.M. Admin. Code § 15.4.7.11, one module per part of the rule, composed into one model.

| module | the rule |
| --- | --- |
| `announcing.py` | A(1) last ball required or not, D ball count, E(1) cards sold and prize: before the first ball |
| `calling.py` | A(2), A(3), A(6), D: each call said twice, the next ball, a ball called again, the count |
| `correction.py` | A(5) the error sentence and the correct call; A(4), A(5) the ball keyed on the master board |
| `outage.py` | F: a manual draw with the players' approval |
| `claim.py` | B(1)-B(8), C: the claim stops the game and is verified |
| `closing.py` | B(4), B(9): after a valid bingo |
| `occasion.py` | games opened and closed; E(2)(f) the prize cap |
| `core.py` | what they share: windows due, findings, prompts, the board's calls, conditions |
| `state.py` | what a game holds while it is followed: the call in hand, a mis-call, the announcements, a claim |

The rule pack (config/rules/nm-15.4.7.11.yaml) names these checks as the machine's callbacks and conditions and
holds every finding's code, clause and message: the modules hold the logic only.
"""

from __future__ import annotations

from .announcing import Announcing
from .calling import Calling
from .claim import Claiming
from .closing import Closing
from .core import INPUT_TRIGGERS, ConductCore, ProcedureSettings
from .correction import Correcting
from .occasion import Occasion
from .outage import Outage
from .state import Hearing, Now


class Conduct(Announcing, Calling, Correcting, Outage, Claiming, Closing, Occasion):
    """The model the rule pack's machine drives: the board, the game record and the named checks."""


__all__ = ["INPUT_TRIGGERS", "Conduct", "ConductCore", "Hearing", "Now", "ProcedureSettings"]
