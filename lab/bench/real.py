"""The human recordings of REAL_AUDIO in the benchmark: real-speech babble, real calls, real chatter, one-step sets.

There are no recordings of whole bingo calls, so a real call is pieced together from real voices: the column
letter said by the KLettres speaker (one speaker, one recording per letter) followed by the number said by a
real speaker, either FSDD digits one by one ("N three eight", a form the grammar accepts) or, where AN4 has
the number as words ("thirty three", "nineteen"), that AN4 recording whole. Silence is trimmed off every
piece and the pieces are joined with short gaps (0.1-0.3 s). It is a check on real voices, not on natural
calling: the letter is always the same recording. Sources and licences: REAL_AUDIO/SOURCES.md.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from assistant.grammar import Grammar
from assistant.messages import Ball
from lab import REAL_AUDIO
from lab.bench import audio as gen

RATE = gen.RATE
LETTERS_SOURCE = "klettres-data"
"""One speaker saying the alphabet: the letters of the calls, never babble or chatter."""
FSDD = "FSDD"
AN4 = "AN4 subset"
TALK = ("pocketsphinx-testdata", "alphacep/vosk-api python/example/test.wav")
"""The sources of longer talk (sentences, digit strings) that the crowd's babble and the chatter are made of, with
FSDD's digits and AN4's utterances. The corpus's other sources (speech commands, Commons words, alphabet and number
voices) are single words and letters: in a crowd they would be calls said alone, so only what names them uses them."""
AN4_CALLS = {"nineteen": 19, "thirty three": 33}
"""AN4 numbers that are bingo balls, said whole (I 19, N 33)."""
LEVEL = 3000.0
"""RMS of the loud part of every piece after levelling (about -21 dBFS): pieces of one call sound as one voice."""
UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
PIECE_GAP = (0.1, 0.3)
"""Seconds between the letter and the number, and between the digits of a number."""
WORD_GAP = (0.0, 0.04)
"""Seconds between the words of one number ("twenty" "five") in a human call."""


class RealAudioError(RuntimeError):
    """The real recordings are missing or do not hold what the benchmark needs."""


@dataclass(frozen=True)
class Recording:
    """One file of the manifest: a human saying `text`."""

    path: Path
    text: str
    speaker: str
    source: str


def manifest(root: Path = REAL_AUDIO) -> list[Recording]:
    """Every recording listed in root/manifest.jsonl (empty when there is none)."""
    listing = root / "manifest.jsonl"
    if not listing.exists():
        return []
    out = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            out.append(Recording(root / entry["path"], str(entry["text"]), str(entry["speaker"]), str(entry["source"])))
    return out


def _frame_db(samples: np.ndarray) -> np.ndarray:
    x = samples.astype(np.float64)
    frames = x[: len(x) // 160 * 160].reshape(-1, 160)
    return np.asarray(10 * np.log10(np.mean(frames**2, axis=1) + 1e-3))


def trim(samples: np.ndarray, margin: float = 0.03) -> np.ndarray:
    """Cut leading and trailing silence of a recording by frame energy (10 ms frames).

    Speech is what lies within 40 dB of the loudest frame and, in a noisy recording, 6 dB above its quietest
    tenth (that bar never higher than 25 dB under the peak): the soft "s" of "six" stays.
    """
    db = _frame_db(samples)
    if db.size == 0:
        return samples
    peak, noise = float(db.max()), float(np.percentile(db, 10))
    loud = np.nonzero(db >= max(peak - 40.0, min(noise + 6.0, peak - 25.0)))[0]
    pad = int(margin * RATE)
    return samples[max(0, loud[0] * 160 - pad) : min(len(samples), (loud[-1] + 1) * 160 + pad)]


def loud_power(samples: np.ndarray) -> float:
    """Mean power of the frames within 30 dB of the loudest: the speech, not its pauses."""
    db = _frame_db(samples)
    if db.size == 0:
        return gen.power(samples)
    x = samples.astype(np.float64)[: len(samples) // 160 * 160].reshape(-1, 160)
    keep = db >= db.max() - 30.0
    return float(np.mean(x[keep] ** 2))


@lru_cache(maxsize=1024)
def piece(path: Path) -> np.ndarray:
    """A recording trimmed and levelled to LEVEL, float64."""
    from assistant.audio import read_wav

    samples = trim(read_wav(path).channels[0])
    return np.asarray(samples.astype(np.float64) * LEVEL / max(np.sqrt(loud_power(samples)), 1.0))


@lru_cache(maxsize=1)
def words_by_speaker(root: Path = REAL_AUDIO) -> dict[str, dict[str, list[Path]]]:
    """Each speaker's recordings by the words they say (sorted paths; shared, not to be changed)."""
    out: dict[str, dict[str, list[Path]]] = {}
    for rec in manifest(root):
        out.setdefault(rec.speaker, {}).setdefault(rec.text, []).append(rec.path)
    for words in out.values():
        for paths in words.values():
            paths.sort()
    return out


