"""The pocketsphinx adapter (the embedded default): one JSGF search per step, a phone loop to judge it.

Every utterance is decoded twice, in step: by the step's grammar and by an unconstrained phone loop
(allphone). Speech the grammar explains about as well as the free phone loop does is taken; speech that
the grammar can only force onto its nearest sentence scores far below the phone loop and comes out
uncertain. Both decoders are fed while the audio streams, so a result is ready as soon as the
endpointer closes the utterance.
"""

from __future__ import annotations

import hashlib
import math
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..audio import RATE, AudioChunk
from ..endpoint import Endpointer, EndpointSettings
from ..grammar import Grammar
from ..paths import ROOT
from .base import EngineError, Heard, WordTiming, stirring

EXTRA_DICT = ROOT / "grammars" / "extra.dict"
PAUSE = "pause_"
"""A dictionary word made of silence: with fillers off, the grammar places the pauses itself."""
SINGLE_ITEM = f"public <utterance> = [<pause>] <item> [<pause>]; <pause> = {PAUSE} [{PAUSE}];"
WARM_UTTERANCES = 2
"""The first utterances of a recognizer are decoded again, normalized on themselves, while live CMN settles."""
MAX_DIGITS = 8
"""Longest card manufacturer ID or serial number heard, in digits."""
FRAME_RATE = 100  # pocketsphinx frames per second
_NOT_WORDS = ("<s>", "</s>", "<sil>", "[NOISE]", "SIL", "+NSN+", "+SPN+", "+BREATH+", "NULL")


@dataclass(frozen=True)
class PocketsphinxSettings:
    """Decoder settings: pocketsphinx's own beams (narrower ones lost calls and saved no time here)."""

    beam: float = 1e-48
    wbeam: float = 7e-29
    pbeam: float = 1e-48
    maxhmmpf: int = 30000
    cmninit: str = "44,-4,0.5,7.5,-5.5,-2.8,-2.5,-2,-1.3,-1,-1.5,-1,1.5"
    """Starting cepstral mean: where live CMN settles on speech here, so the first utterance is not lost."""
    confidence_center: float = -4.2
    """Mean per-frame log-likelihood ratio (grammar vs phone loop) that maps to confidence 0.5."""
    confidence_slope: float = 1.5
    dither: bool = False
    """pocketsphinx's own dither: 1/2-bit noise before feature extraction (too small to matter here)."""
    noise_floor: float = 60.0
    """Standard deviation (16-bit units; 60 is about -55 dBFS) of a fixed gaussian noise floor added before
    the decoders. Digitally silent or near-silent stretches (synthetic speech, gated or very quiet
    microphones) derail the en-us model's features: on clean espeak calls, 66 -> 85 % decoded right. 0: off."""
    min_confidence: float = 0.6
    """Below this an utterance is uncertain."""
    min_snr_db: float = 30.0
    """A streamed utterance that stood less than this above the background (as the endpointer measures it) is
    uncertain whatever its confidence: in babble the en-us model is confidently wrong. Crowd babble mixed at
    20 dB measures 22-26 dB here, and 12 % of its calls came out sure and wrong (clean: 0-3 %)."""


NOISE_TABLE = 48_017
"""Samples of the noise floor table (a prime, so it does not line up with 10 ms frames)."""


def _noise_table(std: float) -> np.ndarray:
    """The same noise for every run: a recording is heard the same way twice (resume, replay)."""
    table: np.ndarray = np.random.default_rng(15_4_7_11).normal(0.0, std, NOISE_TABLE)
    return table


def _with_floor(samples: np.ndarray, table: np.ndarray | None, position: int) -> np.ndarray:
    if table is None or len(samples) == 0:
        return samples.astype(np.int16, copy=False)
    index = (position + np.arange(len(samples))) % len(table)
    floored: np.ndarray = np.clip(samples.astype(np.float64) + table[index], -32768, 32767).astype(np.int16)
    return floored


def _is_word(word: str) -> bool:
    return word != PAUSE and word not in _NOT_WORDS and not word.startswith(("<", "[", "+"))


def _base_word(word: str) -> str:
    return word.split("(")[0]


