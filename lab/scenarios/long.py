"""A long occasion (several games, 30 minutes or more) as one hall recording, checked chunk by chunk.

The occasion is generated (never committed): compliant regular games of many balls, rendered game by game and
appended to a stereo WAV in a temporary directory. The check then runs in a fresh process, which reads the
WAV with `FileSource`, draws a progress bar on stderr and samples its memory; the table gives the real-time
factor, memory over time and the findings next to those of the occasion's own script.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.audio import FileSource
from assistant.grammar import Grammar
from assistant.messages import Ball, Input, OccasionRecord, Severity
from assistant.progress import Progress, rss_mb, with_progress
from assistant.script import parse_plan, parse_script
from assistant.settings import ROOT, Settings, load_settings
from assistant.store import Store, occasion_record
from lab.scenarios.check import check_chunks, check_script
from lab.scenarios.devices import Device, VirtualHall
from lab.scenarios.render import TUNING_VOICES, HallVoices, in_babble, render

BALL_SECONDS = 12.0
"""A ball every 12 s, its second saying 3 s later (the pace the scenario library is written at)."""


def game_script(balls: Sequence[Ball], grammar: Grammar) -> str:
    """One compliant regular game: the last-ball status, every call twice, a bingo on the last five calls,
    the card read, the winning numbers read by the floor, the verdict, the question, the close."""
    lines = ["@game type=regular last_ball_required=yes", "0 caller: last ball called is required"]
    t = 6.0
    for ball in balls:
        lines += [f"{t:g} caller: {grammar.spoken(ball)}", f"{t + 3:g} caller: {grammar.spoken(ball)}"]
        t += BALL_SECONDS
    t -= 5.0
    winning = ", ".join(grammar.spoken(b) for b in balls[-5:])
    lines += [
        f"{t:g} player: bingo",
        f"{t + 6:g} floor: manufacturer one four two serial number four seven two nine one",
        f"{t + 16:g} floor: {winning}",
        f"{t + 26:g} caller: valid bingo",
        f"{t + 30:g} caller: are there any other bingos?",
        f"{t + 38:g} caller: this game is completed",
    ]
    return "\n".join(lines) + "\n"


def occasion_games(minutes: float, seed: int, grammar: Grammar, balls_per_game: int = 35) -> list[str]:
    """Game scripts, each starting at 0, that together last at least `minutes`."""
    rng = random.Random(seed)
    games: list[str] = []
    total = 0.0
    while total < minutes * 60:
        balls = [Ball(n) for n in rng.sample(range(1, 76), balls_per_game)]
        games.append(game_script(balls, grammar))
        total += balls_per_game * BALL_SECONDS + 45.0
    return games


@dataclass
class Occasion:
    wav: Path
    script_inputs: list[Input]
    plans_text: str
    duration: float


def write_occasion(
    path: Path,
    minutes: float,
    grammar: Grammar,
    seed: int = 0,
    snr_db: float | None = 20.0,
    voices: HallVoices = TUNING_VOICES,
    balls_per_game: int = 35,
) -> Occasion:
    """Render the occasion game by game into one stereo WAV (memory: one game at a time)."""
    offset = 0.0
    script_lines: list[str] = []
    plans: list[str] = []
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(16000)
        for number, text in enumerate(occasion_games(minutes, seed, grammar, balls_per_game)):
            items = parse_script(text, grammar, name=f"game {number + 1}")
            rendering = render(items, voices, seed=seed + number)
            samples = in_babble(rendering, snr_db, seed=seed + 1000 + number)
            w.writeframes(samples.astype("<i2").tobytes())
            for spoken in rendering.spoken:  # the script of what was said, at its audio times
                script_lines.append(f"{offset + spoken.start:.2f} {spoken.role.value}: {spoken.text}")
            plans.append(text.splitlines()[0])
            script_lines.insert(len(script_lines) - len(rendering.spoken), plans[-1])
            offset += rendering.duration
    inputs = parse_script("\n".join(script_lines) + "\n", grammar, name="occasion")
    return Occasion(path, inputs, "\n".join(plans) + "\n", offset)


@dataclass
class LongFigures:
    """What the check of the long recording measured (in the child process)."""

    duration: float
    wall: float
    cpu: float
    peak_mb: float
    end_mb: float
    games: int
    samples: list[tuple[float, float, float]]
    """(audio seconds done, wall seconds, RSS MB) at each redraw of the progress bar."""
    findings: list[tuple[str, str, str, float, str]]
    """(clause, code, severity, audio time, words heard)."""

    def rss_at(self, share: float) -> float:
        return next((rss for done, _, rss in self.samples if done >= self.duration * share), self.end_mb)


def _child(wav: str, plans_text: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    settings = load_settings()
    grammar = Grammar.load(settings.recognizer.grammar)
    stream = FileSource(Path(wav))
    progress = Progress(stream.duration)
    wall, cpu = time.perf_counter(), time.process_time()
    result = check_chunks(
        with_progress(stream, progress),
        stream.channels,
        parse_plan(plans_text),
        settings,
        grammar,
        stream.now,
    )
    out.put(
        LongFigures(
            duration=stream.duration,
            wall=time.perf_counter() - wall,
            cpu=time.process_time() - cpu,
            peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            end_mb=rss_mb(),
            games=len(result.occasion.games),
            samples=progress.samples,
            findings=[
                (f.clause, f.code, f.severity.value, round(f.time, 1), f.heard) for f in result.occasion.all_findings()
            ],
        )
    )


def long_benchmark(minutes: float = 30.0, seed: int = 0, snr_db: float | None = 20.0) -> LongFigures:
    """Generate, check in a fresh process, print the table; returns the measured figures."""
    settings: Settings = load_settings()
    grammar = Grammar.load(settings.recognizer.grammar)
    with tempfile.TemporaryDirectory(prefix="bingo-long-") as tmp:
        made = time.perf_counter()
        occasion = write_occasion(Path(tmp) / "occasion.wav", minutes, grammar, seed, snr_db)
        print(
            f"rendered {occasion.duration / 60:.1f} min in {time.perf_counter() - made:.0f} s: {occasion.wav}",
            file=sys.stderr,
        )
        context = multiprocessing.get_context("spawn")
        queue: multiprocessing.Queue[LongFigures] = context.Queue()
        child = context.Process(target=_child, args=(str(occasion.wav), occasion.plans_text, queue))
        child.start()
        figures = queue.get()
        child.join()
    want = check_script(occasion.script_inputs, settings, grammar).all_findings()
    want_v = sum(1 for f in want if f.severity is Severity.VIOLATION)
    got_v = sum(1 for f in figures.findings if f[2] == "violation")
    unsure = sum(1 for f in figures.findings if f[2] == "uncertain")
    d = figures.duration
    quarters = " / ".join(f"{figures.rss_at(q):.0f}" for q in (0.25, 0.5, 0.75))
    print(
        "| audio | games | wall RTF | CPU RTF | RSS at 25/50/75% | RSS end | peak RSS | violations (script) "
        "| violations (audio) | uncertain |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    print(
        f"| {d / 60:.1f} min | {figures.games} | {figures.wall / d:.3f} | {figures.cpu / d:.3f} | {quarters} MB "
        f"| {figures.end_mb:.0f} MB | {figures.peak_mb:.0f} MB | {want_v} | {got_v} | {unsure} |"
    )
    for clause, code, severity, at, heard in figures.findings:
        print(f"  {at:8.1f} {clause} {code} [{severity}] heard={heard!r}")
    return figures


@dataclass
class LiveFigures:
    """What `listen` did over a long occasion played into the virtual hall's devices in real time."""

    duration: float
    wall: float
    cpu: float
    """CPU seconds of the `listen` process (every thread: both channels' recognizers)."""
    memory: list[tuple[float, float]]
    """(seconds since the occasion began playing, RSS MB of `listen`), every `SAMPLE_EVERY` seconds."""
    latencies: list[tuple[float, float]]
    """(end of speech, seconds from it to the verdict), both on the device clock, per hearing."""
    told: list[str]
    """What `listen` said about the devices ("audio: ..." lines)."""
    findings: list[tuple[str, str, str, float, str]]
    games: int
    calls: int

    def growth_per_hour(self, settle: float = 300.0) -> float:
        """RSS growth in MB per hour after the first `settle` seconds (least squares)."""
        points = [(t, mb) for t, mb in self.memory if t >= settle] or self.memory
        if len(points) < 2:
            return 0.0
        t, mb = np.array(points).T
        return float(np.polyfit(t / 3600.0, mb, 1)[0])

    def hours(self) -> list[str]:
        """Hour by hour, when the occasion ran longer than one: hearings, latency p50 / p95, and `listen`'s memory
        at the hour's first and last sample (the first hour holds the warm-up: prompts and yardsticks are made
        as each step first comes)."""
        if self.duration <= 3600:
            return []
        found = (hour_line(h, self.latencies, self.memory) for h in range(int(self.duration // 3600) + 1))
        return [line for line in found if line]


def hour_line(hour: int, latencies: Sequence[tuple[float, float]], memory: Sequence[tuple[float, float]]) -> str:
    """One hour (0: the first) of a long run: its hearings, latency p50 / p95 and `listen`'s memory at its first and
    last sample; '' if nothing was heard in it."""
    inside = [x for end, x in latencies if hour * 3600 <= end < (hour + 1) * 3600]
    if not inside:
        return ""
    q50, q95 = np.percentile(inside, [50, 95])
    line = f"hour {hour + 1}: {len(inside)} hearings, latency p50 {q50:.2f} s, p95 {q95:.2f} s"
    rss = [mb for t, mb in memory if hour * 3600 <= t < (hour + 1) * 3600]
    if rss:
        line += f", RSS {rss[0]:.0f} -> {rss[-1]:.0f} MB"
    return line


def _latencies(timings: Path) -> list[tuple[float, float]]:
    """(end of speech, seconds to the verdict) of each hearing `listen --timings` has written so far (a line still
    being written is left for the next read)."""
    if not timings.is_file():
        return []
    rows = []
    for line in timings.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            rows.append((row["end"], row["verdict"] - row["end"]))
    return rows


SAMPLE_EVERY = 10.0
"""Seconds between two samples of `listen`'s memory and CPU."""


def _proc(pid: int) -> tuple[float, float]:
    """(RSS MB, CPU seconds) of a process, from /proc."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        rss = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:")), 0.0)
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def long_live(minutes: float = 30.0, seed: int = 0, snr_db: float | None = 20.0) -> LiveFigures:
    """The occasion played in real time into a virtual hall's two microphones (`devices.VirtualHall`), followed
    by `bingo-assistant listen` with the default engine; prints the table and returns the figures."""
    settings: Settings = load_settings()
    grammar = Grammar.load(settings.recognizer.grammar)
    with tempfile.TemporaryDirectory(prefix="bingo-long-live-") as folder:
        tmp = Path(folder)
        made = time.perf_counter()
        occasion = write_occasion(tmp / "occasion.wav", minutes, grammar, seed, snr_db)
        print(f"rendered {occasion.duration / 60:.1f} min in {time.perf_counter() - made:.0f} s", file=sys.stderr)
        plan, db, timings = tmp / "plan.txt", tmp / "live.db", tmp / "timings.jsonl"
        plan.write_text(occasion.plans_text, encoding="utf-8")
        noise = -80.0  # a microphone's own noise
        devices = [
            Device("caller_mic", 1, "caller microphone", noise),
            Device("floor_mic", 1, "floor microphone", noise),
        ]
        args = ["--caller-device", "caller_mic", "--floor-device", "floor_mic", "--plan", str(plan), "--db", str(db)]
        with VirtualHall(tmp / "hall", devices) as hall:
            listen = subprocess.Popen(
                [sys.executable, "-m", "assistant", "listen", *args, "--voice", "silent", "--timings", str(timings)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env=dict(os.environ, **hall.env),
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
            assert listen.stderr is not None
            said: list[str] = []
            while not said or not said[-1].startswith("listening:"):
                line = listen.stderr.readline()
                if not line:
                    raise RuntimeError("listen ended before it listened:\n" + "".join(said))
                said.append(line)
            reader = threading.Thread(target=lambda: said.extend(listen.stderr or []), daemon=True)
            reader.start()

            def channel(c: int) -> Iterator[np.ndarray]:
                return (step[c].samples for step in FileSource(occasion.wav, chunk_seconds=0.5).steps())

            started, cpu0 = time.monotonic(), _proc(listen.pid)[1]
            players = [hall.play_blocks("caller_mic", channel(0)), hall.play_blocks("floor_mic", channel(1))]
            memory: list[tuple[float, float]] = []
            hours_told = 0
            while any(p.poll() is None for p in players):
                time.sleep(SAMPLE_EVERY)
                rss, cpu = _proc(listen.pid)
                at = time.monotonic() - started
                memory.append((at, rss))
                if at >= (hours_told + 1) * 3600:  # each hour told as it ends: a run cut short keeps its hours
                    told = hour_line(hours_told, _latencies(timings), memory)
                    print(f"\r{told}, CPU {(cpu - cpu0) / at:.2f}x real time so far", file=sys.stderr, flush=True)
                    hours_told += 1
                print(
                    f"\r{at / 60:6.1f}/{occasion.duration / 60:.1f} min  RSS {rss:.0f} MB  "
                    f"CPU {(cpu - cpu0) / max(at, 1e-9):.2f}x real time",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(5.0)  # the last words decoded
            _, cpu = _proc(listen.pid)
            wall = time.monotonic() - started
            listen.send_signal(signal.SIGINT)
            listen.wait(timeout=300)
            reader.join(timeout=10)
            print(file=sys.stderr)
        record = _record(db)
        rows = [json.loads(line) for line in timings.read_text(encoding="utf-8").splitlines() if line.strip()]
    figures = LiveFigures(
        duration=occasion.duration,
        wall=wall,
        cpu=cpu - cpu0,
        memory=memory,
        latencies=[(r["end"], r["verdict"] - r["end"]) for r in rows],
        told=[line.rstrip() for line in said if line.startswith("audio: ")],
        findings=[(f.clause, f.code, f.severity.value, round(f.time, 1), f.heard) for f in record.all_findings()],
        games=len(record.games),
        calls=sum(len(g.calls) for g in record.games),
    )
    _live_table(figures, occasion, settings, grammar)
    return figures


def _record(db: Path) -> OccasionRecord:
    with Store.open(db, readonly=True) as store:
        newest = store.latest_occasion()
        if newest is None:
            raise RuntimeError(f"listen recorded no occasion in {db}")
        return occasion_record(store, newest)


def _live_table(figures: LiveFigures, occasion: Occasion, settings: Settings, grammar: Grammar) -> None:
    want = check_script(occasion.script_inputs, settings, grammar)
    said_calls = sum(len(g.calls) for g in want.games)
    want_v = sum(1 for f in want.all_findings() if f.severity is Severity.VIOLATION)
    got_v = sum(1 for f in figures.findings if f[2] == "violation")
    unsure = sum(1 for f in figures.findings if f[2] == "uncertain")
    delays = np.array([d for _, d in figures.latencies]) if figures.latencies else np.zeros(1)
    p50, p95 = np.percentile(delays, [50, 95])
    d = figures.duration
    dropped = sum(1 for line in figures.told if "behind" in line or "delivered nothing" in line)
    print(
        "| audio | games (script) | calls heard (script) | CPU, x real time | RSS first / last sample | RSS growth "
        "per hour | latency p50 / p95 | device trouble told | violations (script) | violations (live) | uncertain |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    first, last = (figures.memory[0][1], figures.memory[-1][1]) if figures.memory else (0.0, 0.0)
    print(
        f"| {d / 60:.1f} min | {figures.games} ({len(want.games)}) | {figures.calls} ({said_calls}) "
        f"| {figures.cpu / d:.3f} | {first:.0f} / {last:.0f} MB | {figures.growth_per_hour():+.1f} MB "
        f"| {p50:.2f} / {p95:.2f} s | {len(figures.told)} ({dropped} gaps) | {want_v} | {got_v} | {unsure} |"
    )
    for line in figures.hours():
        print(f"  {line}")
    for line in figures.told:
        print(f"  {line}")
    for clause, code, severity, at, heard in figures.findings:
        print(f"  {at:8.1f} {clause} {code} [{severity}] heard={heard!r}")
