"""Recognition accuracy benchmark: generated calls in crowd babble, off-grammar chatter, real recordings.

Times are CPU seconds of the engine's process (time.process_time), not wall time: on a shared machine other
work would inflate wall time, while CPU time is what the engine costs one core (RTF, compute lag, load).

Each engine and condition runs in its own child process, so peak memory (ru_maxrss) and model load time
are that engine's own. Streams are continuous recordings, so the engine's own endpointing is measured; the
same calls cut out perfectly and decoded one by one give the acoustic ceiling.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import random
import resource
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..grammar import Grammar
from ..messages import Ball
from ..settings import REAL_AUDIO
from . import audio as gen

ENGINES = ("pocketsphinx", "vosk")
PROBES = ("whisper",)
"""Alternatives measured by the benchmark only (assistant/bench/whisper_probe.py), never by 'all'."""
CONDITIONS: dict[str, float | None] = {"clean": None, "20": 20.0, "10": 10.0, "5": 5.0}

CHUNK_SECONDS = 0.1
CUT_MARGIN = 0.25
"""Seconds of context kept around a perfectly cut utterance (a good endpointer keeps about this much)."""
CALLING = "calling"


class BenchError(Exception):
    """The benchmark cannot run as asked, with a one-line reason."""


@dataclass(frozen=True)
class Plan:
    """What one benchmark run measures."""

    engines: tuple[str, ...] = ENGINES
    voices: int = 6
    rates: tuple[int, ...] = gen.WORDS_PER_MINUTE
    conditions: tuple[str, ...] = tuple(CONDITIONS)
    calls: int | None = 25
    """Balls per voice and rate; None: all 75. Slices rotate so every ball is said by calls*voices*rates/75
    speakers; a slice of 25 with 6 voices at 3 rates says each ball in 6 voice-rate pairs."""
    phrases: bool = True
    chatter_seconds: float = 180.0
    real: bool = True
    enhance: str | None = None
    """noisereduce (spectral gating) over each whole stream before the recognizer: 'nonstationary',
    'stationary', with ':STRENGTH' 0..1. Offline over the whole stream: it measures what enhancement does to
    accuracy, not its real-time cost."""
    seed: int = 7
    workers: int = 2
    options: tuple[tuple[str, Any], ...] = ()
    """Engine options passed to make_recognizer."""


@dataclass(frozen=True)
class Job:
    engine: str
    model: str | None
    condition: str
    streams: tuple[str, ...]
    chatter: str
    enhance: str | None
    options: tuple[tuple[str, Any], ...]
    real: bool
    seed: int


@dataclass
class Hearing:
    """One result of the recognizer, reduced to what the score needs."""

    start: float
    end: float
    text: str
    confidence: float
    uncertain: bool
    ready: float
    """Stream time the result was out: the audio fed so far plus the CPU time spent since that chunk was
    handed over (for a cut decode: that CPU time alone)."""
    calls: list[int] = field(default_factory=list)
    intents: list[str] = field(default_factory=list)


@dataclass
class StreamResult:
    name: str
    duration: float
    segments: list[dict[str, Any]]
    streamed: list[Hearing]
    cut: list[Hearing | None]
    """decode() of each segment, perfectly cut (None for non-call segments)."""


@dataclass
class JobResult:
    engine: str
    condition: str
    load_seconds: float
    compute_seconds: float
    audio_seconds: float
    peak_mb: float
    base_mb: float
    """Peak before the engine was built: the interpreter, numpy, the grammar."""
    streams: list[StreamResult]
    chatter: StreamResult | None
    real: dict[str, tuple[int, int]] = field(default_factory=dict)
    error: str | None = None


# ----- building the audio ----------------------------------------------------------------------------


def control_phrases(grammar: Grammar) -> list[tuple[str, str]]:
    """(words, intent): the first sentence of each non-call intent the caller may say while calling."""
    out = []
    for intent in grammar.step_intents(CALLING):
        if intent in ("call", "ask-called"):
            continue
        words, _ = next(iter(grammar.samples(intent)))
        out.append((words, intent))
    return out


def call_items(grammar: Grammar, balls: Sequence[Ball], phrases: Sequence[tuple[str, str]]) -> list[gen.Item]:
    """Each ball said twice in a row, as the rule has callers do, with control phrases in between."""
    items: list[gen.Item] = []
    every = max(1, len(balls) // max(1, len(phrases))) if phrases else 0
    queue = list(phrases)
    for i, ball in enumerate(balls):
        words = grammar.spoken(ball)
        items.append(gen.Item(words, "call", ball, "call", 1))
        items.append(gen.Item(words, "call", ball, "call", 2))
        if queue and every and (i + 1) % every == 0:
            text, intent = queue.pop(0)
            items.append(gen.Item(text, "phrase", None, intent))
    items.extend(gen.Item(text, "phrase", None, intent) for text, intent in queue)
    return items


def _segment_json(seg: gen.Segment) -> dict[str, Any]:
    return {
        "start": seg.start,
        "end": seg.end,
        "text": seg.text,
        "kind": seg.kind,
        "ball": seg.ball.number if seg.ball else None,
        "intent": seg.intent,
        "hearing": seg.hearing,
    }


def _save(stream: gen.Stream, folder: Path) -> str:
    path = folder / f"{stream.name}.wav"
    gen.write_wav(path, stream.samples)
    path.with_suffix(".json").write_text(json.dumps([_segment_json(s) for s in stream.segments]))
    return str(path)


def build_audio(plan: Plan, grammar: Grammar, workdir: Path) -> dict[str, tuple[list[str], str]]:
    """Per condition: the call streams (one per voice and rate) and one chatter stream, saved as WAV + JSON."""
    rng = random.Random(plan.seed)
    balls = [Ball(n) for n in range(1, 76)]
    rng.shuffle(balls)
    per_stream = plan.calls or len(balls)
    phrases = control_phrases(grammar) if plan.phrases else []
    speakers = gen.voices(plan.voices, plan.rates)
    crowd = gen.Crowd(random.Random(plan.seed + 1))
    out: dict[str, tuple[list[str], str]] = {}
    for cond in plan.conditions:
        snr = CONDITIONS[cond]
        folder = workdir / f"snr-{cond}"
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for k, voice in enumerate(speakers):
            order = [balls[(k * per_stream + j) % len(balls)] for j in range(per_stream)]
            random.Random(plan.seed * 1000 + k).shuffle(order)
            items = call_items(grammar, order, phrases)
            stream = gen.build_stream(f"calls-{voice.name}-{voice.wpm}", items, [voice] * len(items), snr, rng, crowd)
            paths.append(_save(stream, folder))
        chatter_items: list[gen.Item] = []
        chatter_voices: list[gen.Voice] = []
        seconds = 0.0
        k = 0
        while seconds < plan.chatter_seconds:
            text = gen.CHATTER_SENTENCES[k % len(gen.CHATTER_SENTENCES)]
            voice = speakers[(k * 7) % len(speakers)]
            chatter_items.append(gen.Item(text, "chatter"))
            chatter_voices.append(voice)
            seconds += len(text.split()) * 60.0 / voice.wpm + 0.8
            k += 1
        chatter = gen.build_stream("chatter", chatter_items, chatter_voices, snr, rng, crowd, gap=(0.3, 1.2))
        out[cond] = (paths, _save(chatter, folder))
    return out


# ----- running one engine on one condition (in a child process) -----------------------------------------


def _hearing(heard: Any, grammar: Grammar, intents: Sequence[str], ready: float) -> Hearing:
    parsed = grammar.parse(heard.text, intents)
    return Hearing(
        start=float(heard.start),
        end=float(heard.end),
        text=str(heard.text),
        confidence=float(heard.confidence),
        uncertain=bool(heard.uncertain),
        ready=ready,
        calls=[m.ball.number for m in parsed.meanings if m.intent == "call" and m.ball is not None],
        intents=[m.intent for m in parsed.meanings],
    )


def _enhance(samples: np.ndarray, mode: str) -> np.ndarray:
    """noisereduce spectral gating: 'nonstationary' or 'stationary', optionally ':STRENGTH' (prop_decrease)."""
    kind, _, strength = mode.partition(":")
    if kind not in ("nonstationary", "stationary"):
        raise BenchError(f"enhance mode is nonstationary|stationary[:0..1], got {mode!r}")
    try:  # optional, only for --enhance; it ships no type hints
        noisereduce: Any = importlib.import_module("noisereduce")
    except ImportError as exc:
        raise BenchError("--enhance needs the noisereduce package (pip install noisereduce)") from exc
    cleaned = noisereduce.reduce_noise(
        y=samples.astype(np.float32),
        sr=gen.RATE,
        stationary=kind == "stationary",
        prop_decrease=float(strength or 1.0),
        n_jobs=1,
    )
    return np.asarray(np.clip(np.round(cleaned), -32768, 32767), dtype=np.int16)


class _Feed:
    """Chunks of a stream that remember how far the recognizer has read, and when."""

    def __init__(self, samples: np.ndarray) -> None:
        self.samples = samples
        self.position = 0.0
        self.handed = time.process_time()

    def __iter__(self) -> Iterator[Any]:
        from ..audio import chunks

        for chunk in chunks(self.samples, CHUNK_SECONDS):
            self.position = chunk.end
            self.handed = time.process_time()
            yield chunk


def _run_stream(recognizer: Any, grammar: Grammar, intents: Sequence[str], samples: np.ndarray) -> list[Hearing]:
    feed = _Feed(samples)
    out = []
    for heard in recognizer.stream(feed):
        lag = time.process_time() - feed.handed
        out.append(_hearing(heard, grammar, intents, feed.position + lag))
    return out


def _load_stream(path: str, enhance: str | None) -> tuple[np.ndarray, list[dict[str, Any]]]:
    samples = gen.read_wav(Path(path))
    if enhance:
        samples = _enhance(samples, enhance)
    return samples, json.loads(Path(path).with_suffix(".json").read_text())


def peak_memory_mb() -> float:
    """Peak resident memory of this process, C libraries included.

    VmHWM, not ru_maxrss: on Linux ru_maxrss survives exec, so a spawned child would report its parent's peak.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def engine_options(engine: str, options: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """--option pairs as make_recognizer keywords; 'settings.beam=1e-40' and 'endpoint.hangover=0.2' fill the
    pocketsphinx adapter's settings dataclasses, anything else passes through."""
    plain: dict[str, Any] = {}
    grouped: dict[str, dict[str, Any]] = {}
    for key, value in options:
        group, dot, name = key.partition(".")
        if dot:
            grouped.setdefault(group, {})[name] = value
        else:
            plain[key] = value
    if grouped and engine == "pocketsphinx":
        from ..endpoint import EndpointSettings
        from ..engines.pocketsphinx_engine import PocketsphinxSettings

        kinds: dict[str, Any] = {"settings": PocketsphinxSettings, "endpoint": EndpointSettings}
        for group, values in grouped.items():
            if group not in kinds:
                raise BenchError(f"unknown option group {group!r} (settings., endpoint.)")
            plain[group] = kinds[group](**values)
    elif grouped:
        raise BenchError(f"grouped options are for pocketsphinx only, not {engine}")
    return plain


