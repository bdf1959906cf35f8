"""The hall model's data and training: `python -m lab.train head` (docs/hall-model.md).

Data, made here: many voices saying every call the ways a caller does (one breath, or the letter, a pause and
the number), and speech that is no call (the rule's phrases, patter with near misses, a letter or a number
alone, babble alone). Each saying goes through a hall: the PA returns it (delayed, reverberant), the room
reverberates, the band is sometimes cut to a PA's and compressed, the level and speed move, and babble runs
under it at 0-30 dB or none, with babble before and after as an endpointer cuts it.

Voices are split by speaker. Training: espeak-ng voices (four English accents x variants x rates x pitches),
festival's ked, the real FSDD speakers of one half with the KLettres letter B (B 1-9); validation (the
thresholds): other espeak variants. Neural voices (in the committed head's data; `--no-kokoro`
leaves them out): 32 Kokoro-82M voices in training, four of a style never trained on in validation
(`bench.kokoro`). Held out, for judging only: flite's awb, rms, slt, kal16 (the hall set's held-out voices), in
the other half of the real babble. The scenario benchmark's held-out espeak voices (en-gb-x-rp, en-us-nyc,
en-gb-scotland) never say a call or a phrase here; a quarter of the examples' babble is the benchmarks' espeak
crowd, which has them among its talkers.

Whisper's encoder is frozen: each example is encoded once (as the engine encodes an utterance, noise floor
included) and its states cached; the head (`engines.call_head`) is trained on them with torch on the CPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from assistant.audio import RATE
from assistant.engines import call_head
from assistant.grammar import Grammar
from assistant.messages import Ball
from lab.bench import audio as gen
from lab.bench import hallset, kokoro, real

ACCENTS = ("en-us", "en-gb", "en-gb-x-gbclan", "en-gb-x-gbcwmd")
VARIANTS = (
    "",
    "+m1",
    "+m2",
    "+m3",
    "+m4",
    "+m6",
    "+m7",
    "+f1",
    "+f2",
    "+f3",
    "+f5",
    "+klatt",
    "+klatt2",
    "+klatt4",
    "+Alex",
    "+Andy",
    "+Annie",
    "+Denis",
    "+Gene",
    "+Henrique",
    "+Jacky",
    "+Lee",
    "+Mario",
    "+Michael",
    "+Storm",
    "+Tweaky",
    "+aunty",
    "+boris",
    "+ed",
    "+edward",
    "+iven",
    "+john",
    "+linda",
    "+max",
    "+norbert",
    "+robert",
    "+steph",
    "+travis",
    "+victor",
    "+zac",
)
"""espeak-ng's variants (not +f4, +m5: the scenario benchmark's held-out voices are en-us-nyc+f4 and en-gb-x-rp+m5)."""
VALIDATION_VARIANTS = ("+m2", "+f2", "+Gene", "+linda", "+victor")
"""Variants kept for validation: the thresholds are chosen on them, the head never trains on them."""
FESTIVAL = ("festival:ked",)
HELD_OUT = hallset.HELD_OUT
PATTER = (
    "alright everybody settle down",
    "the bathrooms are down the hall",
    "before the break we play one more",
    "sixty seven people are here tonight",
    "forty cards sold at the door",
    "be careful with the coffee",
    "is everybody ready",
    "oh no somebody spilled",
    "gee that was close",
    "I see a lot of you are close",
    "in a minute we start",
    "thank you for coming out",
    "the raffle is after this game",
    "eye on the board folks",
    "no talking during the game please",
    "next we play the letter x",
    "twenty minutes to the break",
    "be nice to your neighbors",
    "oh what a night",
    "good evening and welcome",
    "get your daubers ready",
    "we start at seven",
    "the jackpot is five hundred",
    "one at a time please",
)
"""Speech that is no call, for training only (the hall set's PATTER is the held-out chatter)."""
SNRS: tuple[float | None, ...] = (None, 30.0, 20.0, 15.0, 10.0, 5.0, 0.0)


@dataclass(frozen=True)
class Example:
    samples: np.ndarray
    label: int
    voice: str
    kind: str
    snr: float | None


# ----- voices -------------------------------------------------------------------------------------------------


def training_voices(seed: int) -> tuple[list[str], list[str]]:
    """(training, validation) voice names: espeak accent x variant with a rate and a pitch drawn per voice."""
    rng = random.Random(f"{seed}:voices")
    train: list[str] = []
    valid: list[str] = []
    for accent, variant in itertools.product(ACCENTS, VARIANTS):
        name = f"espeak:{accent}{variant}@{rng.randrange(120, 201)}~{rng.randrange(25, 80)}"
        (valid if variant in VALIDATION_VARIANTS else train).append(name)
    train += list(FESTIVAL)
    train += [f"real:{s}" for s in real_speakers("train")]
    return train, valid


KOKORO_VOICES = 32
KOKORO_VALIDATION = 4
KOKORO_HELD_STYLE = "jf_tebukuro"
"""The Kokoro style that speaks in validation only (mostly itself, a little of another): a neural voice the
head never trained on, beside the espeak variants."""


def kokoro_voices(seed: int) -> tuple[list[str], list[str]]:
    """(training, validation) Kokoro voices: an accent, two styles blended, a speaking rate, drawn per voice."""
    rng = random.Random(f"{seed}:kokoro")
    styles = [s for s in kokoro.STYLES if s != KOKORO_HELD_STYLE]

    def voice(style: str, other: str, weight: float) -> str:
        speed = rng.uniform(0.85, 1.2)
        return (
            f"kokoro:{kokoro.KokoroVoice(rng.choice(kokoro.ACCENTS), style, other, round(weight, 2), round(speed, 2))}"
        )

    train = []
    for _ in range(KOKORO_VOICES):
        first, second = rng.sample(styles, 2)
        train.append(voice(first, second, rng.random()))
    valid = [voice(KOKORO_HELD_STYLE, rng.choice(styles), rng.uniform(0.0, 0.3)) for _ in range(KOKORO_VALIDATION)]
    return train, valid


def real_speakers(part: str) -> list[str]:
    speakers = sorted({r.speaker for r in real.manifest() if r.source == real.FSDD})
    return [s for s in speakers if real.babble_part(s, speakers) == part]


@lru_cache(maxsize=8192)
def _festival(text: str, voice: str) -> np.ndarray:
    if shutil.which("text2wave") is None:
        raise hallset.HallSetError("festival voices need Debian's festival and festvox-kdlpc16k")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "say.wav"
        subprocess.run(
            ["text2wave", "-eval", f"(voice_{voice}_diphone)", "-o", str(out)],
            input=text.encode(),
            check=True,
            capture_output=True,
            timeout=60,
        )
        from assistant.audio import read_wav

        return gen.trim(read_wav(out).channels[0])


def say(text: str, voice: str) -> np.ndarray:
    """`text` said by a voice of `hallset.say`, 'festival:NAME' or 'kokoro:...' (`bench.kokoro`)."""
    kind, _, name = voice.partition(":")
    if kind == "festival":
        return _festival(text, name)
    return hallset.say(text, voice)


# ----- sayings ------------------------------------------------------------------------------------------------


def _paused(parts: Sequence[np.ndarray], rng: random.Random) -> np.ndarray:
    """A letter and its number with the pause a caller makes between them (0.05-0.7 s)."""
    gap = np.zeros(int(rng.uniform(0.05, 0.7) * RATE))
    return np.concatenate([parts[0], gap, parts[1]])


class Sayer:
    """Says calls and other speech in one voice (real voices: the KLettres letter and FSDD digits)."""

    def __init__(self, voice: str, grammar: Grammar) -> None:
        self.voice = voice
        self.grammar = grammar
        self._digits: dict[int, list[Path]] = {}
        self._letters: dict[str, Path] = {}
        if voice.startswith("real:"):
            found = real.takes()
            self._digits = found.digits[voice.partition(":")[2]]
            self._letters = found.letters

    @property
    def is_real(self) -> bool:
        return bool(self._digits)

    def balls(self) -> list[Ball]:
        if self.is_real:
            return [Ball(n) for n in range(1, 10) if self._digits.get(n)]
        return [Ball(n) for n in range(1, 76)]

    def call(self, ball: Ball, rng: random.Random) -> np.ndarray:
        if self.is_real:
            letter = ball.letter
            parts = [real.piece(self._letters[letter.lower()]), real.piece(rng.choice(self._digits[ball.number]))]
            return _paused(parts, rng)
        return self._said(ball.letter, ball.number, rng)

    def misnamed(self, rng: random.Random) -> tuple[np.ndarray, str]:
        """A call naming no ball ("B thirty two": a letter with a number of another letter's range), said as calls
        are, and its words; a synthetic voice only."""
        letter = rng.choice("BINGO")
        number = rng.choice([n for n in range(1, 76) if Ball(n).letter != letter])
        return self._said(letter, number, rng), f"{letter} {self.grammar.number_words(number)}"

    def _said(self, letter: str, value: int, rng: random.Random) -> np.ndarray:
        number = self.grammar.number_words(value)
        if rng.random() < 0.35:
            text = rng.choice((f"{letter}, {number}.", f"{letter} {number}", f"{letter}. {number}."))
            return hallset._level(say(text, self.voice))
        return _paused([hallset._level(say(f"{letter}.", self.voice)), hallset._level(say(number, self.voice))], rng)

    def other(self, rng: random.Random, phrases: Sequence[str]) -> tuple[np.ndarray, str, str]:
        """Speech that is no call: a phrase of the rule, patter, a letter or a number alone; (samples, kind,
        the words said)."""
        pick = rng.random()
        if self.is_real:
            digit = rng.choice([n for n in self._digits if self._digits[n]])
            return real.piece(rng.choice(self._digits[digit])), "number alone", self.grammar.number_words(digit)
        if pick < 0.45:
            kind, words = "phrase", rng.choice(phrases)
        elif pick < 0.75:
            kind, words = "patter", rng.choice(PATTER)
        elif pick < 0.88:
            letter = rng.choice("BINGO")
            return hallset._level(say(f"{letter}.", self.voice)), "letter alone", letter
        else:
            kind, words = "number alone", self.grammar.number_words(rng.randrange(1, 100))
        return hallset._level(say(words, self.voice)), kind, words


def phrases(grammar: Grammar) -> list[str]:
    """Sentences of every intent but the call, a few each (the rule's phrases and the questions)."""
    rng = random.Random(7)
    out: list[str] = []
    for intent in grammar.known:
        if intent == "call":
            continue
        said = [words for words, _ in itertools.islice(grammar.samples(intent), 400)]
        out += rng.sample(said, min(6, len(said)))
    return out


# ----- the hall ---------------------------------------------------------------------------------------------


def _bandlimit(x: np.ndarray, rng: random.Random) -> np.ndarray:
    from scipy.signal import butter, sosfilt

    sos = butter(4, [rng.uniform(150, 400), rng.uniform(3000, 5000)], btype="band", fs=RATE, output="sos")
    return np.asarray(sosfilt(sos, x))


def _compress(x: np.ndarray, rng: random.Random) -> np.ndarray:
    drive = rng.uniform(1.5, 4.0)
    peak = max(float(np.max(np.abs(x))), 1.0)
    return np.asarray(np.tanh(x / peak * drive) / np.tanh(drive) * peak)


def _speed(x: np.ndarray, rng: random.Random) -> np.ndarray:
    from scipy.signal import resample_poly

    up = rng.choice((9, 10, 11))
    return np.asarray(resample_poly(x, 10, up)) if up != 10 else x


def through_hall(clip: np.ndarray, rng: random.Random) -> np.ndarray:
    """A saying as the hall's microphone hears it, before the babble."""
    from scipy.signal import fftconvolve

    x = clip * 10 ** (rng.uniform(-8.0, 4.0) / 20)
    if rng.random() < 0.2:
        x = _speed(x, rng)
    if rng.random() < 0.3:
        wet = fftconvolve(x, hallset.room(rng, rng.uniform(0.3, 1.5)))[: len(x)]
        x = x + wet * 10 ** (-rng.uniform(3.0, 12.0) / 20)
    if rng.random() < 0.7:
        delay = int(rng.uniform(0.02, 0.15) * RATE)
        wet = fftconvolve(x, hallset.room(rng, rng.uniform(0.5, 1.5)))[: len(x)]
        back = np.zeros(len(x))
        back[delay:] = wet[: len(x) - delay] * 10 ** (-rng.uniform(6.0, 16.0) / 20)
        x = x + back
    if rng.random() < 0.3:
        x = _bandlimit(x, rng)
    if rng.random() < 0.3:
        x = _compress(x, rng)
    return np.asarray(x)


def in_babble(speech: np.ndarray | None, snr: float | None, crowd: gen.Crowd, rng: random.Random) -> np.ndarray:
    """Speech with babble before, under and after it, as an endpointer would cut it (babble alone when None)."""
    lead = int(rng.uniform(0.05, 0.5) * RATE)
    trail = int(rng.uniform(0.1, 0.6) * RATE)
    if speech is None:
        return _crowd_alone(int(rng.uniform(0.6, 2.5) * RATE), crowd, rng)
    return _in_crowd(speech, lead, trail, snr, crowd, rng)


def _crowd_alone(n: int, crowd: gen.Crowd, rng: random.Random) -> np.ndarray:
    """`n` samples of babble alone, 0-15 dB under the hall's level, with the microphone's own noise."""
    level = real.LEVEL * 10 ** (-rng.uniform(0.0, 15.0) / 20)
    out = crowd.babble(n) * level
    out += np.random.default_rng(rng.randrange(2**32)).normal(0.0, 2.0, n)
    return hallset._int16(out)


def _in_crowd(
    speech: np.ndarray, lead: int, trail: int, snr: float | None, crowd: gen.Crowd, rng: random.Random
) -> np.ndarray:
    """Speech after `lead` samples and before `trail`, babble `snr` dB under its loud part all along (none when
    None), with the microphone's own noise."""
    n = lead + len(speech) + trail
    out = np.zeros(n)
    out[lead : lead + len(speech)] = speech
    if snr is not None:
        power = real.loud_power(speech)
        out += crowd.babble(n) * np.sqrt(power / 10 ** (snr / 10))
    out += np.random.default_rng(rng.randrange(2**32)).normal(0.0, 2.0, n)
    return hallset._int16(out)


CUT_LEAD = (1.5, 3.0)
"""Seconds of continuous babble before a saying cut as the endpointer cuts it (`as_cut`) ..."""
CUT_TRAIL = (0.8, 2.0)
"""... and after it."""
CUT_COVER = 0.9
"""The share of a saying's voiced span its cut must hold to be the saying's example."""


def as_cut(speech: np.ndarray | None, snr: float | None, crowd: gen.Crowd, rng: random.Random) -> np.ndarray | None:
    """Speech in seconds of continuous babble, cut as the engine's endpointer cuts it: babble the cut joins to the
    saying stays with it, as in a hall. The cut that holds `CUT_COVER` of the saying's voiced span; None when no
    cut does (the saying split or missed: `in_babble` makes its example then). Babble alone (`speech` None): the
    first stretch the endpointer opens on it, or None."""
    from assistant.endpoint import HALL_CUTTING

    lead = int(rng.uniform(*CUT_LEAD) * RATE)
    trail = int(rng.uniform(*CUT_TRAIL) * RATE)
    if speech is None:
        stream = _crowd_alone(lead + trail, crowd, rng)
    else:
        stream = _in_crowd(speech, lead, trail, snr, crowd, rng)
    cuts = [(round(start * RATE), samples) for start, _, samples in hallset.utterances(stream, HALL_CUTTING)]
    if speech is None:
        return cuts[0][1] if cuts else None
    loud = np.flatnonzero(np.abs(speech) > 0.05 * float(np.max(np.abs(speech)) or 1.0))
    if not len(loud):
        return None
    first, last = lead + int(loud[0]), lead + int(loud[-1]) + 1
    for start, samples in cuts:
        held = min(last, start + len(samples)) - max(first, start)
        if held >= CUT_COVER * (last - first):
            return samples
    return None


def examples(
    voice: str, index: int, seed: int, grammar: Grammar, babble: str, calls: int, others: int, cut: bool = False
) -> Iterator[Example]:
    """`calls` balls said by `voice` (the voices take turns through the 75, so that together they say each about
    as often), `others` sayings that are no call and a few stretches of babble alone, each in its own hall.
    `cut`: each in seconds of continuous babble, cut as the engine's endpointer cuts it (`as_cut`)."""
    said = phrases(grammar)
    crowds = [real.real_crowd(random.Random(seed + k), part=babble) for k in range(3)]
    crowds.append(gen.Crowd(random.Random(seed + 9)))
    rng = random.Random(f"{seed}:{voice}")
    sayer = Sayer(voice, grammar)
    pool = sayer.balls()
    picked = [pool[(index * calls + j) % len(pool)] for j in range(calls)]
    items: list[tuple[int, str]] = [(b.number, "call") for b in picked]
    items += [(0, "other")] * others + [(0, "babble")] * max(1, others // 6)
    for label, kind in items:
        snr = rng.choice(SNRS)
        crowd = rng.choice(crowds)
        if kind == "babble":
            alone = as_cut(None, None, crowd, rng) if cut else None
            yield Example(in_babble(None, None, crowd, rng) if alone is None else alone, 0, voice, kind, None)
            continue
        if label:
            clip = sayer.call(Ball(label), rng)
        else:
            clip, kind, _ = sayer.other(rng, said)
        heard = through_hall(clip, rng)
        cut_out = as_cut(heard, snr, crowd, rng) if cut else None
        samples = in_babble(heard, snr, crowd, rng) if cut_out is None else cut_out
        yield Example(samples, label, voice, kind, snr)


def held_out_examples(
    voice: str, seed: int, grammar: Grammar, snr: float | None, cut: bool = False
) -> Iterator[Example]:
    """A held-out flite voice saying every ball once in a condition, and the hall set's patter, in the test half
    of the real babble (`cut`: in continuous babble, cut as the endpointer cuts it; a saying no cut holds is
    left out)."""
    crowds = [real.real_crowd(random.Random(seed + k), part="test") for k in range(3)]
    rng = random.Random(f"{seed}:{voice}:{snr}")

    def heard(clip: np.ndarray) -> np.ndarray | None:
        at_mic = through_hall(clip, rng)
        crowd = rng.choice(crowds)
        return as_cut(at_mic, snr, crowd, rng) if cut else in_babble(at_mic, snr, crowd, rng)

    for ball in Sayer(voice, grammar).balls():
        samples = heard(hallset.saying(ball, voice, grammar, rng, None))
        if samples is not None:
            yield Example(samples, ball.number, voice, "call", snr)
    for line in hallset.PATTER:
        samples = heard(hallset._level(say(line, voice)))
        if samples is not None:
            yield Example(samples, 0, voice, "patter", snr)


# ----- encoding -----------------------------------------------------------------------------------------------

_ENCODER: Any = None


def _encoder() -> Any:
    global _ENCODER
    if _ENCODER is None:
        from assistant.engines import make_recognizer

        _ENCODER = make_recognizer("whisper", Grammar.load(), None)
    return _ENCODER


Job = tuple[str, str, int, int, str, int, int, float | None]
"""(what, voice, index, seed, babble, calls, others, snr): one voice's examples, made and encoded in a worker;
`what` ends in "-cut" for sayings in continuous babble cut as the endpointer cuts them (`as_cut`)."""


def _job(job: Job) -> dict[str, np.ndarray]:
    what, voice, index, seed, babble, calls, others, snr = job
    grammar = Grammar.load()
    cut = what.endswith("-cut")
    if what.startswith("held-out"):
        found = list(held_out_examples(voice, seed, grammar, snr, cut))
    else:
        found = list(examples(voice, index, seed, grammar, babble, calls, others, cut))
    encoder = _encoder()
    xs = np.zeros((len(found), call_head.FRAMES // call_head.POOL, 512), dtype=np.float16)
    ns = np.zeros(len(found), dtype=np.int32)
    for k, e in enumerate(found):
        x, ns[k] = call_head.pooled(encoder.encode(e.samples), len(e.samples))
        xs[k] = x
    return {
        "x": xs,
        "n": ns,
        "label": np.array([e.label for e in found], dtype=np.int32),
        "voice": np.array([e.voice for e in found]),
        "kind": np.array([e.kind for e in found]),
        "snr": np.array([-99.0 if e.snr is None else e.snr for e in found], dtype=np.float32),
        "seconds": np.array([len(e.samples) / RATE for e in found], dtype=np.float32),
    }


def dataset(
    jobs: Sequence[Any],
    workers: int,
    log: Callable[[str], None],
    path: Path | None = None,
    work: Callable[[Any], dict[str, np.ndarray]] | None = None,
) -> dict[str, np.ndarray]:
    """Every job's examples made and encoded by `work` (the head's `_job` by default; a module-level function, for
    the workers; each job's second item names its voice) in `workers` processes, started fresh (a forked torch or
    encoder can hang; one worker runs here), joined, kept at `path` (npz) if given."""
    work = work or _job
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    parts: list[dict[str, np.ndarray]] = []
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        if workers > 1:
            context = multiprocessing.get_context("spawn")
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=workers, mp_context=context))
            made: Iterator[dict[str, np.ndarray]] = pool.map(work, jobs)
        else:
            made = map(work, jobs)
        for k, part in enumerate(made):
            parts.append(part)
            log(f"{k + 1}/{len(jobs)} {jobs[k][1]}: {len(part['label'])} examples, {time.monotonic() - began:.0f} s")
    data = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    if path is not None:
        np.savez(path, **data)  # type: ignore[arg-type]
    return data


# ----- the head in torch --------------------------------------------------------------------------------------


def _torch_head(width: int, hidden: int) -> Any:
    import torch
    from torch import nn

    class Head(nn.Module):
        """The numpy head of `engines.call_head`, trainable."""

        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(width, hidden)
            self.c1 = nn.Conv1d(hidden, hidden, 5, padding=2)
            self.c2 = nn.Conv1d(hidden, hidden, 5, padding=4, dilation=2)
            self.att = nn.Linear(hidden, 1, bias=False)
            self.out = nn.Linear(2 * hidden, call_head.LABELS)
            self.drop = nn.Dropout(0.2)
            self.act = nn.GELU(approximate="tanh")

        def forward(self, x: Any, mask: Any) -> Any:
            h = self.act(self.inp(self.drop(x)))
            m = mask[:, :, None]
            h = h * m
            h = h + self.act(self.c1(h.transpose(1, 2)).transpose(1, 2)) * m
            h = h + self.act(self.c2(h.transpose(1, 2)).transpose(1, 2)) * m
            h = self.drop(h)
            scores = self.att(h)[:, :, 0].masked_fill(mask == 0, -1e9)
            weights = torch.softmax(scores, dim=1)
            pooled_h = torch.einsum("bt,bth->bh", weights, h)
            maxed = h.masked_fill(m == 0, -1e9).max(dim=1).values
            return self.out(torch.cat([pooled_h, maxed], dim=1))

    return Head()


def _arrays(model: Any) -> dict[str, np.ndarray]:
    def a(t: Any) -> np.ndarray:
        return np.asarray(t.detach().cpu().numpy(), dtype=np.float32)

    return {
        "w1": a(model.inp.weight).T.copy(),
        "b1": a(model.inp.bias),
        "c1w": a(model.c1.weight).transpose(2, 1, 0).copy(),
        "c1b": a(model.c1.bias),
        "c2w": a(model.c2.weight).transpose(2, 1, 0).copy(),
        "c2b": a(model.c2.bias),
        "att": a(model.att.weight)[0],
        "wo": a(model.out.weight).T.copy(),
        "bo": a(model.out.bias),
    }


def fit(
    data: dict[str, np.ndarray], seed: int, epochs: int, log: Callable[[str], None], hidden: int = 160
) -> dict[str, np.ndarray]:
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    x = torch.from_numpy(data["x"].astype(np.float32))
    n = torch.from_numpy(data["n"].astype(np.int64))
    y = torch.from_numpy(data["label"].astype(np.int64))
    steps = torch.arange(x.shape[1])[None, :]
    mask = (steps < n[:, None]).float()
    model = _torch_head(x.shape[2], hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=epochs * ((len(y) + 63) // 64))
    gen_ = torch.Generator().manual_seed(seed)
    for epoch in range(epochs):
        model.train()
        total, right = 0.0, 0
        for idx in _batches(n, gen_):
            width = int(n[idx].max())  # the frames past the longest utterance are zeros: no need to run them
            logits = model(x[idx, :width], mask[idx, :width])
            loss = torch.nn.functional.cross_entropy(logits, y[idx], label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
            right += int((logits.argmax(1) == y[idx]).sum())
        log(f"epoch {epoch + 1}/{epochs}: loss {total / len(y):.3f}, train accuracy {right / len(y):.3f}")
    model.eval()
    return _arrays(model)


def _batches(n: Any, gen_: Any, size: int = 64) -> list[Any]:
    """Batches of `size` in random order, each of utterances of about the same length (sorted within runs of 16
    batches), so that a batch runs only as many frames as its longest utterance needs."""
    import torch

    order = torch.randperm(len(n), generator=gen_)
    batches = []
    for k in range(0, len(order), size * 16):
        run = order[k : k + size * 16]
        run = run[torch.argsort(n[run])]
        batches += [run[j : j + size] for j in range(0, len(run), size)]
    return [batches[int(j)] for j in torch.randperm(len(batches), generator=gen_)]


def sha256_of(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for key in sorted(arrays):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(arrays[key]).tobytes())
    return digest.hexdigest()


def save(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """The weights file: the arrays as `call_head.stored` names them, and the meta as JSON."""
    blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    with path.open("wb") as f:
        np.savez(f, **{k: v.astype(np.float32) for k, v in arrays.items()}, meta=blob)  # type: ignore[arg-type]


def posteriors(head: call_head.CallHead, data: dict[str, np.ndarray]) -> np.ndarray:
    return np.stack(
        [head.posterior_pooled(x.astype(np.float32), int(n)) for x, n in zip(data["x"], data["n"], strict=True)]
    )


def log_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----- the whole run ------------------------------------------------------------------------------------------

SEED = 2026
"""The seed the committed head was made with (`python -m lab.train head --seed`): its data, and its first
member's training (member k is trained with SEED + k)."""
MEMBERS = 3
"""Heads averaged in the committed head (`--members`): one alone is sure of a wrong ones digit more often."""
CALLS_PER_VOICE = 40
OTHERS_PER_VOICE = 12
CUT_CALLS_PER_VOICE = 20
CUT_OTHERS_PER_VOICE = 6
HELD_OUT_SNRS: tuple[float | None, ...] = (None, 20.0, 10.0, 5.0, 0.0)


def plan(seed: int) -> dict[str, list[Job]]:
    """The jobs of each part of the sets: train and validation (other espeak variants) with their Kokoro parts
    (`set_parts`: used with `neural`; a folder made before keeps the first parts), and held-out (flite, test
    babble)."""
    train, valid = training_voices(seed)
    neural_train, neural_valid = kokoro_voices(seed)

    def jobs(voices: list[str], seed: int) -> list[Job]:
        return [("train", v, k, seed, "train", CALLS_PER_VOICE, OTHERS_PER_VOICE, None) for k, v in enumerate(voices)]

    return {
        "train": jobs(train, seed),
        "train-kokoro": jobs(neural_train, seed),
        "valid": jobs(valid, seed + 1),
        "valid-kokoro": jobs(neural_valid, seed + 1),
        "held-out": [("held-out", v, 0, seed + 2, "test", 0, 0, snr) for v in HELD_OUT for snr in HELD_OUT_SNRS],
        "train-cut": [
            ("train-cut", v, k, seed + 3, "train", CUT_CALLS_PER_VOICE, CUT_OTHERS_PER_VOICE, None)
            for k, v in enumerate(train)
        ],
        "valid-cut": [
            ("valid-cut", v, k, seed + 4, "train", CUT_CALLS_PER_VOICE, CUT_OTHERS_PER_VOICE, None)
            for k, v in enumerate(valid)
        ],
        "held-out-cut": [
            ("held-out-cut", v, 0, seed + 5, "test", 0, 0, snr) for v in HELD_OUT for snr in HELD_OUT_SNRS
        ],
    }


def set_parts(neural: bool, cut: bool = False) -> dict[str, tuple[str, ...]]:
    """The parts each set is joined from: the Kokoro voices only with `neural` (in the committed head's data,
    docs/hall-model.md); with `cut`, sayings in continuous babble cut as the endpointer cuts them
    (`as_cut`) join training and validation, and are judged as a held-out set of their own."""
    parts: dict[str, tuple[str, ...]] = {"train": ("train",), "valid": ("valid",), "held-out": ("held-out",)}
    if neural:
        parts = {"train": ("train", "train-kokoro"), "valid": ("valid", "valid-kokoro"), "held-out": ("held-out",)}
    if cut:
        parts = {
            "train": (*parts["train"], "train-cut"),
            "valid": (*parts["valid"], "valid-cut"),
            "held-out": parts["held-out"],
            "held-out-cut": ("held-out-cut",),
        }
    return parts


def load_or_make(
    name: str, jobs: Sequence[Job], folder: Path, workers: int, log: Callable[[str], None]
) -> dict[str, np.ndarray]:
    path = folder / f"{name}.npz"
    if path.is_file():
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    log(f"making the {name} set: {len(jobs)} voices")
    return dataset(jobs, workers, log, path)


def sets(
    seed: int, folder: Path, workers: int, log: Callable[[str], None], neural: bool = True, cut: bool = False
) -> dict[str, dict[str, np.ndarray]]:
    """The train, validation and held-out sets (and held-out-cut with `cut`), from `folder` where they are, made
    (and kept there) where not; each joined from its parts (`set_parts`)."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = plan(seed)
    made = {}
    for name, parts in set_parts(neural, cut).items():
        found = [load_or_make(part, jobs[part], folder, workers, log) for part in parts]
        made[name] = {key: np.concatenate([f[key] for f in found]) for key in found[0]}
    return made


def conditions(snrs: np.ndarray) -> list[float]:
    """The SNRs of a set (-99: clean), clean first, then the loudest babble last."""
    return sorted(set(snrs.tolist()), key=lambda v: -v if v > -99 else -1000)


SURE_WRONG = 0.001
"""The share of the validation's sayings allowed to be heard sure and wrong by the head alone when its threshold
is chosen (the engine asks the decoder to agree as well; the target is 0.3 % of held-out calls)."""


def choose_sure_at(p: np.ndarray, labels: np.ndarray, sure_wrong: float = SURE_WRONG) -> float:
    """The lowest probability from which the head's call (argmax a ball) is wrong on at most `sure_wrong` of the
    sayings."""
    top = p.argmax(1)
    q = p.max(1)
    calls = top != 0
    order = np.argsort(-q[calls])
    wrong = np.cumsum((top[calls] != labels[calls])[order])
    ok = np.nonzero(wrong <= sure_wrong * len(labels))[0]
    if not len(ok):
        return 1.0
    return float(max(q[calls][order][ok.max()], 0.5))


def table(p: np.ndarray, data: dict[str, np.ndarray], sure_at: float) -> str:
    """Per condition: calls the head hears right (argmax), sure and right, sure and wrong, and sure calls in the
    speech that is no call."""
    lines = [
        "| condition | calls | head right % | sure and right % | sure and wrong % | no-call sayings "
        "| sure calls in them |",
        "|---|---|---|---|---|---|---|",
    ]
    top, q = p.argmax(1), p.max(1)
    for snr in conditions(data["snr"]):
        here = data["snr"] == snr
        calls = here & (data["label"] > 0)
        others = here & (data["label"] == 0)
        sure = (top != 0) & (q >= sure_at)
        right = calls & (top == data["label"])
        lines.append(
            f"| {'clean' if snr <= -99 else f'{snr:g} dB'} | {int(calls.sum())} "
            f"| {100 * right.sum() / max(1, calls.sum()):.1f} "
            f"| {100 * (right & sure).sum() / max(1, calls.sum()):.1f} "
            f"| {100 * (calls & sure & (top != data['label'])).sum() / max(1, calls.sum()):.2f} "
            f"| {int(others.sum())} | {int((others & sure).sum())} |"
        )
    return "\n".join(lines)


def run(
    seed: int,
    epochs: int,
    workers: int,
    folder: Path,
    out: Path,
    command: str,
    log: Callable[[str], None],
    neural: bool = True,
    members: int = MEMBERS,
    cut: bool = False,
) -> str:
    """Make (or reuse from `folder`) the sets, train `members` heads (seeds `seed`, `seed` + 1, ...) on the same
    data, choose the thresholds on validation for their average, judge it on held-out (and on held-out sayings cut
    from continuous babble, with `cut`), write the head to `out`; the tables."""
    began = time.monotonic()
    made = sets(seed, folder, workers, log, neural, cut)
    fitted = []
    for k in range(members):
        log(f"training member {k + 1} of {members} (seed {seed + k})")
        fitted.append(fit(made["train"], seed + k, epochs, log))
    head = call_head.CallHead(tuple(fitted), {})
    arrays = call_head.stored(head.members)
    valid_p = posteriors(head, made["valid"])
    sure_at = choose_sure_at(valid_p, made["valid"]["label"])
    held_p = posteriors(head, made["held-out"])
    report = (
        "validation voices (thresholds chosen here)\n\n"
        + table(valid_p, made["valid"], sure_at)
        + "\n\nheld-out voices (flite, test half of the real babble)\n\n"
        + table(held_p, made["held-out"], sure_at)
    )
    if "held-out-cut" in made:
        report += "\n\nheld-out voices, each saying in continuous babble cut as the endpointer cuts it\n\n" + table(
            posteriors(head, made["held-out-cut"]), made["held-out-cut"], sure_at
        )
    meta = {
        "sure_at": round(sure_at, 6),
        "frames": call_head.FRAMES,
        "pool": call_head.POOL,
        "seed": seed,
        "members": members,
        "cut": cut,
        "epochs": epochs,
        "command": command,
        "weights_sha256": sha256_of(arrays),
        "member_sha256": [sha256_of(m) for m in fitted],
        "data": {
            name: {"examples": len(s["label"]), "voices": len(set(s["voice"].tolist()))} for name, s in made.items()
        },
        "minutes": round((time.monotonic() - began) / 60, 1),
    }
    save(out, arrays, meta)
    return report


def share_of(data: dict[str, np.ndarray], share: float, seed: int) -> dict[str, np.ndarray]:
    """The examples of `share` of the voices (drawn with the seed)."""
    voices = sorted(set(data["voice"].tolist()))
    random.Random(f"{seed}:share").shuffle(voices)
    keep = set(voices[: max(1, round(share * len(voices)))])
    rows = np.array([v in keep for v in data["voice"].tolist()])
    return {k: v[rows] for k, v in data.items()}


def curve(
    seed: int,
    epochs: int,
    workers: int,
    folder: Path,
    shares: Sequence[float],
    log: Callable[[str], None],
    neural: bool = True,
) -> str:
    """Held-out accuracy of heads trained on shares of the training voices (each head's own threshold, chosen on
    validation): the curve of accuracy against training size and SNR. No weights are written."""
    made = sets(seed, folder, workers, log, neural)
    held = made["held-out"]
    snrs = conditions(held["snr"])
    head = ["training voices", "examples", *(f"{'clean' if s <= -99 else f'{s:g} dB'} right / sure" for s in snrs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for share in shares:
        part = share_of(made["train"], share, seed)
        model = call_head.CallHead((fit(part, seed, epochs, log),), {})
        sure_at = choose_sure_at(posteriors(model, made["valid"]), made["valid"]["label"])
        p = posteriors(model, held)
        top, q = p.argmax(1), p.max(1)
        cells = []
        for snr in snrs:
            calls = (held["snr"] == snr) & (held["label"] > 0)
            right = calls & (top == held["label"])
            cells.append(
                f"{100 * right.sum() / calls.sum():.1f} / {100 * (right & (q >= sure_at)).sum() / calls.sum():.1f}"
            )
        voices = len(set(part["voice"].tolist()))
        lines.append(f"| {voices} | {len(part['label'])} | " + " | ".join(cells) + " |")
        log(lines[-1])
    return "\n".join(lines)
