"""Every scenario of the library runs through the real grammar and procedure; its findings must be exactly
those its header declares (`# expect: CLAUSE CODE [SEVERITY]` lines, or `# expect: none`)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from assistant.grammar import Grammar
from assistant.procedure import ProcedureSettings, RulePack, check_inputs
from assistant.script import read_script

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.txt"))
EXPECT = re.compile(r"^#\s*expect:\s*(.+?)\s*$")


def expected(path: Path) -> Counter[tuple[str, str, str | None]]:
    out: Counter[tuple[str, str, str | None]] = Counter()
    lines = [m[1] for line in path.read_text(encoding="utf-8").splitlines() if (m := EXPECT.match(line))]
    assert lines, f"{path.name}: no '# expect:' line"
    for line in lines:
        if line == "none":
            continue
        clause, code, *severity = line.split()
        out[(clause, code, severity[0] if severity else None)] += 1
    return out


def test_library_covers_every_finding_code(rules: RulePack) -> None:
    declared = {code for path in SCENARIOS for (_, code, _) in expected(path)}
    assert set(rules.findings) - declared == set()


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path, grammar: Grammar, rules: RulePack) -> None:
    occasion, _ = check_inputs(read_script(path, grammar), rules, grammar, ProcedureSettings())
    found = occasion.all_findings()
    want = expected(path)
    got: Counter[tuple[str, str, str | None]] = Counter()
    for f in found:
        severity = f.severity.value if (f.clause, f.code, f.severity.value) in want else None
        got[(f.clause, f.code, severity)] += 1
    detail = "\n".join(f"  {f.time:7.1f} {f.clause} {f.code} [{f.severity.value}] {f.message}" for f in found)
    assert got == want, f"{path.name}: findings differ\n{detail}"


PHRASINGS = [  # the phrasings the grammar must accept, each said in a compliant scenario
    "B seven",
    "N thirty two",
    "O sixty one",
    "O six one",
    "last ball called is required",
    "last ball called is not required",
    "an error has been made, I am reading the correct number, please correct your card",
    "this is a fifty ball game",
    "fifty balls will be called",
    "last ball",
    "one hundred twenty cards sold",
    "the prize is three hundred dollars",
    "bingo",
    "manufacturer one four two serial number four seven two nine one",
    "B seven, I twenty two, N thirty three, G fifty, O seventy one",
    "valid bingo",
    "not a valid bingo",
    "are there any other bingos?",
    "this game is completed",
    "power outage",
    "the majority of players approve a manual draw",
]


@pytest.mark.parametrize("phrase", PHRASINGS)
def test_issue_phrasings_are_said_in_compliant_scenarios(phrase: str) -> None:
    compliant = [p for p in SCENARIOS if p.stem.startswith("compliant-")]
    said = [p.stem for p in compliant if f": {phrase}".lower() in p.read_text(encoding="utf-8").lower()]
    assert said, f"no compliant scenario says {phrase!r}"
