"""Hall audio the tests share: a fixture's calls in real-speech babble."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from assistant.audio import RATE, read_wav
from assistant.endpoint import HALL_CUTTING
from lab.bench import hallset, real

FIXTURES = Path(__file__).resolve().parent.parent / "audio_fixtures"


def calls_in_crowd(snr_db: float, after: float = 0.0) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """calls.wav (six calls) 3 s into real-speech babble at `snr_db` (speech power over the crowd's), `after`
    seconds of the crowd alone after it; and where each call is in the mix (its utterance in the clean audio)."""
    speech = read_wav(FIXTURES / "calls.wav").channels[0].astype(np.float64)
    spans = [(start + 3.0, end + 3.0) for start, end in hallset.cut(speech.astype(np.int16), HALL_CUTTING)]
    voiced = speech[np.abs(speech) > 1000]
    lead = np.zeros(3 * RATE)
    crowd = real.real_crowd(random.Random(1), part="test").babble(len(speech) + len(lead) + int(after * RATE))
    crowd *= np.sqrt(np.mean(voiced**2) / np.mean(crowd**2) / 10 ** (snr_db / 10))
    speech = np.concatenate([lead, speech, np.zeros(len(crowd) - len(lead) - len(speech))])
    return np.clip(speech + crowd, -32768, 32767).astype(np.int16), spans
