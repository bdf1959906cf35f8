"""The recognizer port: what every speech engine adapter provides, and what it hands back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..audio import AudioChunk
from ..endpoint import SpeechEvent


class EngineError(Exception):
    """A recognizer cannot be built or run, with a one-line reason."""


@dataclass(frozen=True)
class WordTiming:
    """One recognized word with its audio time (seconds) and confidence (0..1)."""

    word: str
    start: float
    end: float
    confidence: float


@dataclass(frozen=True)
class Heard:
    """One utterance as the recognizer heard it."""

    start: float
    end: float
    """Audio time of the utterance, in seconds from the start of the stream."""
    text: str
    """Words of the grammar ("b seven"); "" when the utterance was rejected."""
    confidence: float
    """0..1: how sure the recognizer is that these grammar words were said."""
    uncertain: bool
    """Low confidence or out-of-grammar: the procedure never makes a violation of it."""
    words: tuple[WordTiming, ...] = ()
    latency: float = 0.0
    """Seconds from the end of speech (in stream time) to the result being available."""
    snr_db: float | None = None
    """How far the speech stood above the background (streamed utterances; None for a cut one)."""
    could_be: tuple[int, ...] = ()
    """A hearing of one call: the other balls (numbers) it left room for, heard as sound-alikes of the one written
    ("n forty one" with N 31 close behind). The procedure keeps them with the call (B(8))."""


def stirring(event: SpeechEvent) -> Heard:
    """The endpointer's 'stir': speech may have been here under the crowd and nothing was decoded of it. An unsure
    hearing of nothing, so that the rule of evidence never takes the words owed there as unsaid."""
    return Heard(start=event.time, end=max(event.until, event.time), text="", confidence=0.0, uncertain=True)


class Recognizer(Protocol):
    """Turns 16 kHz mono int16 audio into utterances of the grammar."""

    name: str
    pending_since: float | None
    """While `stream` runs: the start of speech it has taken in and not yet given out as a hearing (an
    utterance still open, or one held for what may follow); None when everything heard is out. Until then
    the hall may not be taken for quiet: time passing is told to the procedure only up to here."""

    def set_step(self, intents: Sequence[str]) -> None:
        """Listen only for these intents from now on (grammar.step_intents(step))."""
        ...

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        """Cut the stream into utterances by voice activity and yield each one while audio streams."""
        ...

    def decode(self, samples: np.ndarray, start: float = 0.0) -> Heard:
        """Recognize one utterance that is already cut out."""
        ...
