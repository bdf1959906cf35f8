"""The vosk adapter: a Kaldi recognizer restricted to the step's phrase list plus [unk].

Utterances are cut by the same `Endpointer` as pocketsphinx, so both engines see the same segments.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..audio import RATE, AudioChunk
from ..endpoint import Endpointer, EndpointSettings
from ..grammar import Grammar
from ..messages import Ball
from .base import EngineError, Heard, WordTiming, stirring

UNKNOWN = "[unk]"


def phrase_list(grammar: Grammar, intents: Sequence[str]) -> list[str]:
    """The phrases vosk may hear for these intents: whole sentences, with open slots as word runs.

    Calls and letters are spelled out in full (every ball, both ways of saying it); numbers and digit
    strings are too many to list, so their templates are split into the literal runs and the slot words.
    """
    out: dict[str, None] = {}

    def calls() -> list[str]:
        spoken = [grammar.call_words(Ball(n)) for n in range(1, 76)]
        return spoken + [grammar.call_words(Ball(n), digit_by_digit=True) for n in range(10, 76)]

    letters = list(grammar.letter_words.values())
    number_words = grammar.units + grammar.teens + list(grammar.tens) + list(grammar.scales) + ["and"]
    digit_words = grammar.units + list(grammar.digit_aliases)
    for name in intents:
        if name not in grammar.intents:
            raise EngineError(f"unknown intents for the recognizer: {[name]}")
        for seq in grammar.intents[name].sequences:
            open_slots = [p for p in seq if p in ("{number}", "{manufacturer}", "{serial}")]
            if not open_slots:
                sentences = [""]
                for part in seq:
                    options = calls() if part == "{call}" else letters if part == "{letter}" else [part]
                    sentences = [f"{s} {o}".strip() for s in sentences for o in options]
                out.update(dict.fromkeys(sentences))
                continue
            run: list[str] = []
            for part in [*seq, "{end}"]:
                if part.startswith("{"):
                    if run:
                        out[" ".join(run)] = None
                    run = []
                    if part == "{number}":
                        out.update(dict.fromkeys(number_words))
                    elif part in ("{manufacturer}", "{serial}"):
                        out.update(dict.fromkeys(digit_words))
                else:
                    run.append(part)
    return list(out)


class VoskRecognizer:
    """Grammar-restricted recognition with a vosk (Kaldi) model directory."""

    name = "vosk"
    pending_since: float | None = None

    def __init__(self, grammar: Grammar, model: Path, endpoint: EndpointSettings | None = None) -> None:
        try:
            import vosk
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise EngineError(f"vosk is not installed: {exc}") from exc
        model = Path(model)
        if not model.is_dir():
            raise EngineError(f"vosk model not found: {model} (set --model or BINGO_VOSK_MODEL)")
        vosk.SetLogLevel(-1)
        started = time.perf_counter()
        try:
            self._model: Any = vosk.Model(str(model))
        except Exception as exc:  # vosk raises a bare Exception when the directory is not a model
            raise EngineError(f"not a vosk model: {model} ({exc})") from exc
        self._vosk: Any = vosk
        self.grammar = grammar
        self.endpoint_settings = endpoint or EndpointSettings()
        self._phrases: list[str] = []
        self._recognizer: Any = None
        self.set_step(tuple(grammar.intents))
        self.load_seconds = time.perf_counter() - started

    def set_step(self, intents: Sequence[str]) -> None:
        """Restrict recognition to these intents from the next utterance on."""
        phrases = phrase_list(self.grammar, intents)
        if phrases != self._phrases or self._recognizer is None:
            self._phrases = phrases
            self._recognizer = self._vosk.KaldiRecognizer(
                self._model, RATE, json.dumps([*phrases, UNKNOWN], ensure_ascii=False)
            )
            self._recognizer.SetWords(True)

    @property
    def phrases(self) -> list[str]:
        return list(self._phrases)

    def _feed(self, samples: np.ndarray, results: list[dict[str, Any]]) -> None:
        if len(samples) and self._recognizer.AcceptWaveform(samples.astype(np.int16, copy=False).tobytes()):
            results.append(json.loads(self._recognizer.Result()))

    def _finish(self, start: float, end: float, results: list[dict[str, Any]]) -> Heard:
        results.append(json.loads(self._recognizer.FinalResult()))
        self._recognizer.Reset()
        words = [w for r in results for w in r.get("result", [])]
        timings = tuple(
            WordTiming(
                word=str(w["word"]),
                start=start + float(w["start"]),
                end=start + float(w["end"]),
                confidence=float(w.get("conf", 0.0)),
            )
            for w in words
        )
        known = [t for t in timings if t.word != UNKNOWN]
        if not known:
            return Heard(start=start, end=end, text="", confidence=0.0, uncertain=True, words=timings)
        confidence = min(t.confidence for t in known)
        has_unknown = len(known) < len(timings)
        if has_unknown:
            confidence = min(confidence, 0.3)
        return Heard(
            start=timings[0].start,
            end=timings[-1].end,
            text=" ".join(t.word for t in known),
            confidence=confidence,
            uncertain=has_unknown or confidence < 0.5,
            words=timings,
        )

    def decode(self, samples: np.ndarray, start: float = 0.0) -> Heard:
        """Recognize one utterance that is already cut out (int16, 16 kHz)."""
        if len(samples) == 0:
            raise EngineError("empty utterance: no samples to decode")
        results: list[dict[str, Any]] = []
        self._recognizer.Reset()
        self._feed(samples, results)
        return self._finish(start, start + len(samples) / RATE, results)

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        """Cut the stream by voice activity; yield each utterance as soon as it closes."""
        endpointer = Endpointer(self.endpoint_settings)
        results: list[dict[str, Any]] = []
        utt_start = 0.0
        for chunk in chunks:
            fed_at = time.perf_counter()
            for event in endpointer.feed(chunk.samples):
                if event.kind == "start":
                    utt_start = event.time
                    results = []
                    self._recognizer.Reset()
                    self._feed(event.samples, results)
                elif event.kind == "audio":
                    self._feed(event.samples, results)
                elif event.kind == "stir":
                    yield stirring(event)
                else:
                    heard = self._finish(utt_start, event.time, results)
                    if endpointer.voiced_seconds() >= self.endpoint_settings.min_speech:
                        latency = max(0.0, chunk.end - event.time) + time.perf_counter() - fed_at
                        uncertain = heard.uncertain or endpointer.limited
                        if not uncertain:
                            endpointer.heard_speaker(endpointer.last_peak)
                        yield replace(heard, latency=latency, uncertain=uncertain)
            self.pending_since = utt_start if endpointer.in_speech else endpointer.stirring_since
        for event in endpointer.flush():
            if event.kind == "stir":
                yield stirring(event)
                continue
            heard = self._finish(utt_start, event.time, results)
            if endpointer.voiced_seconds() >= self.endpoint_settings.min_speech:
                yield heard
        self.pending_since = None