def build_recognizer(engine: str, grammar: Grammar, model: Path | None, options: dict[str, Any]) -> Any:
    if engine == "whisper":
        from .whisper_probe import WhisperProbe

        return WhisperProbe(grammar, model, **options)
    from ..engines import make_recognizer

    return make_recognizer(engine, grammar, model, **options)


def run_job(job: Job) -> JobResult:
    """Load the engine, stream every call stream and the chatter, decode every cut call; measure it all."""
    grammar = Grammar.load()
    intents = grammar.step_intents(CALLING)
    base = peak_memory_mb()
    t0 = time.process_time()
    try:
        options = engine_options(job.engine, job.options)
        recognizer = build_recognizer(job.engine, grammar, Path(job.model) if job.model else None, options)
        recognizer.set_step(intents)
    except Exception as exc:  # the table says why an engine did not run
        return JobResult(job.engine, job.condition, 0, 0, 0, 0, 0, [], None, error=f"{type(exc).__name__}: {exc}")
    load = time.process_time() - t0
    compute = 0.0
    audio_seconds = 0.0
    results = []
    for path in (*job.streams, job.chatter):
        samples, segments = _load_stream(path, job.enhance)
        t = time.process_time()
        streamed = _run_stream(recognizer, grammar, intents, samples)
        compute += time.process_time() - t
        audio_seconds += len(samples) / gen.RATE
        cut: list[Hearing | None] = []
        for seg in segments:
            if seg["kind"] != "call":
                cut.append(None)
                continue
            lo = max(0, int((seg["start"] - CUT_MARGIN) * gen.RATE))
            hi = int((seg["end"] + CUT_MARGIN) * gen.RATE)
            t = time.process_time()
            heard = recognizer.decode(samples[lo:hi], start=lo / gen.RATE)
            cut.append(_hearing(heard, grammar, intents, time.process_time() - t))
        results.append(StreamResult(Path(path).stem, len(samples) / gen.RATE, segments, streamed, cut))
    peak = peak_memory_mb()
    model = Path(job.model) if job.model else None
    options = engine_options(job.engine, job.options)
    real = measure_real(job.engine, model, options, CONDITIONS[job.condition], job.seed) if job.real else {}
    return JobResult(
        job.engine, job.condition, load, compute, audio_seconds, peak, base, results[:-1], results[-1], real
    )


