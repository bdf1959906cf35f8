"""Benchmark audio made here: espeak-ng voices saying calls and phrases, crowd babble, off-grammar chatter.

The human recordings (real calls, real babble) are cut and laid out in `real.py` with the same tools.

Nothing generated is committed: streams are rebuilt from a seed. Every stream is 16 kHz int16 mono and
carries the truth (which words were said, where) so the benchmark can score what a recognizer heard.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from assistant import audio
from assistant.messages import Ball

RATE = audio.RATE
ESPEAK_RATE = 22050

VOICES = (
    "en-us",
    "en-gb",
    "en-gb-scotland",
    "en-gb-x-rp",
    "en-us+f3",
    "en-029",
    "en-gb-x-gbclan+m3",
    "en-us-nyc+f2",
    "en-gb-x-gbcwmd+m7",
    "en-us+f4",
)
"""espeak-ng English voices, accents and variants; the benchmark takes the first N."""

WORDS_PER_MINUTE = (130, 165, 200)
"""Slow, ordinary and quick callers."""

BABBLE_SENTENCES = (
    "the birch canoe slid on the smooth planks",
    "glue the sheet to the dark blue background",
    "it is easy to tell the depth of a well",
    "these days a chicken leg is a rare dish",
    "rice is often served in round bowls",
    "the juice of lemons makes fine punch",
    "the box was thrown beside the parked truck",
    "the hogs were fed chopped corn and garbage",
    "four hours of steady work faced us",
    "a large size in stockings is hard to sell",
    "the boy was there when the sun rose",
    "a rod is used to catch pink salmon",
    "the source of the huge river is the clear spring",
    "kick the ball straight and follow through",
    "help the woman get back to her feet",
    "a pot of tea helps to pass the evening",
    "smoky fires lack flame and heat",
    "the soft cushion broke the man's fall",
    "the salt breeze came across from the sea",
    "the girl at the booth sold fifty bonds",
)
"""Harvard sentences (IEEE 1969) for the crowd: many voices at once, nobody in particular."""

CHATTER_SENTENCES = (
    "did you remember to bring the blue dauber this time",
    "my sister won the big game last week with three cards",
    "can you pass me the coffee please it is getting cold",
    "we should leave by nine so we can beat the traffic",
    "i only need one more number on this card",
    "the parking lot was full so we walked from the church",
    "she bought twelve cards and a bag of popcorn",
    "the kids are staying with their grandmother tonight",
    "i think the machine is running a little slow today",
    "are you going to the fish fry on friday",
    "this seat is taken my husband went to get drinks",
    "we have been coming here every tuesday for ten years",
    "hold on i dropped my pen under the table",
    "the weather has been terrible all week long",
    "i was so close on the last game i needed one",
    "do you want to split a pizza after this",
    "he said the jackpot is bigger than last month",
    "my feet hurt from standing in line so long",
    "look at all these people tonight it is packed",
    "the lady in the green sweater always wins",
    "turn your phone off before the next game starts",
    "i forgot my glasses in the car again",
    "they changed the snack bar menu last spring",
    "she told me the early bird starts at six thirty",
)
"""Hall talk that is not a call; some of it has numbers and letters in it, as real talk does."""


class SpeechError(RuntimeError):
    """espeak-ng could not speak a text."""


@dataclass(frozen=True)
class Voice:
    """One espeak-ng speaker: a voice name (with +variant), a speaking rate and a pitch (None: espeak's own, 50)."""

    name: str
    wpm: int
    pitch: int | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.wpm}" + ("" if self.pitch is None else f"~{self.pitch}")


@dataclass(frozen=True)
class Segment:
    """One thing said in a stream, where it was said, and what it means."""

    start: float
    end: float
    text: str
    kind: str
    """'call', 'phrase' or 'chatter'."""
    ball: Ball | None = None
    intent: str | None = None
    hearing: int = 0
    """1 or 2: callers say every call twice; 0 when not a call."""
    recordings: tuple[str, ...] = ()
    """The human recordings it is made of (real calls and chatter), relative to REAL_AUDIO."""


@dataclass
class Stream:
    """A continuous recording with the truth of what was said in it."""

    name: str
    samples: np.ndarray
    segments: list[Segment] = field(default_factory=list)

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE


