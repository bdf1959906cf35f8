"""The self-hearing gate: what the microphones pick up while the assistant's own voice plays is not the caller.

The speaker marks when its voice played (or will play, on a timeline); the listening side asks the gate
whether an utterance on a gated channel overlaps one of those intervals and drops it if so. Live, the audio is
filtered before it reaches the recognizer (`filter`): over those intervals it is silenced, unless the caller
talks over our voice. The speaker hands over what it plays (`begin(t, audio)`), so the gate knows how loud its
echo can be at each moment: the voice's level, held through a hall's reverberation and the output's delay,
times the echo's gain learnt from the stretches where only the echo was heard. A frame well above that is the
caller's own voice ("double talk"): it is kept, and what is heard of it is unsure (`doubt`), never silently
lost: a caller's repeat said over a prompt must not become "said only once" (the rule of evidence).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator
from dataclasses import replace

import numpy as np

from .messages import Role, Utterance

FRAME = 0.02
"""Seconds per level frame of the echo estimate."""
HOLD_DECAY = 10 ** (-60 / 10 * FRAME / 1.5)
"""Per frame, the fall of the held voice level: reverberation of up to 1.5 s (RT60) is covered."""
DELAY = 0.5
"""Seconds of output latency and sound travel the echo may lag the voice by."""
ECHO_OVER_NOISE = 10.0
"""A frame teaches the echo's gain when its power is this many times the hall's own level (10 dB)."""
OVER_ECHO = 4.0
"""Double talk: a frame's power this many times the echo it could be (6 dB)."""
LEARN_FRAMES = 10
"""Frames of echo the gain is learnt from; until then it is taken as 1 (an echo as loud as what is played: a
hall's loudspeakers louder than that at the microphone would howl)."""
VOICE_OVER_FLOOR = 10.0
"""A frame outside our voice is someone talking when its power is this many times the channel's floor (10 dB)."""
FLOOR_POWER = (32768 * 10 ** (-50 / 20)) ** 2
"""The lowest floor taken (-50 dBFS): on digital silence any hiss would otherwise be talk."""