# ----- real human recordings ------------------------------------------------------------------------------


def real_grammar(grammar: Grammar) -> Grammar:
    """The bingo grammar plus two bench-only intents and steps: a bare digit string, a bare number."""
    if grammar.source is None:
        raise BenchError("the real-speech sets need a grammar loaded from a file")
    import yaml

    data = yaml.safe_load(grammar.source.read_text(encoding="utf-8"))
    data["intents"]["bench-digits"] = {"templates": ["{serial}"]}
    data["intents"]["bench-number"] = {"templates": ["{number}"]}
    data["steps"]["bench-digits"] = ["bench-digits"]
    data["steps"]["bench-number"] = ["bench-number"]
    data["steps"]["bench-yes-no"] = ["yes", "no"]
    return Grammar(data, grammar.source)


REAL_NUMBERS = {"one fifty", "two forty", "nineteen", "thirty three", "one hundred"}
DIGITS = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "oh"}


def real_sets(root: Path = REAL_AUDIO) -> dict[str, list[tuple[Path, str]]]:
    """Human recordings that fit a grammar step: FSDD single digits, AN4/TIDIGITS digit strings, AN4 numbers."""
    manifest = root / "manifest.jsonl"
    if not manifest.exists():
        return {}
    sets: dict[str, list[tuple[Path, str]]] = {
        "fsdd digit": [],
        "an4 digit string": [],
        "an4 number": [],
        "an4 yes/no": [],
    }
    for line in manifest.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        path, text = root / entry["path"], str(entry["text"])
        if str(entry["source"]).lower() == "fsdd":
            sets["fsdd digit"].append((path, text))
        elif text in REAL_NUMBERS:
            sets["an4 number"].append((path, text))
        elif text in ("yes", "no"):
            sets["an4 yes/no"].append((path, text))
        elif len(text.split()) > 1 and all(w in DIGITS for w in text.split()):
            sets["an4 digit string"].append((path, text))
    return sets


