"""The self-hearing gate: what the microphones pick up while the assistant's own voice plays is not the caller.

The speaker marks when its voice played (or will play, on a timeline); the listening side asks the gate
whether an utterance on a gated channel overlaps one of those intervals and drops it if so. The audio can
also be silenced over those intervals before it reaches the recognizer.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator

import numpy as np

from .messages import Role, Utterance


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

    # ----- the speaker's side ------------------------------------------------------------------

    def mark(self, start: float, end: float) -> None:
        """Our voice played from start to end (seconds on the listening clock)."""
        if end < start:
            raise ValueError(f"voice interval ends before it starts: {start} > {end}")
        with self._lock:
            self._closed.append((start, end))

    def begin(self, t: float) -> None:
        """Our voice starts now; until end() the gate is closed from t on."""
        with self._lock:
            self._open = t

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
        with self._lock:
            spans = list(self._closed)
            if self._open is not None:
                spans.append((self._open, math.inf))
        return [(s - self.margin_before, e + self.margin_after) for s, e in sorted(spans)]

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

    def silence(self, samples: np.ndarray, start: float, rate: int) -> np.ndarray:
        """A copy of one channel's audio (starting at `start` s) with the voice intervals set to zero."""
        out = np.array(samples, copy=True)
        for s, e in self.intervals():
            i = max(0, round((s - start) * rate))
            j = len(out) if math.isinf(e) else min(len(out), round((e - start) * rate))
            if i < j:
                out[i:j] = 0
        return out