@dataclass(frozen=True)
class Item:
    """Something to say in a stream."""

    text: str
    kind: str
    ball: Ball | None = None
    intent: str | None = None
    hearing: int = 0
    recordings: tuple[Path, ...] = ()
    """For recorded speech: the files it is said from, in order."""


def _pcm_from_espeak_wav(data: bytes) -> np.ndarray:
    """espeak-ng writes a streaming WAV header (sizes unknown): find the data chunk by hand."""
    pos = data.find(b"data")
    if not data.startswith(b"RIFF") or pos < 0:
        raise SpeechError("espeak-ng did not write a WAV")
    pcm = data[pos + 8 :]
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")


@lru_cache(maxsize=4096)
def _espeak(text: str, voice: str, wpm: int, pitch: int | None = None) -> bytes:
    pitched = [] if pitch is None else ["-p", str(pitch)]
    try:
        done = subprocess.run(
            ["espeak-ng", "-v", voice, "-s", str(wpm), *pitched, "--stdout", text],
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SpeechError(f"espeak-ng failed for voice {voice!r}: {exc}") from exc
    return done.stdout


def trim(samples: np.ndarray, margin: float = 0.02) -> np.ndarray:
    """Cut the leading and trailing silence espeak adds, so segment times are where speech is."""
    x = np.abs(samples.astype(np.float64))
    if x.size == 0 or x.max() == 0:
        return samples
    loud = np.nonzero(x > 0.02 * x.max())[0]
    pad = int(margin * RATE)
    return samples[max(0, loud[0] - pad) : loud[-1] + pad + 1]


def speak(text: str, voice: Voice) -> np.ndarray:
    """`text` said by `voice`: int16 mono 16 kHz, silence trimmed."""
    raw = _pcm_from_espeak_wav(_espeak(text, voice.name, voice.wpm, voice.pitch))
    if raw.size == 0:
        raise SpeechError(f"espeak-ng said nothing for {text!r} in voice {voice}")
    return trim(audio.from_samples(raw, ESPEAK_RATE).channels[0])


def voices(count: int, rates: Sequence[int] = WORDS_PER_MINUTE) -> list[Voice]:
    """The first `count` espeak voices, each at every rate."""
    if not 1 <= count <= len(VOICES):
        raise ValueError(f"voices must be 1..{len(VOICES)}, got {count}")
    return [Voice(name, wpm) for name in VOICES[:count] for wpm in rates]


def power(samples: np.ndarray) -> float:
    x = samples.astype(np.float64)
    return float(np.mean(x * x)) if x.size else 0.0


class Crowd:
    """Crowd babble: several talkers at once, each reading clips back to back from a random offset.

    The clips come in groups; a talker picks a group, then a clip in it, so a group of many short clips
    (single digits) does not crowd out a group of a few long ones (sentences). By default: one group of
    espeak voices reading Harvard sentences.
    """

    def __init__(
        self,
        rng: random.Random,
        talkers: int = 6,
        pool_size: int = 24,
        groups: Sequence[Sequence[np.ndarray]] | None = None,
        name: str = "espeak",
    ) -> None:
        self.rng = rng
        self.talkers = talkers
        self.name = name
        if groups is None:
            names = list(VOICES)
            groups = [
                [
                    speak(rng.choice(BABBLE_SENTENCES), Voice(rng.choice(names), rng.choice((150, 175, 200))))
                    for _ in range(pool_size)
                ]
            ]
        self.groups = [list(g) for g in groups if len(g)]
        if not self.groups:
            raise ValueError("a crowd needs at least one clip")

    def _talker(self, n: int) -> np.ndarray:
        track = np.zeros(n, dtype=np.float64)
        pos = -self.rng.randrange(0, 3 * RATE)  # each talker is mid-sentence when the stream starts
        while pos < n:
            clip = self.rng.choice(self.rng.choice(self.groups)).astype(np.float64)
            lo, hi = max(pos, 0), min(pos + len(clip), n)
            if hi > lo:
                track[lo:hi] += clip[lo - pos : hi - pos]
            pos += len(clip) + int(self.rng.uniform(0.05, 0.4) * RATE)
        return np.asarray(track / max(float(np.sqrt(power(track))), 1.0))

    def babble(self, n: int) -> np.ndarray:
        """`n` samples of babble, float64, unit RMS."""
        total = np.zeros(n)
        for _ in range(self.talkers):
            total += self._talker(n)
        return np.asarray(total / max(float(np.sqrt(power(total))), 1e-9))


def build_stream(
    name: str,
    items: Sequence[Item],
    voice_for: Sequence[Voice],
    snr_db: float | None,
    rng: random.Random,
    crowd: Crowd | None,
    gap: tuple[float, float] = (1.0, 2.0),
    lead: float = 1.0,
) -> Stream:
    """Say `items` one after another (item i in voice_for[i]), gaps of babble-only audio between them."""
    clips = [speak(item.text, voice) for item, voice in zip(items, voice_for, strict=True)]
    return assemble(name, items, clips, snr_db, rng, crowd, gap, lead)


def assemble(
    name: str,
    items: Sequence[Item],
    clips: Sequence[np.ndarray],
    snr_db: float | None,
    rng: random.Random,
    crowd: Crowd | None,
    gap: tuple[float, float] = (1.0, 2.0),
    lead: float = 1.0,
    speech_power: float | None = None,
) -> Stream:
    """Lay `clips` (item i said as clips[i]) one after another with gaps of background-only audio.

    snr_db None is clean (a faint dither only); otherwise babble runs under the whole stream, its level set
    so that speech power (by default the mean power of the clips) over babble power is `snr_db`.
    """
    starts: list[int] = []
    pos = int(lead * RATE)
    for clip in clips:
        starts.append(pos)
        pos += len(clip) + int(rng.uniform(*gap) * RATE)
    n = pos
    speech = np.zeros(n, dtype=np.float64)
    segments = []
    for item, clip, start in zip(items, clips, starts, strict=True):
        speech[start : start + len(clip)] += clip
        segments.append(
            Segment(
                start=start / RATE,
                end=(start + len(clip)) / RATE,
                text=item.text,
                kind=item.kind,
                ball=item.ball,
                intent=item.intent,
                hearing=item.hearing,
                recordings=tuple(f"{p.parent.name}/{p.name}" for p in item.recordings),
            )
        )
    if speech_power is None:
        speech_power = float(np.mean(np.concatenate([c.astype(np.float64) ** 2 for c in clips]))) if clips else 1e6
    mixed = add_babble(speech, speech_power, snr_db, rng, crowd)
    return Stream(name, mixed, segments)


def add_babble(
    speech: np.ndarray, speech_power: float, snr_db: float | None, rng: random.Random, crowd: Crowd | None
) -> np.ndarray:
    """Speech plus microphone self-noise plus babble at `snr_db` (None: none), as int16 without clipping."""
    n = len(speech)
    np_rng = np.random.default_rng(rng.randrange(2**32))
    mixed = speech.astype(np.float64) + np_rng.normal(0.0, 2.0, n)  # microphone self-noise, about -80 dB
    if snr_db is not None:
        if crowd is None:
            raise ValueError("a babble SNR needs a Crowd")
        mixed += crowd.babble(n) * np.sqrt(speech_power / 10 ** (snr_db / 10))
    peak = float(np.max(np.abs(mixed))) if n else 0.0
    if peak > 32000:
        mixed *= 32000 / peak
    return np.round(mixed).astype(np.int16)


def mix(samples: np.ndarray, snr_db: float | None, rng: random.Random, crowd: Crowd | None) -> np.ndarray:
    """One recording in babble; speech power is measured over its loud part (within 30 dB of the peak frame)."""
    x = samples.astype(np.float64)
    frames = x[: len(x) // 160 * 160].reshape(-1, 160)
    energy = np.mean(frames**2, axis=1) if len(frames) else np.zeros(1)
    loud = energy[energy > energy.max() * 1e-3]
    return add_babble(x, float(np.mean(loud)) if loud.size else 1.0, snr_db, rng, crowd)


def write_wav(path: Path, samples: np.ndarray) -> None:
    audio.write_wav(path, samples, RATE)


def read_wav(path: Path) -> np.ndarray:
    return audio.read_wav(path).channels[0]