def measure_real(
    engine: str, model: Path | None, options: dict[str, Any], snr: float | None, seed: int
) -> dict[str, tuple[int, int]]:
    """Real speech decoded with a digits-only or number-only step: (right, total) per set."""
    from ..audio import read_wav

    sets = real_sets()
    if not sets:
        return {}
    grammar = real_grammar(Grammar.load())
    recognizer = build_recognizer(engine, grammar, model, options)
    crowd = gen.Crowd(random.Random(seed + 2)) if snr is not None else None
    rng = random.Random(seed + 3)
    out: dict[str, tuple[int, int]] = {}
    for name, files in sets.items():
        step = "bench-number" if "number" in name else "bench-yes-no" if "yes" in name else "bench-digits"
        recognizer.set_step(grammar.step_intents(step))
        right = 0
        for path, text in files:
            samples = read_wav(path).channels[0]
            pad = np.zeros(int(0.3 * gen.RATE), dtype=np.int16)
            samples = gen.mix(np.concatenate([pad, samples, pad]), snr, rng, crowd)
            heard = recognizer.decode(samples)
            intents = grammar.step_intents(step)
            want = [(m.intent, m.number, m.serial) for m in grammar.parse(text, intents).meanings]
            got = [(m.intent, m.number, m.serial) for m in grammar.parse(heard.text, intents).meanings]
            right += int(not heard.uncertain and got == want)
        out[name] = (right, len(files))
    return out


