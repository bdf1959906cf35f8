"""A transcript script rendered as a stereo hall recording: left the caller's microphone, right the floor's.

The caller and the floor speak in different espeak-ng voices; players shouting "bingo" are heard on the floor
channel in a voice of their own. Each utterance is placed at its script time unless the one before it on the
same channel is still speaking (plus a pause the endpointer needs): then it and everything after it are
shifted later by the same amount, so order and spacing are kept, and the `TimeMap` says where each script time
landed. Board keys, ticks and the session end are not speech: they are carried over with mapped times.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from assistant.audio import RATE
from assistant.messages import BoardKey, GameStart, Input, Role, SessionEnd, Tick, Utterance, time_of
from lab.bench.audio import Crowd, Voice, add_babble, mix, speak

CALLER, FLOOR = 0, 1
"""Channel indexes: left is the caller's microphone, right the floor's."""


@dataclass(frozen=True)
class HallVoices:
    """Who speaks in which espeak-ng voice."""

    caller: Voice
    floor: Voice
    player: Voice
    name: str = "tuning"

    def for_role(self, role: Role) -> Voice:
        if role is Role.CALLER:
            return self.caller
        if role is Role.FLOOR:
            return self.floor
        return self.player


TUNING_VOICES = HallVoices(
    caller=Voice("en-us", 165), floor=Voice("en-gb", 160), player=Voice("en-us+f3", 175), name="tuning"
)
"""The voices the benchmark was tuned on."""

HELD_OUT_VOICES = HallVoices(
    caller=Voice("en-gb-x-rp+m5", 145),
    floor=Voice("en-us-nyc+f4", 190),
    player=Voice("en-gb-scotland+f2", 185),
    name="held-out",
)
"""Voices, variants and rates never used while tuning: the benchmark's unseen speakers."""


ROOM_DB = -60.0
"""Room tone and microphone noise of a quiet hall, dBFS RMS. Near-digital silence (about -84 dBFS, the bench's
bare hiss) is no hall: pocketsphinx's live CMN then mis-hears the first utterance after a silence."""


def channel_of(role: Role) -> int:
    return CALLER if role is Role.CALLER else FLOOR


@dataclass(frozen=True)
class Spoken:
    """One utterance as rendered: where it is in the audio, and the script line it came from."""

    channel: int
    start: float
    end: float
    text: str
    role: Role
    script_time: float


@dataclass
class TimeMap:
    """Script time -> audio time: piecewise shifts, one point per script line (non-decreasing both ways)."""

    script: list[float] = field(default_factory=list)
    audio: list[float] = field(default_factory=list)

    def add(self, script_time: float, audio_time: float) -> None:
        self.script.append(script_time)
        self.audio.append(audio_time)

    def shift_at(self, script_time: float) -> float:
        """The shift in force at `script_time`: that of the last line at or before it."""
        i = bisect.bisect_right(self.script, script_time) - 1
        return 0.0 if i < 0 else self.audio[i] - self.script[i]

    def audio_time(self, script_time: float) -> float:
        return script_time + self.shift_at(script_time)


@dataclass
class Rendering:
    """The stereo audio of a script and how it lines up with the script."""

    samples: np.ndarray
    """(n, 2) int16 at 16 kHz: column 0 the caller, column 1 the floor."""
    time_map: TimeMap
    spoken: list[Spoken]
    inputs: list[Input]
    """The script's non-speech inputs (board keys, ticks, session end, game starts) at audio times."""

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE

    def board_keys(self) -> list[BoardKey]:
        return [i for i in self.inputs if isinstance(i, BoardKey)]


def _is_list(item: Utterance) -> bool:
    """A list of calls ("B seven, I twenty two, ..."), one call per comma-separated part."""
    parts = [p for p in item.text.split(",") if p.strip()]
    return len(parts) > 1 and len(item.meanings) == len(parts) and all(m.intent == "call" for m in item.meanings)