def human_number(number: int, numbers_of: str, grammar: Grammar, root: Path = REAL_AUDIO) -> list[list[Path]] | None:
    """The recordings `numbers_of` says `number` with, as a caller says it: the number's own word ("fifteen"), or
    its tens and its unit, each a word they recorded ("twenty" "two"); None when they cannot say it so (a number
    read digit by digit, "G four seven", is no caller's call)."""
    numbers = words_by_speaker(root).get(numbers_of, {})
    words = grammar.number_words(number)
    if numbers.get(words):
        return [numbers[words]]
    parts = words.split()
    if len(parts) == 2 and all(numbers.get(w) for w in parts):
        return [numbers[w] for w in parts]
    return None


def human_balls(letters_of: str, numbers_of: str, grammar: Grammar, root: Path = REAL_AUDIO) -> list[Ball]:
    """The balls `letters_of` and `numbers_of` together can call in their own words, in order."""
    letters = words_by_speaker(root).get(letters_of, {})
    return [
        Ball(n)
        for n in range(1, 76)
        if letters.get(Ball(n).letter.lower()) and human_number(n, numbers_of, grammar, root) is not None
    ]


def human_call(
    ball: Ball, letters_of: str, numbers_of: str, grammar: Grammar, rng: random.Random, root: Path = REAL_AUDIO
) -> tuple[np.ndarray, np.ndarray]:
    """The letter of `ball` as `letters_of` says it and its number as `numbers_of` says it (`human_number`), the
    words of a number joined as one word (`WORD_GAP`); each part trimmed and levelled (float64). A take is picked at
    random."""
    letter = words_by_speaker(root).get(letters_of, {}).get(ball.letter.lower())
    if not letter:
        raise RealAudioError(f"{letters_of} has no recording of the letter {ball.letter}")
    words = human_number(ball.number, numbers_of, grammar, root)
    if words is None:
        raise RealAudioError(f"{numbers_of} has no recording of {grammar.number_words(ball.number)} or its words")
    number = piece(rng.choice(words[0]))
    for more in words[1:]:  # "twenty" "five" said as one number: no pause between its words
        number = np.concatenate([number, np.zeros(int(rng.uniform(*WORD_GAP) * RATE)), piece(rng.choice(more))])
    return piece(rng.choice(letter)), number


# ----- babble --------------------------------------------------------------------------------------------


BABBLE_PARTS = ("all", "train", "test")
"""Which speakers a crowd is made of: all of them (the benchmarks), or one of two halves split by speaker (the hall
model is trained in the 'train' half and judged in the 'test' half, never in babble it was trained on)."""


def babble_part(speaker: str, speakers: Sequence[str]) -> str:
    """'train' or 'test': every other speaker of a source, in name order."""
    return "train" if sorted(speakers).index(speaker) % 2 == 0 else "test"


def babble_groups(root: Path = REAL_AUDIO, part: str = "all") -> list[list[np.ndarray]]:
    """The crowd's clips, in three groups picked equally often: FSDD digits, AN4 utterances, and the longer
    sentences (LibriVox and the other pocketsphinx test sentences, the vosk digit string). `part`: BABBLE_PARTS."""
    if part not in BABBLE_PARTS:
        raise ValueError(f"babble part must be one of {', '.join(BABBLE_PARTS)}, not {part!r}")
    groups: dict[str, list[np.ndarray]] = {"digits": [], "an4": [], "sentences": []}
    recordings = manifest(root)
    speakers: dict[str, set[str]] = {}
    for rec in recordings:
        speakers.setdefault(rec.source, set()).add(rec.speaker)
    for rec in recordings:
        if rec.source not in (FSDD, AN4, *TALK):
            continue
        if part != "all" and babble_part(rec.speaker, list(speakers[rec.source])) != part:
            continue
        group = "digits" if rec.source == FSDD else "an4" if rec.source == AN4 else "sentences"
        groups[group].append(piece(rec.path) / LEVEL)
    return [g for g in groups.values() if g]


