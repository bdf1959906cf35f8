"""Phrases a word from another meaning, said alone in the hall's babble: `python -m lab.bench rulings`.

The grammar names the intents said in nearly the same words that mean otherwise (`near`: a valid bingo and not, "bad
bingo" and "bingo", yes and no). A sure hearing of the near meaning is the worst a
ruling can be heard: "that is a valid bingo" heard sure as "not a valid bingo" makes the assistant tell the caller to
call the held ball; "bad bingo" heard sure as "bingo" is another claim. Each sentence of each such intent is said by
each voice over the PA, with babble before and after, and decoded alone in a step that listens for it and its near
meanings. The table counts, per condition, the sayings heard right and sure, sure as a near meaning, sure as
something else, and unsure; run it with `--option settings.near_meanings=false` for the hearing without the choice
between near meanings. `--intents` says other intents, `--step` decodes them all in one step of the grammar (a
player's "bingo" in the calling step), and `--patter` adds the hall set's patter in that step, where any sure
hearing is false."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from assistant.grammar import Grammar
from lab.bench import hallset, real
from lab.bench.accuracy import SNRS

RATE = hallset.RATE

SCENARIO_HELD_OUT = ("espeak:en-gb-x-rp+m5@145", "espeak:en-us-nyc+f4@190", "espeak:en-gb-scotland+f2@185")
"""The scenario library's held-out voices (`lab.scenarios.render.HELD_OUT_VOICES`)."""
SCENARIO_TUNING = ("espeak:en-us@165", "espeak:en-gb@160", "espeak:en-us+f3@175")
"""The scenario library's tuning voices (`lab.scenarios.render.TUNING_VOICES`)."""
SETS = {
    "held-out": hallset.HELD_OUT + SCENARIO_HELD_OUT,
    "tuning": SCENARIO_TUNING,
}
"""Voice sets: held-out (flite's four voices and the scenario library's held-out espeak voices), tuning."""


def near_intents(grammar: Grammar) -> list[str]:
    """The intents the grammar says have a near meaning, in the grammar's order."""
    return [name for name, intent in grammar.intents.items() if intent.near]


def step_of(grammar: Grammar, intent: str) -> tuple[str, ...]:
    """The intents of the first step that listens for `intent` and its near meanings (the procedure hears them
    there), or for `intent` at least."""
    near = set(grammar.intents[intent].near)
    steps = [intents for intents in grammar.steps.values() if intent in intents]
    return next((s for s in steps if near <= set(s)), steps[0] if steps else (intent,))


def sentences(grammar: Grammar, intent: str, count: int, seed: int) -> list[str]:
    """Up to `count` of the intent's sentences, its first template's always among them."""
    every = list(dict.fromkeys(words for words, _ in grammar.samples(intent)))
    rest = every[1:]
    random.Random(f"{seed}:{intent}").shuffle(rest)
    return [every[0], *rest][:count]


@dataclass
class Tally:
    """One condition's sayings by what became of them."""

    sayings: int = 0
    right: int = 0
    near: int = 0
    other: int = 0
    unsure: int = 0
    seconds: list[float] = field(default_factory=list)
    """Decoding time of each saying."""
    patter: int = 0
    """Patter lines decoded (`--patter`)."""
    patter_sure: int = 0
    """Patter lines heard sure as anything: each is false."""
    wrong: list[str] = field(default_factory=list)
    """Sayings heard sure as a near meaning or as something else: voice, what was said, what was heard."""

    def row(self, name: str) -> str:
        share = [hallset.pct(n, self.sayings) for n in (self.right, self.near, self.other, self.unsure)]
        patter = f"{self.patter_sure}/{self.patter}" if self.patter else "-"
        return f"| {name} | {self.sayings} | {' | '.join(share)} | {patter} | {hallset.p(self.seconds, 95)} |"


HEADER = (
    "| condition | sayings | right and sure % | sure as a near meaning % | sure as another meaning % | unsure % | "
    "patter heard sure | decode p95 ms |\n|---|---|---|---|---|---|---|---|"
)