# ----- scoring -----------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Outcomes of the calls of one condition (each hearing, or each call with both hearings fused)."""

    right: int = 0
    wrong: int = 0
    uncertain: int = 0
    missed: int = 0

    @property
    def total(self) -> int:
        return self.right + self.wrong + self.uncertain + self.missed

    def add(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)

    def pct(self, outcome: str) -> float:
        count: int = getattr(self, outcome)
        return 100.0 * count / self.total if self.total else float("nan")


def _overlap(h: Hearing, seg: dict[str, Any]) -> float:
    return min(h.end, float(seg["end"])) - max(h.start, float(seg["start"]))


THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
"""Confidence thresholds of the sweep: what min_confidence would give, from the same run's confidences."""


def sure(h: Hearing, threshold: float | None = None) -> bool:
    """The engine's own verdict, or: at least this confident (the sweep)."""
    return not h.uncertain if threshold is None else bool(h.text) and h.confidence >= threshold


def outcome(hearings: Sequence[Hearing], ball: int, threshold: float | None = None) -> tuple[str, int | None]:
    """What the procedure would take from these results for one said call, and the ball it would take."""
    certain = {b for h in hearings if sure(h, threshold) for b in h.calls}
    if certain == {ball}:
        return "right", ball
    if certain:
        return "wrong", min(certain, key=lambda b: b != ball)
    if hearings:
        return "uncertain", None
    return "missed", None


def fuse(first: tuple[str, int | None], second: tuple[str, int | None], ball: int) -> str:
    """Both hearings of one call: agreeing or a single sure hearing decides; disagreeing is uncertain."""
    heard = [b for kind, b in (first, second) if kind in ("right", "wrong") and b is not None]
    if not heard:
        return "uncertain" if "uncertain" in (first[0], second[0]) else "missed"
    if len(set(heard)) > 1:
        return "uncertain"
    return "right" if heard[0] == ball else "wrong"


@dataclass
class Score:
    """One engine on one condition."""

    engine: str
    condition: str
    streamed: Tally = field(default_factory=Tally)
    streamed_fused: Tally = field(default_factory=Tally)
    cut: Tally = field(default_factory=Tally)
    cut_fused: Tally = field(default_factory=Tally)
    phrases_right: int = 0
    phrases: int = 0
    false_calls_chatter: int = 0
    chatter_minutes: float = 0.0
    false_calls_gaps: int = 0
    gap_minutes: float = 0.0
    latencies: list[float] = field(default_factory=list)
    rtf: float = float("nan")
    peak_mb: float = float("nan")
    base_mb: float = float("nan")
    load_seconds: float = float("nan")
    real: dict[str, tuple[int, int]] = field(default_factory=dict)
    error: str | None = None
    sweep_streamed: dict[float, Tally] = field(default_factory=dict)
    sweep_cut: dict[float, Tally] = field(default_factory=dict)
    sweep_chatter: dict[float, int] = field(default_factory=dict)


