"""The scenario benchmark: every scenario of the procedure's library as hall audio, checked from what is heard.

Each script of tests/scenarios is rendered as stereo hall audio (caller left, floor and players right), mixed
with crowd babble at each condition, and run through `check` in-process with the plan of its `@game` lines (as
`--plan` gives it). Its violations (clause and code) are compared with those `check` finds on the script
itself; warnings separately. Nothing generated is kept: audio is rebuilt from a seed.
"""

from __future__ import annotations

import os
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assistant.audio import from_samples
from assistant.engines.base import Recognizer
from assistant.grammar import Grammar
from assistant.messages import Finding, GamePlan, Input, OccasionRecord, Prompt, Severity, Utterance
from assistant.rules import RulePack
from assistant.script import parse_plan, read_script
from assistant.settings import ROOT, Settings, load_settings, override
from lab.bench.accuracy import engine_options
from lab.bench.real import real_crowd
from lab.scenarios.check import check_recording, check_script, make_recognizers
from lab.scenarios.render import HELD_OUT_VOICES, TUNING_VOICES, HallVoices, Rendering, in_babble, render

SCENARIO_DIR = ROOT / "tests" / "scenarios"
QUICK = (
    "compliant-regular",
    "a3-not-repeated",
    "b8-numbers-not-read",
    "compliant-board-keys",
    "d-count-exceeded",
)
"""A few scenarios for `--quick`: a compliant game, a caller's, a floor's and a keyed board's findings."""


@dataclass(frozen=True)
class Condition:
    """Voices and babble level of one benchmark column."""

    voices: HallVoices
    snr_db: float | None
    babble: str = "espeak"
    """The crowd: 'espeak' (six espeak talkers), 'real' (human recordings only, as in a hall) or 'real-test' (the
    half of the human speakers the hall model never trained in)."""

    @property
    def name(self) -> str:
        level = "clean" if self.snr_db is None else f"{self.snr_db:g} dB"
        crowd = {"real": " real babble", "real-test": " real babble (test half)"}.get(self.babble, "")
        crowd = crowd if self.snr_db is not None else ""
        return f"{self.voices.name} {level}{crowd}"


CONDITIONS = (
    tuple(Condition(v, snr) for v in (TUNING_VOICES, HELD_OUT_VOICES) for snr in (None, 20.0, 10.0))
    + tuple(Condition(HELD_OUT_VOICES, snr, "real") for snr in (20.0, 10.0, 5.0))
    + tuple(Condition(HELD_OUT_VOICES, snr, "real-test") for snr in (20.0, 10.0, 5.0))
)
"""0-5: tuning and held-out voices, clean, 20 and 10 dB of espeak babble; 6-8: held-out voices in real-speech
babble at 20, 10 and 5 dB; 9-11: the same in the half of the real speakers the hall model's call head never
trained in (where the hall engine is judged)."""

DEFAULT_CONDITIONS = (0, 3, 1, 4, 2)
"""Clean first (fast), then 20 dB, then 10 dB; held-out voices at 10 dB only on request (`--condition 5`),
to keep a full run within about 25 minutes on two free cores."""

Key = tuple[str, str]


def _keys(findings: Sequence[Finding], severity: Severity) -> Counter[Key]:
    return Counter((f.clause, f.code) for f in findings if f.severity is severity)


def plans_of(path: Path) -> list[GamePlan]:
    """The hall's program of a scenario: its `@game` lines, as `check --plan` reads them."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip().startswith("@game")]
    return parse_plan("\n".join(lines), name=str(path))


@dataclass
class SessionResult:
    """One scenario under one condition."""

    scenario: str
    condition: str
    want: Counter[Key]
    got: Counter[Key]
    want_warnings: Counter[Key]
    got_warnings: Counter[Key]
    uncertain: int
    audio_seconds: float
    cpu_seconds: float
    wall_seconds: float
    marked: bool = False
    """The script marks hearings unsure (`caller?:`), gives confidences or sound-alikes (`(or N31)`): audio says
    them clearly, so the script's findings are not what the audio should give (tests/scenarios/README.md); not
    scored."""
    findings: list[str] = field(default_factory=list)
    heard: list[str] = field(default_factory=list)
    false_prompts: Counter[str] = field(default_factory=Counter)
    """Prompts by kind the audio's run said beyond those the script's run said."""
    false_wrong: int = 0
    """Of them, prompts that tell the caller something went wrong (`PromptSpec.wrong`): "Not called", "Say it
    again", "Was that a bingo?"..."""

    @property
    def exact(self) -> bool:
        return self.got == self.want

    @property
    def found(self) -> int:
        return sum((self.got & self.want).values())

    @property
    def false(self) -> int:
        return sum((self.got - self.want).values())

    @property
    def missed(self) -> int:
        return sum((self.want - self.got).values())


