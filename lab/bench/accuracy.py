"""Recognition accuracy benchmark: calls in crowd babble (espeak voices and real ones), chatter, real recordings.

Times are CPU seconds of the engine's whole process (time.process_time: every thread), not wall time: on a
shared machine other work would inflate wall time, while CPU time is what the engine costs (RTF, compute lag,
load).

Each engine and condition runs in its own child process, so peak memory and model load time are that
engine's own. Streams are continuous recordings, so the engine's own endpointing is measured; the same calls
cut out perfectly and decoded one by one give the acoustic ceiling.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assistant.engines import ENGINES, WHISPER_ENGINES
from assistant.grammar import Grammar
from assistant.messages import Ball
from lab.bench import audio as gen
from lab.bench import real
from lab.bench.score import (
    COLUMNS,
    Hearing,
    JobResult,
    Score,
    StreamResult,
    dump_lines,
    markdown,
    ordered,
    real_sets_table,
    score_job,
    sweep_table,
    table_rows,
    targets_table,
)

SNRS: dict[str, float | None] = {"clean": None, "20": 20.0, "10": 10.0, "5": 5.0}
BABBLES = ("real", "espeak")
"""Crowd babble made of the human recordings (the accuracy targets' figures), or of espeak voices (earlier tables)."""

CHUNK_SECONDS = 0.1
CUT_MARGIN = 0.25
"""Seconds of context kept around a perfectly cut utterance (a good endpointer keeps about this much)."""
CALLING = "calling"


class BenchError(Exception):
    """The benchmark cannot run as asked, with a one-line reason."""


@dataclass(frozen=True)
class Condition:
    """What the calls are heard through: clean, or babble of one kind at one SNR."""

    snr: float | None = None
    babble: str | None = None

    @property
    def name(self) -> str:
        return "clean" if self.snr is None else f"{self.snr:g} dB {self.babble} babble"

    @property
    def key(self) -> str:
        return "clean" if self.snr is None else f"{self.snr:g}-{self.babble}"


@dataclass(frozen=True)
class Plan:
    """What one benchmark run measures."""

    engines: tuple[str, ...] = ("hall", "whisper", "pocketsphinx")
    voices: int = 6
    rates: tuple[int, ...] = gen.WORDS_PER_MINUTE
    snrs: tuple[str, ...] = tuple(SNRS)
    """clean, 20, 10, 5: each SNR other than clean is run in every babble of `babble`."""
    babble: tuple[str, ...] = ("real",)
    calls: int | None = 25
    """Balls per espeak voice and rate; None: all 75. Slices rotate so every ball is said by
    calls*voices*rates/75 speakers; a slice of 25 with 6 voices at 3 rates says each ball in 6 voice-rate pairs."""
    phrases: bool = True
    chatter_seconds: float = 180.0
    """Off-grammar chatter per condition, espeak voices and real ones each."""
    real_calls: int | None = 25
    """Balls per FSDD speaker (6 speakers, slices rotating); None: all 75; 0: no real calls (nor real chatter)."""
    real_speakers: int | None = None
    """FSDD speakers saying real calls (1..6); None: all."""
    real_sets: bool = True
    """The one-step sets: FSDD digits, AN4 digit strings, numbers and yes/no, each decoded with its own step."""
    enhance: str | None = None
    """noisereduce (spectral gating) over each whole stream before the recognizer: 'nonstationary',
    'stationary', with ':STRENGTH' 0..1. Offline over the whole stream: it measures what enhancement does to
    accuracy, not its real-time cost."""
    seed: int = 7
    workers: int = 2
    options: tuple[tuple[str, Any], ...] = ()
    """--option pairs: '[ENGINE:]settings.NAME' or '[ENGINE:]endpoint.NAME' with a value."""

    def conditions(self) -> list[Condition]:
        out = []
        if "clean" in self.snrs:
            out.append(Condition())
        for babble in self.babble:
            out += [Condition(SNRS[name], babble) for name in self.snrs if SNRS[name] is not None]
        return out


@dataclass(frozen=True)
class StreamSpec:
    """A stream saved for the child: its WAV (truth in the JSON beside it), whose voices, chatter or calls."""

    path: str
    voices: str
    chatter: bool


@dataclass(frozen=True)
class Job:
    engine: str
    model: str | None
    condition: Condition
    streams: tuple[StreamSpec, ...]
    enhance: str | None
    options: tuple[tuple[str, Any], ...]
    real_sets: bool
    seed: int


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
        "recordings": list(seg.recordings),
    }