def score_stream(result: StreamResult, score: Score) -> None:
    segments = result.segments
    assigned: dict[int, list[Hearing]] = {i: [] for i in range(len(segments))}
    for h in result.streamed:
        best = max(range(len(segments)), key=lambda i: _overlap(h, segments[i]), default=None)
        if best is not None and _overlap(h, segments[best]) > 0:
            assigned[best].append(h)
        elif not h.uncertain and h.calls:
            score.false_calls_gaps += len(h.calls)
    speech = sum(s["end"] - s["start"] for s in segments)
    score.gap_minutes += max(0.0, result.duration - speech) / 60.0
    pending: dict[int, tuple[tuple[str, int | None], tuple[str, int | None]]] = {}
    for i, seg in enumerate(segments):
        if seg["kind"] == "phrase":
            score.phrases += 1
            hs = assigned[i]
            ok = any(not h.uncertain and seg["intent"] in h.intents for h in hs)
            score.phrases_right += int(ok and not any(not h.uncertain and h.calls for h in hs))
            continue
        ball = int(seg["ball"])
        heard = outcome(assigned[i], ball)
        score.streamed.add(heard[0])
        if heard[0] == "right":
            # From the true end of speech (the generator knows it) to the result.
            score.latencies.extend(h.ready - seg["end"] for h in assigned[i] if not h.uncertain and ball in h.calls)
        cut_hearing = result.cut[i]
        cut = outcome([cut_hearing] if cut_hearing is not None and cut_hearing.text else [], ball)
        if cut_hearing is not None and not cut_hearing.text:
            cut = ("uncertain" if cut_hearing.uncertain else "missed", None)
        score.cut.add(cut[0])
        for t in THRESHOLDS:
            score.sweep_streamed.setdefault(t, Tally()).add(outcome(assigned[i], ball, t)[0])
            cut_at = [cut_hearing] if cut_hearing is not None and cut_hearing.text else []
            score.sweep_cut.setdefault(t, Tally()).add(outcome(cut_at, ball, t)[0])
        if seg["hearing"] == 1:
            pending[ball] = (heard, cut)
        elif seg["hearing"] == 2 and ball in pending:
            first_streamed, first_cut = pending.pop(ball)
            score.streamed_fused.add(fuse(first_streamed, heard, ball))
            score.cut_fused.add(fuse(first_cut, cut, ball))


def score_job(job: JobResult) -> Score:
    score = Score(job.engine, job.condition, error=job.error)
    if job.error:
        return score
    for stream in job.streams:
        score_stream(stream, score)
    if job.chatter is not None:
        score.chatter_minutes = job.chatter.duration / 60.0
        score.false_calls_chatter = sum(len(h.calls) for h in job.chatter.streamed if not h.uncertain)
        for t in THRESHOLDS:
            score.sweep_chatter[t] = sum(len(h.calls) for h in job.chatter.streamed if sure(h, t))
    score.rtf = job.compute_seconds / job.audio_seconds if job.audio_seconds else float("nan")
    score.peak_mb = job.peak_mb
    score.base_mb = job.base_mb
    score.load_seconds = job.load_seconds
    score.real = job.real
    return score


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1f}"