def real_crowd(rng: random.Random, root: Path = REAL_AUDIO, talkers: int = 6, part: str = "all") -> gen.Crowd:
    """Crowd babble made only of human recordings (no single-speaker letters), of the speakers of `part`."""
    groups = babble_groups(root, part)
    if not groups:
        raise RealAudioError(f"no real recordings for babble in {root} (manifest.jsonl)")
    return gen.Crowd(rng, talkers=talkers, groups=groups, name="real")


# ----- real calls ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Takes:
    """What the manifest offers for calls: the letters, each FSDD speaker's takes of each digit, AN4 numbers."""

    letters: dict[str, Path]
    digits: dict[str, dict[int, list[Path]]]
    whole: list[tuple[Ball, Recording]]

    @property
    def speakers(self) -> list[str]:
        return sorted(self.digits)


def takes(root: Path = REAL_AUDIO) -> Takes:
    letters: dict[str, Path] = {}
    digits: dict[str, dict[int, list[Path]]] = {}
    whole: list[tuple[Ball, Recording]] = []
    for rec in manifest(root):
        if rec.source == LETTERS_SOURCE and rec.text in "bingo":
            letters[rec.text] = rec.path
        elif rec.source == FSDD and rec.text in UNITS:
            digits.setdefault(rec.speaker, {}).setdefault(UNITS.index(rec.text), []).append(rec.path)
        elif rec.source == AN4 and rec.text in AN4_CALLS:
            whole.append((Ball(AN4_CALLS[rec.text]), rec))
    if sorted(letters) != sorted("bingo"):
        raise RealAudioError(f"the letters B I N G O are not all in {root} (klettres_en)")
    for speaker in digits.values():
        for paths in speaker.values():
            paths.sort()
    return Takes(letters, digits, sorted(whole, key=lambda w: w[0].number))


def _join(pieces: Sequence[np.ndarray], rng: random.Random) -> np.ndarray:
    out: list[np.ndarray] = []
    for i, p in enumerate(pieces):
        if i:
            out.append(np.zeros(int(rng.uniform(*PIECE_GAP) * RATE)))
        out.append(p)
    return np.concatenate(out)


def digit_call(ball: Ball, grammar: Grammar, takes_of: dict[int, list[Path]], rng: random.Random) -> list[gen.Item]:
    """`ball` said twice by one FSDD speaker, digit by digit, each saying from other takes where there are."""
    digits = [int(d) for d in str(ball.number)]
    words = " ".join([ball.letter.lower(), *(grammar.units[d] for d in digits)])
    order = {d: rng.sample(range(len(takes_of[d])), len(takes_of[d])) for d in set(digits)}
    used: dict[int, int] = {}
    items = []
    for saying in (1, 2):
        paths = []
        for d in digits:
            pick = order[d][used.get(d, 0) % len(order[d])]
            used[d] = used.get(d, 0) + 1
            paths.append(takes_of[d][pick])
        items.append(gen.Item(words, "call", ball, "call", saying, tuple(paths)))
    return items


def call_clip(item: gen.Item, letters: dict[str, Path], rng: random.Random) -> np.ndarray:
    """The letter's recording, then the item's number recordings, joined with short gaps."""
    if item.ball is None:
        raise ValueError("a call item needs its ball")
    return _join([piece(letters[item.ball.letter.lower()]), *(piece(p) for p in item.recordings)], rng)