def _save(stream: gen.Stream, folder: Path) -> str:
    path = folder / f"{stream.name}.wav"
    gen.write_wav(path, stream.samples)
    path.with_suffix(".json").write_text(json.dumps([_segment_json(s) for s in stream.segments]))
    return str(path)


def _espeak_chatter(plan: Plan, speakers: Sequence[gen.Voice]) -> tuple[list[gen.Item], list[gen.Voice]]:
    items: list[gen.Item] = []
    voices: list[gen.Voice] = []
    seconds = 0.0
    k = 0
    while seconds < plan.chatter_seconds:
        text = gen.CHATTER_SENTENCES[k % len(gen.CHATTER_SENTENCES)]
        voice = speakers[(k * 7) % len(speakers)]
        items.append(gen.Item(text, "chatter"))
        voices.append(voice)
        seconds += len(text.split()) * 60.0 / voice.wpm + 0.8
        k += 1
    return items, voices


def crowds(plan: Plan) -> dict[str, gen.Crowd]:
    """The babble of each kind the plan asks for."""
    out: dict[str, gen.Crowd] = {}
    if "espeak" in plan.babble:
        out["espeak"] = gen.Crowd(random.Random(plan.seed + 1))
    if "real" in plan.babble:
        try:
            out["real"] = real.real_crowd(random.Random(plan.seed + 4))
        except real.RealAudioError as exc:
            raise BenchError(str(exc)) from exc
    return out


def build_audio(plan: Plan, grammar: Grammar, workdir: Path) -> dict[str, list[StreamSpec]]:
    """Per condition: espeak call streams (one per voice and rate) and espeak chatter, then the real call
    streams (one per FSDD speaker, one of AN4 numbers) and real chatter; saved as WAV + JSON."""
    rng = random.Random(plan.seed)
    balls = [Ball(n) for n in range(1, 76)]
    rng.shuffle(balls)
    per_stream = plan.calls or len(balls)
    phrases = control_phrases(grammar) if plan.phrases else []
    speakers = gen.voices(plan.voices, plan.rates)
    babble = crowds(plan)
    out: dict[str, list[StreamSpec]] = {}
    for cond in plan.conditions():
        crowd = babble[cond.babble] if cond.babble else None
        folder = workdir / cond.key
        folder.mkdir(parents=True, exist_ok=True)
        specs = []
        for k, voice in enumerate(speakers):
            order = [balls[(k * per_stream + j) % len(balls)] for j in range(per_stream)]
            random.Random(plan.seed * 1000 + k).shuffle(order)
            items = call_items(grammar, order, phrases)
            name = f"calls-{voice.name}-{voice.wpm}"
            stream = gen.build_stream(name, items, [voice] * len(items), cond.snr, rng, crowd)
            specs.append(StreamSpec(_save(stream, folder), "espeak", False))
        if plan.chatter_seconds > 0:
            items, voices = _espeak_chatter(plan, speakers)
            chatter = gen.build_stream("chatter", items, voices, cond.snr, rng, crowd, gap=(0.3, 1.2))
            specs.append(StreamSpec(_save(chatter, folder), "espeak", True))
        if plan.real_calls != 0:
            try:
                for stream in real.call_streams(
                    grammar, plan.real_calls, plan.seed + 5, cond.snr, crowd, plan.real_speakers
                ):
                    specs.append(StreamSpec(_save(stream, folder), "real", False))
                if plan.chatter_seconds > 0:
                    talk = real.chatter_stream(plan.chatter_seconds, plan.seed + 6, cond.snr, crowd)
                    specs.append(StreamSpec(_save(talk, folder), "real", True))
            except real.RealAudioError as exc:
                raise BenchError(str(exc)) from exc
        out[cond.key] = specs
    return out


