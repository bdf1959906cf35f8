"""Runs a transcript script through the real procedure into a real store, resuming whatever occasion is open.

    python tests/crash_driver.py DB SCRIPT

The crash test SIGKILLs this at random moments and runs it again until it finishes: the resumed record must equal
an uninterrupted run. `session_script(seed)` writes a long, varied occasion in the transcript script format.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from assistant.grammar import Grammar  # noqa: E402
from assistant.messages import LETTERS, Ball  # noqa: E402
from assistant.procedure import Procedure, ProcedureSettings, RulePack  # noqa: E402
from assistant.script import read_script  # noqa: E402
from assistant.store import Journal, Store  # noqa: E402

UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy"}


def spoken(ball: Ball) -> str:
    """'B seven', 'O sixty one', as a caller says it."""
    n = ball.number
    if n < 10:
        words = UNITS[n]
    elif n < 20:
        words = TEENS[n - 10]
    else:
        words = TENS[n // 10] + ("" if n % 10 == 0 else " " + UNITS[n % 10])
    return f"{ball.letter} {words}"


def session_script(seed: int, games: int = 5, calls: int = 28) -> str:
    """An occasion of `games` games: calls said twice (now and then once), keyed balls, corrections, claims."""
    rng = random.Random(seed)
    lines = [f"# generated occasion, seed {seed}"]
    t = 0.0
    for number in range(1, games + 1):
        if number % 3 == 0:
            lines.append("@game type=winner-take-all cards_sold=150 prize=700 last_ball_required=no")
            lines.append(f"{t:.1f} caller: one hundred fifty cards sold")
            t += 3
            lines.append(f"{t:.1f} caller: the prize is seven hundred dollars")
            t += 3
            lines.append(f"{t:.1f} caller: last ball called is not required")
        else:
            lines.append("@game type=regular prize=100 last_ball_required=yes")
            lines.append(f"{t:.1f} caller: last ball called is required")
        t += 4
        drawn = rng.sample(range(1, 76), calls + 1)
        balls, spare = drawn[:calls], Ball(drawn[calls])
        for index, n in enumerate(balls):
            ball = Ball(n)
            keyed = rng.random() < 0.5
            if index == 10 and rng.random() < 0.6:  # a mis-call found and corrected by the A(5) sentence
                lines.append(f"{t:.1f} caller: {spoken(spare)}")
                lines.append(f"{t + 2.5:.1f} caller: {spoken(spare)}")
                t += 6
                sentence = "an error has been made i am reading the correct number please correct your card"
                lines.append(f"{t:.1f} caller: {sentence}")
                t += 5
            if keyed:
                lines.append(f"{t - 1:.1f} board: {ball}")
            lines.append(f"{t:.1f} caller: {spoken(ball)}")
            if rng.random() > 0.08:  # now and then said only once
                lines.append(f"{t + 2.5:.1f} caller: {spoken(ball)}")
            t += 9
        lines.append(f"{t:.1f} player: bingo")
        t += 4
        letters = "".join(rng.choice(LETTERS) for _ in range(2)).lower()
        serial = " ".join(UNITS[rng.randrange(10)] for _ in range(5))
        lines.append(f"{t:.1f} floor: manufacturer {' '.join(letters)} four two serial {serial}")
        t += 5
        for n in sorted(balls[:5]):
            lines.append(f"{t:.1f} floor: {spoken(Ball(n))}")
            t += 2.5
        lines.append(f"{t:.1f} caller: that is a valid bingo")
        t += 3
        lines.append(f"{t:.1f} caller: are there any other bingos")
        t += 6
        lines.append(f"{t:.1f} caller: this game is completed")
        t += 30
    lines.append(f"{t:.1f} end")
    return "\n".join(lines) + "\n"


def run(db: Path, script: Path) -> int:
    """Feed the script, resuming the open occasion of this script when there is one; returns the occasion id.

    An occasion this script closed already (killed after closing, before exiting) is replayed against its record,
    as `check --resume` does, not started again.
    """
    grammar = Grammar.load()
    items = read_script(script, grammar)
    with Store.open(db) as store:
        source = str(script)
        occasion = (
            store.latest_open_occasion(source) or store.latest_occasion(source) or store.start_occasion(source=source)
        )
        journal = Journal(store, occasion)
        procedure = Procedure(RulePack.load(), grammar, ProcedureSettings(), journal.forward())
        for item in items:
            journal.input(item)  # already recorded: checked equal and skipped; its outputs are checked the same way
            procedure.feed(item)
        store.close_occasion(occasion, record=procedure.occasion)
    return occasion


if __name__ == "__main__":
    print(run(Path(sys.argv[1]), Path(sys.argv[2])))