def _grammar_dictionary(cmudict: Path, vocabulary: set[str], extra: dict[str, list[str]]) -> dict[str, list[str]]:
    """Pronunciations of the grammar's words only: cmudict entries (with variants), then extra.dict's.

    A dictionary of a few hundred words instead of 130,000 loads faster and keeps memory down. extra.dict gives
    the words cmudict lacks and more ways to say the ones it has (British "oh" for O).
    """
    found: dict[str, list[str]] = {}
    with cmudict.open(encoding="utf-8") as lines:
        for line in lines:
            head, _, phones = line.partition(" ")
            word = _base_word(head)
            if word in vocabulary:
                found.setdefault(word, []).append(phones.split("#")[0].strip())
    for word, prons in extra.items():
        have = found.setdefault(word, [])
        have.extend(p for p in prons if p not in have)
    return found


def read_extra_dict(path: Path) -> dict[str, list[str]]:
    """Pronunciations to add: 'word PH1 PH2 ...' per line (a variant may be written 'word(2) ...'), '#' comments."""
    entries: dict[str, list[str]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EngineError(f"cannot read dictionary {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) < 2:
            raise EngineError(f"{path}:{number}: expected 'word PHONES...', got {line!r}")
        entries.setdefault(_base_word(parts[0].lower()), []).append(" ".join(parts[1:]).upper())
    return entries


class PocketsphinxRecognizer:
    """Grammar decoding with pocketsphinx, judged against a phone loop; endpointing by `Endpointer`."""

    name = "pocketsphinx"
    pending_since: float | None = None

    def __init__(
        self,
        grammar: Grammar,
        model: Path | None = None,
        extra_dict: Path | None = None,
        settings: PocketsphinxSettings | None = None,
        endpoint: EndpointSettings | None = None,
    ) -> None:
        try:
            import pocketsphinx
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise EngineError(f"pocketsphinx is not installed: {exc}") from exc
        self._ps: Any = pocketsphinx
        self.grammar = grammar
        self.settings = settings or PocketsphinxSettings()
        self.endpoint_settings = endpoint or EndpointSettings()
        root = Path(model) if model is not None else Path(pocketsphinx.get_model_path()) / "en-us"
        hmm, dictionary, phone_lm = root / "en-us", root / "cmudict-en-us.dict", root / "en-us-phone.lm.bin"
        for needed in (hmm, dictionary, phone_lm):
            if not needed.exists():
                raise EngineError(f"pocketsphinx model incomplete: {needed} not found")
        started = time.perf_counter()
        extra = read_extra_dict(extra_dict or EXTRA_DICT)
        words_dict = _grammar_dictionary(dictionary, grammar.vocabulary(), extra)
        missing = sorted(w for w in grammar.vocabulary() if w not in words_dict)
        if missing:
            raise EngineError(f"no pronunciation for grammar words {missing}: add them to {extra_dict or EXTRA_DICT}")
        small = tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False, encoding="utf-8")  # noqa: SIM115
        try:
            with small:
                for word, prons in sorted(words_dict.items()):
                    small.writelines(f"{word}{f'({i + 1})' if i else ''} {p}\n" for i, p in enumerate(prons))
                small.write(f"{PAUSE} SIL\n")
            self._words, self._phones = self._decoders(hmm, Path(small.name), phone_lm)
        finally:
            Path(small.name).unlink(missing_ok=True)
        self._searches: dict[tuple[str, ...], str] = {}
        self._warm = 0  # utterances decoded a second time while live normalization settles
        self._noise = _noise_table(self.settings.noise_floor) if self.settings.noise_floor > 0 else None
        self._fed = 0  # samples streamed into the decoders: where the noise floor table goes on
        self._utterance: list[bytes] | None = None
        self._current: str | None = None
        for step in grammar.steps:
            self._search_for(grammar.step_intents(step))
        self._active: tuple[str, ...] = tuple(grammar.intents)  # its search is built on first use
        self.load_seconds = time.perf_counter() - started

    def _decoders(self, hmm: Path, dictionary: Path, phone_lm: Path) -> tuple[Any, Any]:
        s = self.settings
        pocketsphinx = self._ps
        common: dict[str, Any] = {
            "hmm": str(hmm),
            "dict": str(dictionary),
            "loglevel": "FATAL",
            "beam": s.beam,
            "wbeam": s.wbeam,
            "pbeam": s.pbeam,
            "maxhmmpf": s.maxhmmpf,
            "cmninit": s.cmninit,
            "fsgusefiller": False,
            "dither": s.dither,
        }
        words = pocketsphinx.Decoder(pocketsphinx.Config(lm=None, **common))
        phones = pocketsphinx.Decoder(pocketsphinx.Config(lm=None, allphone=str(phone_lm), **common))
        return words, phones

    # ----- grammar per step ---------------------------------------------------------------------

    def _search_for(self, intents: Sequence[str]) -> str:
        key = tuple(intents)
        if key not in self._searches:
            unknown = [i for i in key if i not in self.grammar.intents]
            if unknown:
                raise EngineError(f"unknown intents for the recognizer: {unknown}")
            jsgf = self.grammar.jsgf(key)
            # One meaning per utterance: the endpointer cuts at each pause, and a looping JSGF makes the
            # pocketsphinx FSG search both slow and prone to inserting words.
            single = jsgf.replace("public <utterance> = <item>+;", SINGLE_ITEM)
            if single == jsgf:
                raise EngineError("unexpected JSGF from the grammar: no '<utterance> = <item>+' rule")
            # Digit strings (card IDs, serials) as bounded runs: FSG loops are slow and insert digits.
            bounded = "<digit>" + " [<digit>" * (MAX_DIGITS - 1) + "]" * (MAX_DIGITS - 1)
            single = single.replace("<digit>+", bounded)
            name = "step_" + hashlib.sha1("|".join(key).encode()).hexdigest()[:12]
            self._words.add_jsgf_string(name, single.encode())
            self._searches[key] = name
        return self._searches[key]

    def set_step(self, intents: Sequence[str]) -> None:
        """Switch the grammar search; takes effect at the next utterance (instant for known steps)."""
        self._search_for(intents)
        self._active = tuple(intents)

    # ----- decoding -------------------------------------------------------------------------------

    def _start(self) -> None:
        name = self._search_for(self._active)
        if self._current != name:  # current_search() crashes pocketsphinx 5.1 before any search is active
            self._words.activate_search(name)
            self._current = name
        self._words.start_utt()
        self._phones.start_utt()
        self._utterance = [] if self._warm < WARM_UTTERANCES else None

    def _feed(self, samples: np.ndarray) -> None:
        if len(samples):
            data = _with_floor(samples, self._noise, self._fed).tobytes()
            self._fed += len(samples)
            self._words.process_raw(data, False, False)
            self._phones.process_raw(data, False, False)
            if self._utterance is not None:
                self._utterance.append(data)

    def _finish(self, start: float, end: float) -> Heard:
        self._words.end_utt()
        self._phones.end_utt()
        if self._utterance is not None:
            # The first streamed utterances are decoded while live CMN is still far from this voice and
            # channel: decode each once more, normalized on itself, so the first calls of a session are heard
            # as well as the rest. The stream then goes on from the live mean the first pass learned.
            data, self._utterance = b"".join(self._utterance), None
            self._warm += 1
            live = self._words.get_cmn(False), self._phones.get_cmn(False)
            self._words.reinit_feat()
            self._phones.reinit_feat()
            self._words.start_utt()
            self._phones.start_utt()
            self._words.process_raw(data, False, True)
            self._phones.process_raw(data, False, True)
            self._words.end_utt()
            self._phones.end_utt()
            self._words.set_cmn(live[0])
            self._phones.set_cmn(live[1])
        hyp = self._words.hyp()
        segments = [
            (seg.word, seg.start_frame, seg.end_frame, math.log(max(seg.ascore, 1e-300)))
            for seg in (self._words.seg() if hyp is not None else [])
            if seg.start_frame >= 0
        ]
        words = [s for s in segments if _is_word(s[0])]
        if hyp is None or not words:
            return Heard(start=start, end=end, text="", confidence=0.0, uncertain=True)
        phones = [
            (seg.start_frame, seg.end_frame, math.log(max(seg.ascore, 1e-300)))
            for seg in (self._phones.seg() if self._phones.hyp() is not None else [])
        ]
        ratios: list[float] = []
        timings: list[WordTiming] = []
        s = self.settings
        for word, first, last, score in words:
            loop = 0.0
            for p_first, p_last, p_score in phones:
                overlap = min(p_last, last) - max(p_first, first) + 1
                if overlap > 0:
                    loop += p_score * overlap / (p_last - p_first + 1)
            ratio = (score - loop) / (last - first + 1)
            ratios.append(ratio)
            timings.append(
                WordTiming(
                    word=_base_word(word),
                    start=start + first / FRAME_RATE,
                    end=start + (last + 1) / FRAME_RATE,
                    confidence=self._squash(ratio),
                )
            )
        frames = sum(last - first + 1 for _, first, last, _ in words)
        mean_ratio = sum(r * (last - first + 1) for r, (_, first, last, _) in zip(ratios, words, strict=True)) / frames
        confidence = self._squash(mean_ratio)
        text = " ".join(t.word for t in timings)
        return Heard(
            start=timings[0].start,
            end=timings[-1].end,
            text=text,
            confidence=confidence,
            uncertain=confidence < s.min_confidence,
            words=tuple(timings),
        )

    def _squash(self, ratio: float) -> float:
        s = self.settings
        return 1.0 / (1.0 + math.exp(-(ratio - s.confidence_center) * s.confidence_slope))

    def decode(self, samples: np.ndarray, start: float = 0.0) -> Heard:
        """Recognize one utterance that is already cut out (int16, 16 kHz), normalized on itself alone."""
        if len(samples) == 0:
            raise EngineError("empty utterance: no samples to decode")
        # Normalized from the prior on the utterance alone (the same result whatever came before), without
        # disturbing the live mean a stream has learned.
        live = self._words.get_cmn(False), self._phones.get_cmn(False)
        self._words.reinit_feat()  # set_cmn alone keeps the running sums of the stream
        self._phones.reinit_feat()
        self._start()
        self._utterance = None
        data = _with_floor(samples, self._noise, 0).tobytes()
        self._words.process_raw(data, False, True)
        self._phones.process_raw(data, False, True)
        heard = self._finish(start, start + len(samples) / RATE)
        self._words.set_cmn(live[0])
        self._phones.set_cmn(live[1])
        return heard

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        """Cut the stream by voice activity; yield each utterance as soon as it closes."""
        endpointer = Endpointer(self.endpoint_settings)
        utt_start = 0.0
        for chunk in chunks:
            fed_at = time.perf_counter()
            for event in endpointer.feed(chunk.samples):
                if event.kind == "start":
                    utt_start = event.time
                    self._start()
                    self._feed(event.samples)
                elif event.kind == "audio":
                    self._feed(event.samples)
                elif event.kind == "stir":
                    yield stirring(event)
                else:
                    yield from self._close(endpointer, event.time, utt_start, chunk.end, fed_at)
            self.pending_since = utt_start if endpointer.in_speech else endpointer.stirring_since
        for event in endpointer.flush():
            if event.kind == "stir":
                yield stirring(event)
            else:
                yield from self._close(endpointer, event.time, utt_start, event.time, time.perf_counter())
        self.pending_since = None

    def _close(
        self, endpointer: Endpointer, speech_end: float, utt_start: float, fed_until: float, fed_at: float
    ) -> Iterator[Heard]:
        heard = self._finish(utt_start, speech_end)
        if endpointer.voiced_seconds() < self.endpoint_settings.min_speech:
            return
        snr = endpointer.speech_over_noise_db()
        noisy = snr is not None and snr < self.settings.min_snr_db
        waited = max(0.0, fed_until - speech_end)  # stream time the endpointer needed to be sure
        latency = waited + (time.perf_counter() - fed_at)
        uncertain = heard.uncertain or noisy or endpointer.limited
        if not uncertain:
            endpointer.heard_speaker(endpointer.last_peak)
        yield Heard(
            start=heard.start if heard.text else utt_start,
            end=heard.end if heard.text else speech_end,
            text=heard.text,
            confidence=heard.confidence,
            uncertain=uncertain,
            words=heard.words,
            latency=latency,
            snr_db=snr,
        )