# ----- engine options -------------------------------------------------------------------------------------


def option_groups(engine: str) -> dict[str, Any]:
    """The settings an engine takes, by --option group, as the engine has them by default (the Whisper engines
    cut with `HALL_CUTTING`): an option changes a field of these."""
    from assistant.endpoint import HALL_CUTTING, EndpointSettings

    if engine in WHISPER_ENGINES:
        from assistant.engines.whisper_engine import WhisperSettings

        return {"settings": WhisperSettings(), "endpoint": HALL_CUTTING}
    if engine == "pocketsphinx":
        from assistant.engines.pocketsphinx_engine import PocketsphinxSettings

        return {"settings": PocketsphinxSettings(), "endpoint": EndpointSettings()}
    return {"endpoint": EndpointSettings()}


def _sets(engine: str, key: str) -> tuple[str, str] | None:
    """(group, field) when option `key` ('[ENGINE:]group.field') sets something in this engine, else None."""
    only, colon, rest = key.partition(":")
    if not colon:
        only, rest = "", key
    if only and only not in ENGINES:
        raise BenchError(f"unknown engine {only!r} in option {key!r} (expected one of {', '.join(ENGINES)})")
    group, dot, name = rest.partition(".")
    if not dot or not name:
        raise BenchError(f"an engine option is [ENGINE:]settings.NAME or [ENGINE:]endpoint.NAME, got {key!r}")
    if group not in ("settings", "endpoint"):
        raise BenchError(f"unknown option group {group!r} in {key!r} (settings., endpoint.)")
    if only and only != engine:
        return None
    kind = option_groups(engine).get(group)
    if kind is None or name not in {f.name for f in dataclasses.fields(kind)}:
        if only:
            raise BenchError(f"{engine} has no option {rest!r}")
        return None
    return group, name