def call_streams(
    grammar: Grammar,
    per_speaker: int | None,
    seed: int,
    snr_db: float | None,
    crowd: gen.Crowd | None,
    speakers: int | None = None,
    root: Path = REAL_AUDIO,
) -> list[gen.Stream]:
    """One stream per FSDD speaker (the first `speakers`; None: all six) with `per_speaker` balls (slices
    rotating like the espeak streams; None: all 75), each ball said twice with 1-2 s between sayings; then one
    stream of the AN4 numbers, said twice.

    The same seed gives the same calls and gaps in every condition; only the babble differs.
    """
    found = takes(root)
    rng = random.Random(seed)
    balls = [Ball(n) for n in range(1, 76)]
    rng.shuffle(balls)
    count = per_speaker or len(balls)
    planned: list[tuple[str, list[gen.Item]]] = []
    for k, speaker in enumerate(found.speakers[:speakers]):
        pick = random.Random(seed * 1000 + k)
        order = [balls[(k * count + j) % len(balls)] for j in range(count)]
        pick.shuffle(order)
        items = [item for ball in order for item in digit_call(ball, grammar, found.digits[speaker], pick)]
        planned.append((f"real-calls-{speaker}", items))
    whole = [
        gen.Item(f"{ball.letter.lower()} {rec.text}", "call", ball, "call", saying, (rec.path,))
        for ball, rec in found.whole
        for saying in (1, 2)
    ]
    if whole:
        planned.append(("real-calls-an4", whole))
    streams = []
    for k, (name, items) in enumerate(planned):
        layout = random.Random(seed * 7919 + k)
        clips = [call_clip(item, found.letters, layout) for item in items]
        speech = float(np.mean([loud_power(c) for c in clips]))
        streams.append(gen.assemble(name, items, clips, snr_db, layout, crowd, speech_power=speech))
    return streams


def chatter_stream(
    seconds: float, seed: int, snr_db: float | None, crowd: gen.Crowd | None, root: Path = REAL_AUDIO
) -> gen.Stream:
    """Real off-grammar talk: the AN4, pocketsphinx and vosk recordings (yes/no, spelled words, digit strings,
    sentences), shuffled, again and again until `seconds` are said. Any sure call heard in it is false."""
    recs = [r for r in manifest(root) if r.source in (AN4, *TALK)]
    if not recs:
        raise RealAudioError(f"no real recordings for chatter in {root}")
    rng = random.Random(seed)
    items: list[gen.Item] = []
    clips: list[np.ndarray] = []
    said = 0.0
    while said < seconds:
        for rec in rng.sample(recs, len(recs)):
            clip = piece(rec.path)
            items.append(gen.Item(rec.text, "chatter", recordings=(rec.path,)))
            clips.append(clip)
            said += len(clip) / RATE + 0.75
            if said >= seconds:
                break
    speech = float(np.mean([loud_power(c) for c in clips]))
    return gen.assemble("real-chatter", items, clips, snr_db, rng, crowd, gap=(0.3, 1.2), speech_power=speech)


# ----- one-step sets: each recording decoded with the step that fits it ---------------------------------------


REAL_NUMBERS = {"one fifty", "two forty", "nineteen", "thirty three", "one hundred"}
DIGITS = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "oh"}


def real_sets(root: Path = REAL_AUDIO) -> dict[str, list[tuple[Path, str]]]:
    """Human recordings that fit a grammar step: FSDD single digits, AN4/TIDIGITS digit strings, AN4 numbers."""
    recs = manifest(root)
    if not recs:
        return {}
    sets: dict[str, list[tuple[Path, str]]] = {
        "fsdd digit": [],
        "an4 digit string": [],
        "an4 number": [],
        "an4 yes/no": [],
    }
    for rec in recs:
        if rec.source == FSDD:
            sets["fsdd digit"].append((rec.path, rec.text))
        elif rec.source not in (AN4, *TALK):
            continue
        elif rec.text in REAL_NUMBERS:
            sets["an4 number"].append((rec.path, rec.text))
        elif rec.text in ("yes", "no"):
            sets["an4 yes/no"].append((rec.path, rec.text))
        elif len(rec.text.split()) > 1 and all(w in DIGITS for w in rec.text.split()):
            sets["an4 digit string"].append((rec.path, rec.text))
    return sets


def real_grammar(grammar: Grammar) -> Grammar:
    """The bingo grammar plus bench-only intents and steps (in memory): a bare digit string, a bare number."""
    if grammar.source is None:
        raise RealAudioError("the real-speech sets need a grammar loaded from a file")
    import yaml

    data = yaml.safe_load(grammar.source.read_text(encoding="utf-8"))
    data["intents"]["bench-digits"] = {"templates": ["{serial}"]}
    data["intents"]["bench-number"] = {"templates": ["{number}"]}
    data["steps"]["bench-digits"] = ["bench-digits"]
    data["steps"]["bench-number"] = ["bench-number"]
    data["steps"]["bench-yes-no"] = ["yes", "no"]
    return Grammar(data, grammar.source)
