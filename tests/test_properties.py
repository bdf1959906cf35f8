"""Sessions nobody wrote: transcripts generated and mutated (shuffled, repeated and dropped lines, calls naming no
ball, unknown words, missing phrases, unsure hearings, random programs and board keys) never crash `check`; it
exits 0 or 1 with the JSON report (2 with one line for a script it cannot read), and no violation rests on an
unsure hearing. Real grammar, rule pack, machine and command line; hypothesis draws, derandomized."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from assistant.__main__ import main
from assistant.grammar import DEFAULT_GRAMMAR, Grammar
from assistant.messages import Ball, Finding, Input, OccasionRecord, Severity, Utterance
from assistant.procedure import RulePack, check_inputs
from assistant.report import render_json
from assistant.script import parse_script
from assistant.settings import ROOT

pytestmark = pytest.mark.filterwarnings(
    # On a failure hypothesis's pytest plugin imports libcst, whose import of mypy_extensions warns: report the
    # failure, not an internal error.
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
)
GRAMMAR = Grammar.load()
RULES = RulePack.load()
SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.txt"))
SPOKEN = re.compile(r"^\S+\s+(caller|floor|player)[^:]*:\s*(.+?)(?:\s*\(or [^)]*\))?$")
"""A spoken line's role and words (a call's `(or N31)` left off: it is drawn again for the words as mutated)."""


def _scenario_lines(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = SPOKEN.match(line.split("#", 1)[0].strip())
        if match:
            out.append((match[1], match[2]))
    return out


BODIES = [_scenario_lines(p) for p in SCENARIOS]
"""The spoken lines of every scenario: the sessions mutated."""
CORPUS = yaml.safe_load((DEFAULT_GRAMMAR.parent / "phrasings.yaml").read_text(encoding="utf-8"))
WORDS = sorted(
    {w for body in BODIES for _, w in body}
    | {way["words"] for group in CORPUS["phrases"] for way in group["ways"]}
    | {GRAMMAR.spoken(Ball(n)) for n in range(1, 76)}
    | {"B thirty two", "O five", "N sixty", "G seventy five", "I five", "B ninety", "O zero"}
)
"""Everything the hall says: scenario lines, the phrasing corpus, every call, calls naming no ball."""
UNKNOWN = ["hello", "whoa", "folks", "uh", "the", "ninety nine", "seventeen", "is", "not", "zzz", "bingoo", "eleventy"]
NUMBERS = GRAMMAR.units[1:] + GRAMMAR.teens + list(GRAMMAR.tens)
TYPES = ["regular", "limited", "winner-take-all", "cover-all"]


def mutate(rng: random.Random, words: str) -> str:
    """One slip of the tongue or of the ear: a word dropped, swapped, added, a number or a letter changed."""
    tokens = words.split()
    roll = rng.random()
    if roll < 0.15 and len(tokens) > 1:
        del tokens[rng.randrange(len(tokens))]
    elif roll < 0.3 and len(tokens) > 1:
        i = rng.randrange(len(tokens) - 1)
        tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
    elif roll < 0.45:
        tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(UNKNOWN))
    elif roll < 0.65:
        numbered = [i for i, t in enumerate(tokens) if t.lower().strip(",.?!") in NUMBERS]
        if numbered:
            tokens[rng.choice(numbered)] = rng.choice(NUMBERS)
    elif roll < 0.75 and tokens:
        tokens[0] = rng.choice("BINGO")
    return " ".join(tokens) or "uh"


def plan_line(rng: random.Random) -> str:
    parts = [f"@game type={rng.choice(TYPES)}"]
    if rng.random() < 0.4:
        parts.append(f"balls={rng.randint(1, 75)}")
    if rng.random() < 0.4:
        parts.append(f"cards_sold={rng.randint(0, 400)}")
    if rng.random() < 0.4:
        parts.append(f"prize={rng.choice([0, 100, 300, 600, 1200, 2500, 2600])}")
    if rng.random() < 0.7:
        parts.append(f"last_ball_required={rng.choice(['yes', 'no'])}")
    return " ".join(parts)


def transcript(rng: random.Random, size: int = 40) -> str:
    """A session in the transcript script format: a scenario (or nothing) mutated, with noise around it."""
    lines = list(rng.choice([*BODIES, []]))
    if rng.random() < 0.3:
        rng.shuffle(lines)
    lines = [line for line in lines if rng.random() > 0.15]  # missing phrases
    for _ in range(rng.randint(0, 12)):  # repeated calls and lines
        if lines:
            at = rng.randrange(len(lines))
            lines.insert(at, lines[at])
    for _ in range(rng.randint(0, 12)):  # anything the hall says, by anyone
        role = rng.choices(["caller", "floor", "player"], [6, 3, 1])[0]
        lines.insert(rng.randint(0, len(lines)), (role, rng.choice(WORDS)))
    lines = [(role, mutate(rng, words) if rng.random() < 0.25 else words) for role, words in lines][:size]
    out, t = [], 0.0
    if rng.random() < 0.8:
        out.append(plan_line(rng))
    for role, words in lines:
        t += rng.choice([0.0, 0.5, 1.0, 2.5, 3.0, 6.0, 9.0, 12.0, 20.0])
        roll = rng.random()
        if roll < 0.05:
            out.append(plan_line(rng))
        elif roll < 0.12:
            out.append(f"{t:.1f} board: {Ball(rng.randint(1, 75))}")
        elif roll < 0.15:
            out.append(f"{t:.1f} tick")
        mark = ""
        if rng.random() < 0.25:
            mark = rng.choice(["?", f"({rng.choice([0.1, 0.3, 0.45, 0.49])})", f"({rng.choice([0.3, 0.8])})?"])
        elif rng.random() < 0.1:
            mark = f"({rng.choice([0.5, 0.6, 0.9])})"
        parsed = GRAMMAR.parse(words)
        if [m.intent for m in parsed.meanings] == ["call"] and rng.random() < 0.15:
            words += f" (or {Ball(rng.randint(1, 75))})"  # a sound-alike its hearing left room for
        out.append(f"{t:.1f} {role}{mark}: {words}")
    if rng.random() < 0.3:
        out.append(f"{t + rng.choice([0.0, 5.0, 60.0]):.1f} end")
    return "\n".join(out) + "\n"


def unsure(item: Input) -> bool:
    return isinstance(item, Utterance) and (item.uncertain or item.confidence < 0.5)


def rests_on_unsure_hearings(finding: Finding, items: Sequence[Input]) -> bool:
    """The hearings a finding names (its words, heard at or before it) were all unsure."""
    if not finding.heard:
        return False
    said = [
        i
        for i in items
        if isinstance(i, Utterance)
        and i.start <= finding.time
        and (i.text == finding.heard or any(m.words == finding.heard for m in i.meanings))
    ]
    return bool(said) and all(unsure(i) for i in said)


def check_invariants(text: str) -> OccasionRecord:
    items = parse_script(text, GRAMMAR)
    occasion, _ = check_inputs(items, RULES, GRAMMAR)
    json.loads(json.dumps(occasion.to_json()))
    for finding in occasion.all_findings():
        if finding.severity is Severity.VIOLATION:
            assert not rests_on_unsure_hearings(finding, items), finding
    doubted = [dataclasses.replace(i, uncertain=True) if isinstance(i, Utterance) else i for i in items]
    violations = [
        f for f in check_inputs(doubted, RULES, GRAMMAR)[0].all_findings() if f.severity is Severity.VIOLATION
    ]
    assert violations == []  # every hearing unsure: nothing is a violation
    return occasion


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generated")


def game_heard(text: str) -> bool:
    """The session holds a game to check: the caller calls a ball (a mis-call too), sure or unsure."""
    return any(
        isinstance(i, Utterance)
        and i.role.value == "caller"
        and any(m.intent in ("call", "bad-call") for m in i.meanings)
        for i in parse_script(text, GRAMMAR)
    )


def run_check(path: Path) -> tuple[int, str, str]:
    """`bingo-assistant check PATH --json`, in this process."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", str(path), "--json"])
    return code, out.getvalue(), err.getvalue()


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # a failing session is printed whole; shrinking random draws is slow
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(rng=st.randoms(use_true_random=False))
def test_generated_sessions_never_crash_and_never_rest_a_violation_on_an_unsure_hearing(
    rng: random.Random, folder: Path
) -> None:
    text = transcript(rng)
    note(text)
    occasion = check_invariants(text)
    path = folder / "session.txt"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_check(path)
    if not game_heard(text):  # nothing heard is never compliant: one line, exit 2, no report
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "heard" in err, err
        return
    sure = [f for f in occasion.all_findings() if f.severity is not Severity.UNCERTAIN]
    assert (code, err) == (1 if sure else 0, ""), err
    assert json.loads(out) == json.loads(render_json(occasion))  # the report of the command is the procedure's


