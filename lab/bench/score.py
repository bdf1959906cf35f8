"""Scoring the benchmark: what each hearing means for the procedure, tallied per engine, voices and condition.

A said call is right when the sure hearings over it are exactly that ball, wrong when they hold another ball
(the dangerous case: an A(5) violation that was not), uncertain when there were only unsure hearings, missed
when there was none. The tables and the accuracy targets (`RIGHT_TARGETS` and the rest) are printed from these tallies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


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
    held: bool = False
    """Uncertain for a reason besides its confidence (words the grammar cannot place, the SNR rule, a second
    saying that disagrees with the first): it stays uncertain at every threshold of the sweep."""


@dataclass
class StreamResult:
    name: str
    voices: str
    """'espeak' or 'real': which table rows it counts in."""
    chatter: bool
    duration: float
    cpu: float
    """CPU seconds of the whole process while the stream was streamed (every thread)."""
    segments: list[dict[str, Any]]
    streamed: list[Hearing]
    cut: list[Hearing | None]
    """decode() of each call segment, perfectly cut (None for other segments)."""


@dataclass
class JobResult:
    engine: str
    condition: str
    snr: float | None
    load_seconds: float
    peak_mb: float
    base_mb: float
    """Peak before the engine was built: the interpreter, numpy, the grammar."""
    streams: list[StreamResult]
    real_sets: dict[str, tuple[int, int]] = field(default_factory=dict)
    error: str | None = None


# ----- outcomes ------------------------------------------------------------------------------------------


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


SWEEPS: dict[str, tuple[float, ...]] = {
    "whisper": (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99),
    "pocketsphinx": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
}
"""Confidence thresholds of each engine's sweep: what min_confidence would give, from the same run."""
DEFAULT_SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def sure(h: Hearing, threshold: float | None = None) -> bool:
    """The engine's own verdict, or: at least this confident and not held uncertain for another reason."""
    if threshold is None:
        return not h.uncertain
    return bool(h.text) and not h.held and h.confidence >= threshold


def outcome(hearings: Sequence[Hearing], ball: int, threshold: float | None = None) -> tuple[str, int | None]:
    """What the procedure would take from these results for one said call, and the ball it would take.

    Wrong is sure and not what was said: another ball, or another meaning (a "bingo", a question) instead of
    the call; the ball is then the other one heard, or None.
    """
    taken = [h for h in hearings if sure(h, threshold)]
    certain = {b for h in taken for b in h.calls}
    stray = any(intent != "call" for h in taken for intent in h.intents)
    if certain - {ball}:
        return "wrong", min(certain - {ball})
    if stray:
        return "wrong", None
    if certain == {ball}:
        return "right", ball
    if hearings:
        return "uncertain", None
    return "missed", None


def fuse(first: tuple[str, int | None], second: tuple[str, int | None], ball: int) -> str:
    """Both hearings of one call: agreeing or a single sure hearing decides; disagreeing is uncertain. A sure
    meaning other than a call in either hearing is wrong whatever the other heard: the procedure acts on it."""
    if ("wrong", None) in (first, second):
        return "wrong"
    heard = [b for kind, b in (first, second) if kind in ("right", "wrong") and b is not None]
    if not heard:
        return "uncertain" if "uncertain" in (first[0], second[0]) else "missed"
    if len(set(heard)) > 1:
        return "uncertain"
    return "right" if heard[0] == ball else "wrong"


def _overlap(h: Hearing, seg: dict[str, Any]) -> float:
    return min(h.end, float(seg["end"])) - max(h.start, float(seg["start"]))


def assign(result: StreamResult) -> tuple[dict[int, list[Hearing]], list[Hearing]]:
    """Each streamed hearing to the segment it overlaps most; the rest heard in the gaps."""
    segments = result.segments
    assigned: dict[int, list[Hearing]] = {i: [] for i in range(len(segments))}
    gaps = []
    for h in result.streamed:
        best = max(range(len(segments)), key=lambda i: _overlap(h, segments[i]), default=None)
        if best is not None and _overlap(h, segments[best]) > 0:
            assigned[best].append(h)
        else:
            gaps.append(h)
    return assigned, gaps


# ----- one engine, voices and condition ----------------------------------------------------------------------


@dataclass
class Score:
    """One engine on one set of voices (espeak or real) in one condition."""

    engine: str
    voices: str
    condition: str
    snr: float | None = None
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
    cpu_seconds: float = 0.0
    audio_seconds: float = 0.0
    peak_mb: float = float("nan")
    base_mb: float = float("nan")
    load_seconds: float = float("nan")
    real_sets: dict[str, tuple[int, int]] = field(default_factory=dict)
    error: str | None = None
    thresholds: tuple[float, ...] = DEFAULT_SWEEP
    sweep_streamed: dict[float, Tally] = field(default_factory=dict)
    sweep_cut: dict[float, Tally] = field(default_factory=dict)
    sweep_chatter: dict[float, int] = field(default_factory=dict)

    @property
    def rtf(self) -> float:
        return self.cpu_seconds / self.audio_seconds if self.audio_seconds else float("nan")