def _describe(f: Finding) -> str:
    why = "".join(f"\n            {d.time:7.1f} {d.role.value}: {d.heard!r}: {d.why}" for d in f.doubts)
    return f"{f.time:7.1f} {f.clause} {f.code} [{f.severity.value}] heard={f.heard!r}{why}"


def run_scenario(
    path: Path,
    condition: Condition,
    settings: Settings,
    grammar: Grammar,
    seed: int = 0,
    recognizers: Sequence[Recognizer] | None = None,
) -> SessionResult:
    """Render, mix, check from audio and from the script, and compare."""
    items: list[Input] = read_script(path, grammar)
    told: list[Prompt] = []
    expected: OccasionRecord = check_script(items, settings, grammar, told)
    wall, cpu = time.perf_counter(), time.process_time()
    rendering, samples = hall_audio(items, condition, seed)
    recording = from_samples(samples, 16000)
    result = check_recording(
        recording, plans_of(path), settings, grammar, keys=rendering.board_keys(), recognizers=recognizers
    )
    found = result.occasion.all_findings()
    want = expected.all_findings()
    heard = [
        f"{i.start:7.1f} {i.role.value:>6}: {i.text!r} {i.confidence:.2f}{' unsure' if i.uncertain else ''}"
        for i in result.inputs
        if isinstance(i, Utterance)
    ]
    rules = RulePack.load(settings.procedure.rules)
    beyond = Counter(p.kind for p in prompts_beyond(result.prompts, told, rules))
    wrong = {kind for kind, spec in rules.prompts.items() if spec.wrong}
    return SessionResult(
        scenario=path.stem,
        condition=condition.name,
        want=_keys(want, Severity.VIOLATION),
        got=_keys(found, Severity.VIOLATION),
        want_warnings=_keys(want, Severity.WARNING),
        got_warnings=_keys(found, Severity.WARNING),
        uncertain=sum(1 for f in found if f.severity is Severity.UNCERTAIN),
        audio_seconds=recording.duration,
        cpu_seconds=time.process_time() - cpu,
        wall_seconds=time.perf_counter() - wall,
        marked=any(isinstance(i, Utterance) and (i.uncertain or i.confidence < 1.0 or i.could_be) for i in items),
        findings=[_describe(f) for f in found],
        heard=heard,
        false_prompts=beyond,
        false_wrong=sum(n for kind, n in beyond.items() if kind in wrong),
    )


def hall_audio(items: Sequence[Input], condition: Condition, seed: int) -> tuple[Rendering, np.ndarray]:
    """A script rendered in the condition's voices and mixed with its crowd: the audio a session is checked from."""
    rendering = render(items, condition.voices, seed=seed)
    crowd = None
    if condition.babble.startswith("real") and condition.snr_db is not None:
        crowd = real_crowd(random.Random(seed + 2), part="test" if condition.babble == "real-test" else "all")
    return rendering, in_babble(rendering, condition.snr_db, seed=seed + 1, crowd=crowd)


def prompts_beyond(heard: Sequence[Prompt], told: Sequence[Prompt], rules: RulePack) -> list[Prompt]:
    """The prompts of the audio's run that the script's run has no match for, in order. A question said in place of
    a prompt (`PromptSpec.stands_for`: "Did you say B seven twice?" for "Say it again", "Was that a bingo?" for
    "Floor: read the card") matches it: the same matter, asked instead of told. Matched in order within a matter."""

    def matter(kind: str) -> str:
        spec = rules.prompts.get(kind)
        return spec.stands_for if spec is not None and spec.stands_for is not None else kind

    owed = Counter(matter(p.kind) for p in told)
    beyond = []
    for prompt in heard:
        if owed[matter(prompt.kind)] > 0:
            owed[matter(prompt.kind)] -= 1
        else:
            beyond.append(prompt)
    return beyond


# ----- worker processes: each keeps one pair of recognizers, as a hall's microphones keep running -----

_WORKER: dict[str, object] = {}


Options = tuple[tuple[str, object], ...]
"""--option pairs, as `python -m lab.bench` takes them ('settings.head_writes', True)."""


def _work(task: tuple[str, int, int, str | None, Options]) -> SessionResult:
    path, condition_index, seed, engine, options = task
    if "grammar" not in _WORKER:
        _WORKER["settings"] = override(load_settings(), "recognizer", engine=engine)
        _WORKER["grammar"] = Grammar.load(_WORKER["settings"].recognizer.grammar)  # type: ignore[attr-defined]
    settings: Settings = _WORKER["settings"]  # type: ignore[assignment]
    grammar: Grammar = _WORKER["grammar"]  # type: ignore[assignment]
    if "recognizers" not in _WORKER:
        chosen = engine_options(settings.recognizer.engine, options)
        _WORKER["recognizers"] = make_recognizers(2, settings, grammar, chosen)
    recognizers: list[Recognizer] = _WORKER["recognizers"]  # type: ignore[assignment]
    return run_scenario(Path(path), CONDITIONS[condition_index], settings, grammar, seed, recognizers)