def say(text: str, voice: Voice, pause: float | None = None) -> np.ndarray:
    """One utterance. With `pause`, a list ("B seven, I twenty two, ...") is read item by item with that much
    quiet between, as a floor employee reads winning numbers (the recognizer takes one meaning per stretch of
    speech); otherwise commas are left to espeak (a short breath, as in one sentence)."""
    if pause is None:
        return speak(text, voice)
    parts = [p.strip() for p in text.split(",") if p.strip()] or [text]
    gap = np.zeros(int(pause * RATE), dtype=np.int16)
    pieces: list[np.ndarray] = []
    for part in parts:
        if pieces:
            pieces.append(gap)
        pieces.append(speak(part, voice))
    return np.concatenate(pieces)


def render(
    items: Sequence[Input],
    voices: HallVoices = TUNING_VOICES,
    rate: int = RATE,
    seed: int = 0,
    *,
    min_gap: float = 0.8,
    lead: float = 0.5,
    tail: float = 2.0,
    pause: float = 0.7,
    room_db: float | None = ROOM_DB,
) -> Rendering:
    """Stereo int16 hall audio of a script (clean: a faint microphone hiss only), its time map, and everything
    the benchmark needs to score it (see `Rendering`).

    Deterministic for a seed. `rate` must be 16000 (what the recognizers are fed). `min_gap` is the least
    quiet between two utterances on one channel, `pause` the quiet between the items of a list, `room_db`
    the level of the room and microphone noise under everything (dBFS RMS; None: near digital silence)."""
    if rate != RATE:
        raise ValueError(f"hall audio is rendered at {RATE} Hz, got {rate}")
    time_map = TimeMap()
    spoken: list[Spoken] = []
    clips: list[np.ndarray] = []
    others: list[Input] = []
    free = [0.0, 0.0]  # per channel: audio time from which the next utterance may start
    shift = lead
    session_end: float | None = None
    for item in items:
        t = time_of(item)
        if isinstance(item, Utterance):
            channel = channel_of(item.role)
            clip = say(item.text, voices.for_role(item.role), pause if _is_list(item) else None)
            start = t + shift
            if start < free[channel]:
                shift += free[channel] - start
                start = free[channel]
            end = start + len(clip) / RATE
            free[channel] = end + min_gap
            time_map.add(t, start)
            spoken.append(Spoken(channel, start, end, item.text, item.role, t))
            clips.append(clip)
            continue
        time_map.add(t, t + shift)
        if isinstance(item, SessionEnd):
            session_end = t + shift
        elif isinstance(item, BoardKey | Tick | GameStart):
            others.append(replace(item, time=t + shift))
    last_speech = max((s.end for s in spoken), default=0.0)
    duration = last_speech + tail if session_end is None else max(session_end, last_speech + 0.5)
    others.append(SessionEnd(duration))
    n = round(duration * RATE)
    speech = np.zeros((n, 2), dtype=np.float64)
    for s, clip in zip(spoken, clips, strict=True):
        i = round(s.start * RATE)
        speech[i : i + len(clip), s.channel] += clip[: max(0, n - i)]
    rng = random.Random(seed)
    if room_db is not None:
        noise = np.random.default_rng(rng.randrange(2**32)).normal(0.0, 32768.0 * 10 ** (room_db / 20), speech.shape)
        speech += noise
    stereo = np.stack([mix(speech[:, c], None, rng, None) for c in (CALLER, FLOOR)], axis=1)
    return Rendering(samples=stereo, time_map=time_map, spoken=spoken, inputs=others)


def speech_power(rendering: Rendering, channel: int) -> float:
    """Mean power of a channel over its utterances; a channel that says nothing takes the other's."""

    def parts(c: int) -> list[np.ndarray]:
        col = rendering.samples[:, c].astype(np.float64)
        return [col[int(s.start * RATE) : int(s.end * RATE)] for s in rendering.spoken if s.channel == c]

    chosen = parts(channel) or parts(1 - channel)
    if not chosen:
        return 1e6
    joined = np.concatenate(chosen)
    return float(np.mean(joined * joined))


def in_babble(rendering: Rendering, snr_db: float | None, seed: int, crowd: Crowd | None = None) -> np.ndarray:
    """Both channels with their own crowd babble at `snr_db` (speech power over babble power); None: clean."""
    if snr_db is None:
        return rendering.samples
    rng = random.Random(seed)
    crowd = crowd or Crowd(rng)
    return np.stack(
        [add_babble(rendering.samples[:, c], speech_power(rendering, c), snr_db, rng, crowd) for c in (CALLER, FLOOR)],
        axis=1,
    )