def engine_options(engine: str, options: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """--option pairs as make_recognizer keywords for this engine: 'settings.min_confidence=0.8' fills the
    fields of the engine's settings dataclass (WhisperSettings, PocketsphinxSettings), 'endpoint.hangover=0.2'
    its EndpointSettings. An option without 'ENGINE:' goes to every engine that has the field."""
    grouped: dict[str, dict[str, Any]] = {}
    for key, value in options:
        found = _sets(engine, key)
        if found:
            grouped.setdefault(found[0], {})[found[1]] = value
    defaults = option_groups(engine)
    try:
        return {group: dataclasses.replace(defaults[group], **values) for group, values in grouped.items()}
    except (TypeError, ValueError) as exc:
        raise BenchError(f"bad option for {engine}: {exc}") from exc


def parse_option(text: str) -> tuple[str, object]:
    """`[ENGINE:]GROUP.NAME=VALUE` (a benchmark's `--option`) -> (key, value as int, float, bool or text)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"an engine option is [ENGINE:]GROUP.NAME=VALUE; got {text!r}")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, {"true": True, "false": False}.get(value.lower(), value)


def add_option_flag(parser: argparse.ArgumentParser, help: str) -> None:
    """The benchmarks' repeatable `--option` (parsed by `parse_option`, checked by `check_options`)."""
    parser.add_argument("--option", type=parse_option, action="append", default=[], help=help)


def check_options(engines: Sequence[str], options: Iterable[tuple[str, Any]]) -> None:
    """Every option sets something in at least one engine of the run."""
    for key, _ in options:
        if not any(_sets(engine, key) for engine in engines):
            raise BenchError(f"option {key!r} sets nothing in {', '.join(engines)}")


def build_recognizer(engine: str, grammar: Grammar, model: Path | None, options: dict[str, Any]) -> Any:
    from assistant.engines import make_recognizer

    return make_recognizer(engine, grammar, model, **options)


# ----- running one engine on one condition (in a child process) -----------------------------------------


def _hearing(heard: Any, grammar: Grammar, intents: Sequence[str], ready: float, floor: float | None) -> Hearing:
    parsed = grammar.parse(heard.text, intents)
    confidence = float(heard.confidence)
    return Hearing(
        start=float(heard.start),
        end=float(heard.end),
        text=str(heard.text),
        confidence=confidence,
        uncertain=bool(heard.uncertain),
        ready=ready,
        calls=[m.ball.number for m in parsed.meanings if m.intent == "call" and m.ball is not None],
        intents=[m.intent for m in parsed.meanings],
        held=bool(heard.uncertain) and floor is not None and confidence >= floor,
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
        from assistant.audio import chunks

        for chunk in chunks(self.samples, CHUNK_SECONDS):
            self.position = chunk.end
            self.handed = time.process_time()
            yield chunk


def _run_stream(
    recognizer: Any, grammar: Grammar, intents: Sequence[str], samples: np.ndarray, floor: float | None
) -> list[Hearing]:
    feed = _Feed(samples)
    out = []
    ahead = getattr(recognizer, "decodes_ahead", False)
    for heard in recognizer.stream(feed):
        lag = time.process_time() - feed.handed
        # An engine that starts decoding before the utterance closes reports its own latency as it would be
        # live, in CPU seconds from the end of speech; the feed here cannot see a decode that ran ahead.
        ready = heard.end + heard.latency if ahead else feed.position + lag
        out.append(_hearing(heard, grammar, intents, ready, floor))
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


def _min_confidence(recognizer: Any) -> float | None:
    value = getattr(getattr(recognizer, "settings", None), "min_confidence", None)
    return float(value) if isinstance(value, (int, float)) else None


def run_job(job: Job) -> JobResult:
    """Load the engine, stream every call stream and chatter, decode every cut call; measure it all."""
    grammar = Grammar.load()
    intents = grammar.step_intents(CALLING)
    cond = job.condition
    base = peak_memory_mb()
    t0 = time.process_time()
    try:
        options = engine_options(job.engine, job.options)
        recognizer = build_recognizer(job.engine, grammar, Path(job.model) if job.model else None, options)
        recognizer.set_step(intents)
    except Exception as exc:  # the table says why an engine did not run
        return JobResult(job.engine, cond.name, cond.snr, 0, 0, 0, [], error=f"{type(exc).__name__}: {exc}")
    load = time.process_time() - t0
    floor = _min_confidence(recognizer)
    results = []
    for spec in job.streams:
        samples, segments = _load_stream(spec.path, job.enhance)
        t = time.process_time()
        streamed = _run_stream(recognizer, grammar, intents, samples, floor)
        cpu = time.process_time() - t
        cut: list[Hearing | None] = []
        for seg in segments:
            if seg["kind"] != "call":
                cut.append(None)
                continue
            lo = max(0, int((seg["start"] - CUT_MARGIN) * gen.RATE))
            hi = int((seg["end"] + CUT_MARGIN) * gen.RATE)
            t = time.process_time()
            heard = recognizer.decode(samples[lo:hi], start=lo / gen.RATE)
            cut.append(_hearing(heard, grammar, intents, time.process_time() - t, floor))
        duration = len(samples) / gen.RATE
        results.append(
            StreamResult(Path(spec.path).stem, spec.voices, spec.chatter, duration, cpu, segments, streamed, cut)
        )
    peak = peak_memory_mb()
    del recognizer
    model = Path(job.model) if job.model else None
    sets = measure_real_sets(job.engine, model, options, cond, job.seed) if job.real_sets else {}
    return JobResult(job.engine, cond.name, cond.snr, load, peak, base, results, sets)


def measure_real_sets(
    engine: str, model: Path | None, options: dict[str, Any], cond: Condition, seed: int
) -> dict[str, tuple[int, int]]:
    """Real speech decoded with a digits-only, number-only or yes/no step: (right, total) per set."""
    from assistant.audio import read_wav

    sets = real.real_sets()
    if not sets:
        return {}
    grammar = real.real_grammar(Grammar.load())
    recognizer = build_recognizer(engine, grammar, model, options)
    crowd: gen.Crowd | None = None
    if cond.babble == "espeak":
        crowd = gen.Crowd(random.Random(seed + 2))
    elif cond.babble == "real":
        crowd = real.real_crowd(random.Random(seed + 2))
    rng = random.Random(seed + 3)
    out: dict[str, tuple[int, int]] = {}
    for name, files in sets.items():
        step = "bench-number" if "number" in name else "bench-yes-no" if "yes" in name else "bench-digits"
        recognizer.set_step(grammar.step_intents(step))
        right = 0
        for path, text in files:
            samples = read_wav(path).channels[0]
            pad = np.zeros(int(0.3 * gen.RATE), dtype=np.int16)
            samples = gen.mix(np.concatenate([pad, samples, pad]), cond.snr, rng, crowd)
            heard = recognizer.decode(samples)
            intents = grammar.step_intents(step)
            want = [(m.intent, m.number, m.serial) for m in grammar.parse(text, intents).meanings]
            got = [(m.intent, m.number, m.serial) for m in grammar.parse(heard.text, intents).meanings]
            right += int(not heard.uncertain and got == want)
        out[name] = (right, len(files))
    return out


# ----- running it all -------------------------------------------------------------------------------------


def vosk_model() -> str | None:
    """An English vosk model from BINGO_VOSK_MODEL (the Korean test model is never benchmarked on English)."""
    value = os.environ.get("BINGO_VOSK_MODEL")
    return value if value and Path(value).is_dir() else None


def run(
    plan: Plan, workdir: Path | None = None, log: Any = print, dump: Path | None = None
) -> tuple[list[Score], list[str]]:
    """Build the audio, run every engine on every condition in child processes, score; notes for the table.

    `dump`: also write every hearing (streamed and cut) with its truth to this JSONL file.
    """
    grammar = Grammar.load()
    notes: list[str] = []
    engines = []
    for engine in plan.engines:
        if engine not in ENGINES:
            raise BenchError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
        if engine == "vosk" and vosk_model() is None:
            notes.append("vosk: no English model here (set BINGO_VOSK_MODEL to an English vosk model folder)")
            continue
        engines.append(engine)
    check_options(plan.engines, plan.options)
    for babble in plan.babble:
        if babble not in BABBLES:
            raise BenchError(f"unknown babble {babble!r} (expected {', '.join(BABBLES)})")
    started, load_before = time.time(), os.getloadavg()
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
                tuple(audio[cond.key]),
                plan.enhance,
                plan.options,
                plan.real_sets,
                plan.seed,
            )
            for engine in engines
            for cond in plan.conditions()
        ]
        scores: list[Score] = []
        context = multiprocessing.get_context("spawn")
        out = dump.open("w", encoding="utf-8") if dump else None
        try:
            with ProcessPoolExecutor(max_workers=plan.workers, mp_context=context, max_tasks_per_child=1) as pool:
                for result in pool.map(run_job, jobs):
                    scores.extend(score_job(result))
                    if out is not None:
                        out.writelines(json.dumps(line) + "\n" for line in dump_lines(result))
                    log(f"{result.engine} {result.condition}: done at {time.perf_counter() - t:.0f} s")
        finally:
            if out is not None:
                out.close()
    load_after = os.getloadavg()
    notes.append(
        f"measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))}-{time.strftime('%H:%M', time.gmtime())}"
        f" UTC on {os.cpu_count()} cores; load average (1, 5, 15 min) {_loads(load_before)} before,"
        f" {_loads(load_after)} after"
    )
    return ordered(scores, [c.name for c in plan.conditions()]), notes


def _loads(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.1f}" for v in values)


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
    targets = targets_table(scores)
    if targets:
        parts += ["", "Against the accuracy targets (✓ met, ✗ not met):", "", targets]
    sets = real_sets_table(scores)
    if sets:
        parts += ["", "Real recordings, each decoded with the step that fits it (digits, number, yes/no):", "", sets]
    sweep = sweep_table(scores)
    if sweep:
        parts += ["", "Confidence sweep: the same results with uncertain = confidence below the threshold:", "", sweep]
    if notes:
        parts += [""] + [f"- {n}" for n in notes]
    parts += ["", f"Plan: {json.dumps(asdict(plan))}"]
    return "\n".join(parts) + "\n"