class SelfHearingGate:
    """Intervals of the assistant's own voice, widened by a margin, and the roles whose channel hears them."""

    def __init__(
        self,
        margin_before: float = 0.1,
        margin_after: float = 0.5,
        roles: Iterable[Role] = (Role.CALLER,),
    ) -> None:
        """margin_after covers output latency and the room's echo; roles are the channels the voice leaks into."""
        if margin_before < 0 or margin_after < 0:
            raise ValueError(f"gate margins must be >= 0: {margin_before}, {margin_after}")
        self.margin_before = margin_before
        self.margin_after = margin_after
        self.roles = frozenset(roles)
        self._lock = threading.Lock()
        self._closed: list[tuple[float, float]] = []
        self._open: float | None = None
        self._references: list[tuple[float, np.ndarray]] = []
        """(start, held power per FRAME) of each voice played, as `begin` was given it."""
        self._ratios: list[float] = []
        """Recent frame power over held voice power where the echo stood out of the hall: its gain (the 80th
        percentile: the held level is a peak, words have gaps). Once learnt, a frame judged double talk does
        not teach it: a caller talking long over our voice would otherwise raise it until they were silenced."""
        self._quiet: list[float] = []
        """Recent frame powers of the gated channel while our voice was not playing: the hall's own level."""
        self._talked: float | None = None
        """Listening-clock end of the last frame of the gated channel loud enough to be someone talking (outside
        our voice, or over it), None before any."""
        self._seen = 0.0
        """Listening-clock end of the last frame filtered."""

    # ----- the speaker's side ------------------------------------------------------------------

    def mark(self, start: float, end: float) -> None:
        """Our voice played from start to end (seconds on the listening clock)."""
        if end < start:
            raise ValueError(f"voice interval ends before it starts: {start} > {end}")
        with self._lock:
            self._closed.append((start, end))

    def begin(self, t: float, samples: np.ndarray | None = None, rate: int = 16000) -> None:
        """Our voice starts now; until end() the gate is closed from t on. `samples` (at `rate`): what it plays,
        so that `filter` can tell its echo from the caller talking over it."""
        with self._lock:
            self._open = t
            if samples is not None:
                self._references.append((t, _held_power(samples, rate)))
                self._references = self._references[-8:]

    def end(self, t: float) -> None:
        """Our voice stopped now."""
        with self._lock:
            if self._open is not None:
                self._closed.append((self._open, max(t, self._open)))
                self._open = None

    def reset(self, intervals: Iterable[tuple[float, float]]) -> None:
        """Replace every interval (a timeline that was rescheduled)."""
        with self._lock:
            self._closed = [(s, e) for s, e in intervals]
            self._open = None

    def intervals(self) -> list[tuple[float, float]]:
        """The voice intervals with margins; a voice still playing runs to infinity."""
        return [(s - self.margin_before, e + self.margin_after) for s, e in self._voiced()]

    def _voiced(self) -> list[tuple[float, float]]:
        """The voice intervals as marked, in order; a voice still playing runs to infinity."""
        with self._lock:
            spans = list(self._closed)
            if self._open is not None:
                spans.append((self._open, math.inf))
        return sorted(spans)

    # ----- the listening side ------------------------------------------------------------------

    def overlaps(self, start: float, end: float) -> bool:
        """Whether the stretch start..end touches our own voice (margins included)."""
        return any(s < end and start < e for s, e in self.intervals())

    def drops(self, utterance: Utterance) -> bool:
        """True when the utterance came in on a gated channel while our voice played: it is not the caller's."""
        return utterance.role in self.roles and self.overlaps(utterance.start, utterance.end)

    def passed(self, utterances: Iterable[Utterance]) -> Iterator[Utterance]:
        """The utterances the gate lets through, in order."""
        return (u for u in utterances if not self.drops(u))

    def doubt(self, utterance: Utterance) -> Utterance:
        """An utterance on a gated channel heard while our voice played (or DELAY after, its echo still on the
        way) is unsure: the caller talked over it (`filter` kept those frames), and our words may be in it."""
        if utterance.role not in self.roles or utterance.uncertain:
            return utterance
        spans = [(s, e + DELAY) for s, e in self._voiced()]
        if any(s < utterance.end and utterance.start < e for s, e in spans):
            return replace(utterance, uncertain=True)
        return utterance

    def filter(self, samples: np.ndarray, start: float, rate: int) -> np.ndarray:
        """One gated channel's audio with our voice's stretches silenced, except the frames where the caller
        talks over it (louder than the echo of what we played could be)."""
        spans = self.intervals()
        out = np.array(samples, copy=True)
        step = max(1, round(FRAME * rate))
        for i in range(0, len(out), step):
            t = start + i / rate
            frame = out[i : i + step].astype(np.float64)
            power = float(np.mean(frame**2)) if len(frame) else 0.0
            if not any(s <= t < e for s, e in spans):
                self._quiet = [*self._quiet[-249:], power]
                floor = max(FLOOR_POWER, float(np.percentile(self._quiet, 20)))
                if power > VOICE_OVER_FLOOR * floor:
                    self._talked = t + len(frame) / rate
                continue
            voice = self._voice_power(t)
            with self._lock:
                noise = float(np.median(self._quiet)) if self._quiet else 0.0
                learnt = len(self._ratios) >= LEARN_FRAMES
                gain = float(np.percentile(self._ratios, 80)) if learnt else 1.0
                echo = power <= OVER_ECHO * gain * voice
                if voice > 0 and power > ECHO_OVER_NOISE * noise and (echo or not learnt):
                    self._ratios = [*self._ratios[-199:], power / voice]  # the echo itself, not the hall or caller
            if echo:
                out[i : i + step] = 0
            else:
                self._talked = t + len(frame) / rate
        self._seen = max(self._seen, start + len(out) / rate)
        return out

    def quiet(self) -> float | None:
        """Seconds the gated channel has been quiet up to the last audio filtered: no one talking, our voice's
        echo not counted (a notice waits for this, so that it never talks over a call). None when the gate
        hears no audio (it only marks our voice)."""
        if self._seen == 0.0:
            return None
        return self._seen - (self._talked or 0.0)

    def _voice_power(self, t: float) -> float:
        """The held power of our voice that can be echoing at `t` (0 when no reference covers it)."""
        with self._lock:
            references = list(self._references)
        best = 0.0
        lag = round(DELAY / FRAME)
        for start, held in references:
            k = int((t - start) / FRAME)
            if k < 0 or k - lag >= len(held):
                continue
            best = max(best, float(np.max(held[max(0, k - lag) : k + 1])))
        return best


def _held_power(samples: np.ndarray, rate: int) -> np.ndarray:
    """Power per FRAME of what we play, held through its reverberation (falling by HOLD_DECAY a frame) and
    run on for the tail that dies away after the last word."""
    step = max(1, round(FRAME * rate))
    x = np.asarray(samples, dtype=np.float64)
    frames = [float(np.mean(x[i : i + step] ** 2)) for i in range(0, len(x), step)]
    tail = int(1.5 / FRAME)
    held = np.zeros(len(frames) + tail)
    level = 0.0
    for k in range(len(held)):
        level = max(frames[k] if k < len(frames) else 0.0, level * HOLD_DECAY)
        held[k] = level
    return held