def _ms(values: Sequence[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.0f}"


COLUMNS = (
    "engine",
    "condition",
    "calls",
    "right %",
    "wrong %",
    "uncertain %",
    "missed %",
    "fused right %",
    "fused wrong %",
    "cut right %",
    "cut wrong %",
    "cut fused right %",
    "phrases right %",
    "false calls/min chatter",
    "false calls/min gaps",
    "latency p50 ms",
    "latency p95 ms",
    "RTF",
    "peak MB",
    "of which python MB",
    "load s",
)


def table_rows(scores: Iterable[Score]) -> list[list[str]]:
    rows = []
    for s in scores:
        if s.error:
            rows.append([s.engine, s.condition, s.error] + [""] * (len(COLUMNS) - 3))
            continue
        rows.append(
            [
                s.engine,
                s.condition,
                str(s.streamed.total),
                _pct(s.streamed.pct("right")),
                _pct(s.streamed.pct("wrong")),
                _pct(s.streamed.pct("uncertain")),
                _pct(s.streamed.pct("missed")),
                _pct(s.streamed_fused.pct("right")),
                _pct(s.streamed_fused.pct("wrong")),
                _pct(s.cut.pct("right")),
                _pct(s.cut.pct("wrong")),
                _pct(s.cut_fused.pct("right")),
                _pct(100.0 * s.phrases_right / s.phrases if s.phrases else float("nan")),
                f"{s.false_calls_chatter / s.chatter_minutes:.2f}" if s.chatter_minutes else "-",
                f"{s.false_calls_gaps / s.gap_minutes:.2f}" if s.gap_minutes else "-",
                _ms(s.latencies, 0.5),
                _ms(s.latencies, 0.95),
                f"{s.rtf:.3f}",
                f"{s.peak_mb:.0f}",
                f"{s.base_mb:.0f}",
                f"{s.load_seconds:.2f}",
            ]
        )
    return rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def real_table(scores: Iterable[Score]) -> str:
    rows = []
    for s in scores:
        for name, (right, total) in s.real.items():
            rows.append(
                [s.engine, s.condition, name, str(total), _pct(100.0 * right / total if total else float("nan"))]
            )
    if not rows:
        return ""
    return markdown(("engine", "condition", "real set", "files", "right %"), rows)


def sweep_table(scores: Iterable[Score]) -> str:
    rows = []
    for s in scores:
        for t in sorted(s.sweep_cut):
            streamed, cut = s.sweep_streamed[t], s.sweep_cut[t]
            rows.append(
                [
                    s.engine,
                    s.condition,
                    f"{t:.1f}",
                    _pct(streamed.pct("right")),
                    _pct(streamed.pct("wrong")),
                    _pct(cut.pct("right")),
                    _pct(cut.pct("wrong")),
                    f"{s.sweep_chatter.get(t, 0) / s.chatter_minutes:.2f}" if s.chatter_minutes else "-",
                ]
            )
    header = ("engine", "condition", "min confidence", "right %", "wrong %", "cut right %", "cut wrong %")
    return markdown((*header, "false calls/min chatter"), rows) if rows else ""


# ----- running it all -------------------------------------------------------------------------------------


def vosk_model() -> str | None:
    """An English vosk model from BINGO_VOSK_MODEL (the Korean test model is never benchmarked on English)."""
    value = os.environ.get("BINGO_VOSK_MODEL")
    return value if value and Path(value).is_dir() else None


def run(plan: Plan, workdir: Path | None = None, log: Any = print) -> tuple[list[Score], list[str]]:
    """Build the audio, run every engine on every condition in child processes, score; notes for the table."""
    grammar = Grammar.load()
    notes: list[str] = []
    engines = []
    for engine in plan.engines:
        if engine not in ENGINES + PROBES:
            raise BenchError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES + PROBES)})")
        if engine == "vosk" and vosk_model() is None:
            notes.append("vosk: no English model here (set BINGO_VOSK_MODEL to an English vosk model folder)")
            continue
        engines.append(engine)
    with tempfile.TemporaryDirectory(prefix="bingo-bench-") as tmp:
        folder = workdir or Path(tmp)
        t = time.perf_counter()
        audio = build_audio(plan, grammar, folder)
        log(f"audio built in {time.perf_counter() - t:.0f} s")
        jobs = [
            Job(
                engine,
                vosk_model() if engine == "vosk" else None,
                cond,
                tuple(audio[cond][0]),
                audio[cond][1],
                plan.enhance,
                plan.options,
                plan.real,
                plan.seed,
            )
            for engine in engines
            for cond in plan.conditions
        ]
        scores = []
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=plan.workers, mp_context=context, max_tasks_per_child=1) as pool:
            for result in pool.map(run_job, jobs):
                scores.append(score_job(result))
                log(f"{result.engine} {result.condition}: done")
    return scores, notes


def code_version() -> str:
    """The commit measured, and whether the engine code differed from it."""
    import subprocess

    root = Path(__file__).resolve().parent.parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "assistant/engines", "assistant/endpoint.py", "assistant/audio.py"],
            cwd=root,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + (" (engine code modified)" if dirty.stdout.strip() else "")


def report(plan: Plan, scores: Sequence[Score], notes: Sequence[str], command: str) -> str:
    parts = [f"Command: `{command}` at commit {code_version()}", "", markdown(COLUMNS, table_rows(scores))]
    real = real_table(scores)
    if real:
        parts += ["", "Real human speech (decode of each file, digits-only or number-only step):", "", real]
    sweep = sweep_table(scores)
    if sweep:
        parts += ["", "Confidence sweep: the same results with uncertain = confidence below the threshold:", "", sweep]
    if notes:
        parts += [""] + [f"- {n}" for n in notes]
    parts += ["", f"Plan: {json.dumps(asdict(plan))}"]
    return "\n".join(parts) + "\n"