def _cut_outcome(cut_hearing: Hearing | None, ball: int, threshold: float | None = None) -> tuple[str, int | None]:
    if cut_hearing is not None and not cut_hearing.text:
        return ("uncertain" if cut_hearing.uncertain else "missed", None)
    return outcome([cut_hearing] if cut_hearing is not None else [], ball, threshold)


def score_stream(result: StreamResult, score: Score) -> None:
    """Add one call stream's hearings to the score."""
    segments = result.segments
    assigned, gaps = assign(result)
    score.false_calls_gaps += sum(len(h.calls) for h in gaps if not h.uncertain)
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
        if seg["kind"] != "call":
            continue
        ball = int(seg["ball"])
        heard = outcome(assigned[i], ball)
        score.streamed.add(heard[0])
        if heard[0] == "right":
            # From the true end of speech (the generator knows it) to the result.
            score.latencies.extend(h.ready - seg["end"] for h in assigned[i] if not h.uncertain and ball in h.calls)
        cut_hearing = result.cut[i]
        cut = _cut_outcome(cut_hearing, ball)
        score.cut.add(cut[0])
        for t in score.thresholds:
            score.sweep_streamed.setdefault(t, Tally()).add(outcome(assigned[i], ball, t)[0])
            score.sweep_cut.setdefault(t, Tally()).add(_cut_outcome(cut_hearing, ball, t)[0])
        if seg["hearing"] == 1:
            pending[ball] = (heard, cut)
        elif seg["hearing"] == 2 and ball in pending:
            first_streamed, first_cut = pending.pop(ball)
            score.streamed_fused.add(fuse(first_streamed, heard, ball))
            score.cut_fused.add(fuse(first_cut, cut, ball))


def score_job(job: JobResult) -> list[Score]:
    """The job's rows: one per set of voices it streamed."""
    voices = list(dict.fromkeys(s.voices for s in job.streams)) or ["espeak"]
    scores = []
    for name in voices:
        score = Score(
            job.engine, name, job.condition, job.snr, error=job.error, thresholds=SWEEPS.get(job.engine, DEFAULT_SWEEP)
        )
        scores.append(score)
        if job.error:
            continue
        for stream in job.streams:
            if stream.voices != name:
                continue
            score.cpu_seconds += stream.cpu
            score.audio_seconds += stream.duration
            if not stream.chatter:
                score_stream(stream, score)
                continue
            score.chatter_minutes += stream.duration / 60.0
            score.false_calls_chatter += sum(len(h.calls) for h in stream.streamed if not h.uncertain)
            for t in score.thresholds:
                found = sum(len(h.calls) for h in stream.streamed if sure(h, t))
                score.sweep_chatter[t] = score.sweep_chatter.get(t, 0) + found
        score.peak_mb = job.peak_mb
        score.base_mb = job.base_mb
        score.load_seconds = job.load_seconds
    if scores and not job.error:
        scores[0].real_sets = job.real_sets
    return scores


# ----- tables ------------------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1f}"


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (nearest rank) of values; nan when there are none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(values: Sequence[float], q: float) -> str:
    value = quantile(values, q)
    return "-" if value != value else f"{1000 * value:.0f}"


def _per_minute(count: int, minutes: float) -> str:
    return f"{count / minutes:.2f}" if minutes else "-"