@dataclass
class Row:
    condition: str
    results: list[SessionResult]

    def cells(self) -> list[str]:
        r = [x for x in self.results if not x.marked]
        n = max(1, len(r))
        exact = sum(x.exact for x in r)
        planted = sum(sum(x.want.values()) for x in r)
        found = sum(x.found for x in r)
        false = sum(x.false for x in r)
        warn_exact = sum(x.got_warnings == x.want_warnings for x in r)
        uncertain = sum(x.uncertain for x in r)
        beyond: Counter[str] = sum((x.false_prompts for x in r), Counter())
        kinds = ", ".join(f"{kind} {n}" for kind, n in beyond.most_common())
        audio = sum(x.audio_seconds for x in self.results)
        cpu = sum(x.cpu_seconds for x in self.results)
        marked = [x for x in self.results if x.marked]
        return [
            self.condition,
            f"{exact}/{len(r)} ({100 * exact / n:.0f}%)",
            f"{found}/{planted}",
            str(false),
            f"{warn_exact}/{len(r)}",
            str(uncertain),
            f"{sum(x.false_wrong for x in r)} / {sum(beyond.values())}" + (f" ({kinds})" if kinds else ""),
            f"{len(marked)} ({sum(x.false for x in marked)} extra)",
            f"{audio / 60:.1f}",
            f"{cpu / max(audio, 1e-9):.3f}",
        ]


HEADER = [
    "condition",
    "sessions exact",
    "planted found",
    "false violations",
    "warnings exact",
    "uncertain findings",
    "false prompts: wrong / all (by kind)",
    "marked, not scored",
    "audio min",
    "CPU RTF",
]


def benchmark(
    scenarios: Sequence[Path],
    conditions: Sequence[int],
    jobs: int = 2,
    seed: int = 0,
    details: bool = False,
    out: object = sys.stdout,
    engine: str | None = None,
    options: Options = (),
) -> list[Row]:
    """Every scenario under every condition; prints progress on stderr and returns the table rows. `engine`: the
    recognizer (default: the configured one); `options`: its settings changed, as `bench accuracy --option`."""
    place = {p: i for i, p in enumerate(scenario_paths())}  # a scenario's audio is the same run alone or in all
    tasks = [(str(p), c, seed + place.get(p, i), engine, options) for c in conditions for i, p in enumerate(scenarios)]
    started = time.perf_counter()
    results: list[SessionResult] = []
    rows: list[Row] = []
    print("| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER), file=out, flush=True)  # type: ignore[call-overload]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for done, result in enumerate(pool.map(_work, tasks, chunksize=1), 1):
            results.append(result)
            mark = "ok" if result.exact else f"DIFF want {dict(result.want)} got {dict(result.got)}"
            print(
                f"[{done}/{len(tasks)} {time.perf_counter() - started:5.0f}s] {result.condition:>16} "
                f"{result.scenario}{' (marked)' if result.marked else ''}: {mark}",
                file=sys.stderr,
                flush=True,
            )
            if details and (not result.exact or result.false_wrong):
                said = [f"  prompts beyond the script's: {dict(result.false_prompts)}"] if result.false_prompts else []
                for line in [*result.findings, *said, "  heard:", *result.heard]:
                    print("      " + line, file=sys.stderr)
            if done % len(scenarios) == 0:  # a condition is complete: its row now
                row = Row(result.condition, [r for r in results if r.condition == result.condition])
                rows.append(row)
                print("| " + " | ".join(row.cells()) + " |", file=out, flush=True)  # type: ignore[call-overload]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"\n{len(scenarios)} scenarios x {len(conditions)} conditions in {time.perf_counter() - started:.0f} s wall "
        f"({jobs} processes, {os.cpu_count()} cores); peak worker memory {peak:.0f} MB",
        file=out,  # type: ignore[call-overload]
    )
    return rows


def scenario_paths(names: Sequence[str] = ()) -> list[Path]:
    paths = sorted(SCENARIO_DIR.glob("*.txt"))
    if names:
        chosen = [p for p in paths if p.stem in names]
        unknown = set(names) - {p.stem for p in chosen}
        if unknown:
            raise ValueError(f"no such scenario: {', '.join(sorted(unknown))}")
        return chosen
    return paths