def clip_in_hall(words: str, voice: str, snr_db: float | None, rng: random.Random, crowd: object) -> np.ndarray:
    """One saying over the PA with 0.3-0.6 s of the hall before and after, int16."""
    said = hallset.say(words, voice)
    clip = hallset._level(said) * 10 ** (rng.uniform(-6.0, 3.0) / 20)
    clip = clip + hallset.pa_return(clip, rng)
    before, after = int(rng.uniform(0.3, 0.6) * RATE), int(rng.uniform(0.3, 0.6) * RATE)
    speech = np.concatenate([np.zeros(before), clip, np.zeros(after)])
    n = len(speech)
    babble = np.zeros(n)
    if snr_db is not None:
        babble = crowd.babble(n) * np.sqrt(real.loud_power(clip) / 10 ** (snr_db / 10))  # type: ignore[attr-defined]
    dither = np.random.default_rng(rng.randrange(2**32)).normal(0.0, 2.0, n)
    return hallset._int16(speech + babble + dither)


def run(
    recognizer: object,
    grammar: Grammar,
    voices: Sequence[str],
    snrs: Sequence[str],
    per_intent: int,
    babble: str,
    seed: int,
    intents: Sequence[str] = (),
    step: str | None = None,
    patter: bool = False,
) -> dict[str, Tally]:
    """Every voice saying every chosen sentence of each of `intents` (default: every intent with a near meaning),
    under each condition, decoded in `step` (default: the first step that listens for the intent and its near
    meanings); with `patter`, also the hall set's patter in that step, where any sure hearing is false."""
    tallies: dict[str, Tally] = {}
    for snr in snrs:
        snr_db = SNRS[snr]
        rng = random.Random(f"{seed}:{snr}")
        crowd = real.real_crowd(random.Random(f"{seed}:crowd:{snr}"), part=babble) if snr_db is not None else None
        tally = tallies.setdefault(snr, Tally())
        for intent in intents or near_intents(grammar):
            listening = grammar.steps[step] if step else step_of(grammar, intent)
            near = set(grammar.intents[intent].near)
            for words in sentences(grammar, intent, per_intent, seed):
                for voice in voices:
                    samples = clip_in_hall(words, voice, snr_db, rng, crowd)
                    recognizer.set_step(listening)  # type: ignore[attr-defined]
                    began = time.perf_counter()
                    heard = recognizer.decode(samples)  # type: ignore[attr-defined]
                    tally.seconds.append(time.perf_counter() - began)
                    tally.sayings += 1
                    meanings = (
                        {m.intent for m in grammar.parse(heard.text, listening).meanings} if heard.text else set()
                    )
                    if heard.uncertain:
                        tally.unsure += 1
                    elif meanings == {intent}:
                        tally.right += 1
                    elif meanings & near:
                        tally.near += 1
                        tally.wrong.append(f"{voice}: {words!r} heard {heard.text!r} {heard.confidence:.2f}")
                    else:
                        tally.other += 1
                        tally.wrong.append(f"{voice}: {words!r} heard {heard.text!r} {heard.confidence:.2f}")
        if patter:
            listening = grammar.step_intents(step)  # every intent without a step
            for words in hallset.PATTER:
                for voice in voices:
                    samples = clip_in_hall(words, voice, snr_db, rng, crowd)
                    recognizer.set_step(listening)  # type: ignore[attr-defined]
                    heard = recognizer.decode(samples)  # type: ignore[attr-defined]
                    tally.patter += 1
                    if not heard.uncertain and heard.text:
                        tally.patter_sure += 1
                        tally.wrong.append(f"{voice}: patter {words!r} heard {heard.text!r} {heard.confidence:.2f}")
    return tallies


def report(tallies: dict[str, Tally], command: str, voices: Sequence[str]) -> str:
    lines = [HEADER]
    for snr, tally in tallies.items():
        lines.append(tally.row("clean" if SNRS[snr] is None else f"{snr} dB"))
    lines.append(f"\nvoices: {', '.join(voices)}\n`{command}`")
    for snr, tally in tallies.items():
        for line in tally.wrong:
            lines.append(f"  {snr}: {line}")
    return "\n".join(lines)