def test_the_generator_makes_what_it_promises() -> None:
    """The sessions drawn hold unsure hearings, calls naming no ball, unknown words and violations."""
    rng = random.Random(11)
    texts = [transcript(rng) for _ in range(60)]
    items = [i for text in texts for i in parse_script(text, GRAMMAR)]
    assert sum(unsure(i) for i in items) > 100
    assert any(isinstance(i, Utterance) and any(m.intent == "bad-call" for m in i.meanings) for i in items)
    assert sum(isinstance(i, Utterance) and bool(i.unknown) for i in items) > 50
    assert sum(isinstance(i, Utterance) and bool(i.could_be) for i in items) > 20
    findings = [
        f for text in texts for f in check_inputs(parse_script(text, GRAMMAR), RULES, GRAMMAR)[0].all_findings()
    ]
    assert {f.severity for f in findings} == set(Severity)
    assert any(rests_on_unsure_hearings(f, items) for f in findings if f.severity is Severity.UNCERTAIN)


def test_the_command_line_on_generated_sessions(tmp_path: Path) -> None:
    """The real command, as a process: exit 0 or 1 with the JSON report; 2 with one line for a broken script."""
    rng = random.Random(2026)
    for n in range(4):
        path = tmp_path / f"session-{n}.txt"
        text = transcript(rng)
        path.write_text(text, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "assistant", "check", path, "--json"], capture_output=True, text=True, cwd=ROOT
        )
        if not game_heard(text):
            assert result.returncode == 2 and result.stdout == "" and len(result.stderr.splitlines()) == 1
            continue
        assert result.returncode in (0, 1), result.stderr
        assert json.loads(result.stdout) == json.loads(render_json(check_invariants(text)))
    shuffled = tmp_path / "shuffled.txt"
    lines = transcript(rng).splitlines()
    timed = [line for line in lines if line[:1].isdigit()]
    shuffled.write_text("\n".join([lines[0], *reversed(timed)]) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "check", shuffled, "--json"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "time goes backwards" in result.stderr
