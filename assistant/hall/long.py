"""A long occasion (several games, 30 minutes or more) as one hall recording, checked chunk by chunk.

The occasion is generated (never committed): compliant regular games of many balls, rendered game by game and
appended to a stereo WAV in a temporary directory. The check then runs in a fresh process, which reads the
WAV with `WavStream`, draws a progress bar on stderr and samples its memory; the table gives the real-time
factor, memory over time and the findings next to those of the occasion's own script.
"""

from __future__ import annotations

import multiprocessing
import random
import resource
import sys
import tempfile
import time
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..grammar import Grammar
from ..messages import Ball, Input, Severity
from ..script import parse_plan, parse_script
from ..settings import Settings, load_settings
from .check import check_chunks, check_script
from .render import TUNING_VOICES, HallVoices, in_babble, render
from .stream import Progress, WavStream, rss_mb, with_progress

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
    stream = WavStream(Path(wav))
    progress = Progress(stream.duration)
    wall, cpu = time.perf_counter(), time.process_time()
    result = check_chunks(
        with_progress(stream, progress),
        stream.channels,
        parse_plan(plans_text),
        settings,
        grammar,
        lambda: stream.seconds_read,
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