COLUMNS = (
    "engine",
    "voices",
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


def ordered(scores: Iterable[Score], conditions: Sequence[str] = ()) -> list[Score]:
    """Espeak rows, then real ones; within them condition by condition, the engines side by side."""
    rank = {name: i for i, name in enumerate(conditions)}
    return sorted(scores, key=lambda s: (s.voices != "espeak", rank.get(s.condition, len(rank))))


def table_rows(scores: Iterable[Score]) -> list[list[str]]:
    rows = []
    for s in scores:
        if s.error:
            rows.append([s.engine, s.voices, s.condition, s.error] + [""] * (len(COLUMNS) - 4))
            continue
        rows.append(
            [
                s.engine,
                s.voices,
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
                _per_minute(s.false_calls_chatter, s.chatter_minutes),
                _per_minute(s.false_calls_gaps, s.gap_minutes),
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


def real_sets_table(scores: Iterable[Score]) -> str:
    rows = []
    for s in scores:
        for name, (right, total) in s.real_sets.items():
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
                    s.voices,
                    s.condition,
                    f"{t:g}",
                    _pct(streamed.pct("right")),
                    _pct(streamed.pct("wrong")),
                    _pct(cut.pct("right")),
                    _pct(cut.pct("wrong")),
                    _per_minute(s.sweep_chatter.get(t, 0), s.chatter_minutes),
                ]
            )
    header = ("engine", "voices", "condition", "min confidence", "right %", "wrong %", "cut right %", "cut wrong %")
    return markdown((*header, "false calls/min chatter"), rows) if rows else ""


# ----- the accuracy targets -------------------------------------------------------------------------------------


RIGHT_TARGETS: dict[float | None, float] = {None: 99.5, 20.0: 99.0, 10.0: 95.0, 5.0: 85.0}
"""Calls right (%) by babble SNR (None: clean)."""
SURE_WRONG_TARGET = 0.5
FALSE_CALLS_TARGET = 0.1
LATENCY_P95_TARGET = 400.0
RTF_TARGET = 0.3
MEMORY_TARGET = 600.0


def _against(value: float, target: float, at_least: bool, digits: int = 1) -> str:
    if value != value:
        return "-"
    met = value >= target if at_least else value <= target
    return f"{value:.{digits}f} {'✓' if met else '✗'}"


def targets_table(scores: Iterable[Score]) -> str:
    """Each row against the accuracy targets: ✓ met, ✗ not met."""
    rows = []
    for s in scores:
        if s.error or s.snr not in RIGHT_TARGETS:
            continue
        target = RIGHT_TARGETS[s.snr]
        chatter = s.false_calls_chatter / s.chatter_minutes if s.chatter_minutes else float("nan")
        rows.append(
            [
                s.engine,
                s.voices,
                s.condition,
                f"{target:g}",
                _against(s.streamed.pct("right"), target, True),
                _against(s.streamed_fused.pct("right"), target, True),
                _against(s.streamed.pct("wrong"), SURE_WRONG_TARGET, False),
                _against(chatter, FALSE_CALLS_TARGET, False, 2),
                _against(1000 * quantile(s.latencies, 0.95), LATENCY_P95_TARGET, False, 0),
                _against(s.rtf, RTF_TARGET, False, 3),
                _against(s.peak_mb, MEMORY_TARGET, False, 0),
            ]
        )
    header = (
        "engine",
        "voices",
        "condition",
        "right target %",
        "right %",
        "fused right %",
        f"sure-and-wrong % (≤{SURE_WRONG_TARGET:g})",
        f"false calls/min chatter (≤{FALSE_CALLS_TARGET:g})",
        f"latency p95 ms (≤{LATENCY_P95_TARGET:g})",
        f"RTF (≤{RTF_TARGET:g})",
        f"peak MB (≤{MEMORY_TARGET:g})",
    )
    return markdown(header, rows) if rows else ""


# ----- calibration dump ------------------------------------------------------------------------------------------


def dump_lines(job: JobResult) -> Iterator[dict[str, Any]]:
    """One object per hearing (streamed and cut) with the truth it was heard over, for tuning the confidence."""
    for stream in job.streams:
        assigned, gaps = assign(stream)
        base = {"engine": job.engine, "condition": job.condition, "voices": stream.voices, "stream": stream.name}
        for i, seg in enumerate(stream.segments):
            truth = {
                "kind": seg["kind"],
                "said": seg["text"],
                "ball": seg["ball"],
                "saying": seg["hearing"],
                "intent": seg["intent"],
                "recordings": seg.get("recordings", []),
            }
            hearings = [("streamed", h) for h in assigned[i]]
            cut = stream.cut[i] if i < len(stream.cut) else None
            if cut is not None:
                hearings.append(("cut", cut))
            for mode, h in hearings:
                yield {**base, "mode": mode, **truth, **_heard(h, seg)}
        for h in gaps:
            truth = {"kind": "gap", "said": "", "ball": None, "saying": 0, "intent": None, "recordings": []}
            yield {**base, "mode": "streamed", **truth, **_heard(h, None)}


def _heard(h: Hearing, seg: dict[str, Any] | None) -> dict[str, Any]:
    if seg is not None and seg["kind"] == "call":
        right = h.calls == [seg["ball"]] and all(i == "call" for i in h.intents)
    elif seg is not None and seg["kind"] == "phrase":
        right = seg["intent"] in h.intents and not h.calls
    else:  # chatter and gaps: right when no call was heard
        right = not h.calls
    return {
        "start": round(h.start, 3),
        "end": round(h.end, 3),
        "text": h.text,
        "confidence": h.confidence if math.isfinite(h.confidence) else None,
        "uncertain": h.uncertain,
        "held": h.held,
        "calls": h.calls,
        "intents": h.intents,
        "right": right,
    }
