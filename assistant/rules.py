"""The rule pack: a jurisdiction's procedure as data (states, transitions, findings, prompts, clauses).

Loaded from YAML (config/rules/nm-15.4.7.11.yaml); assistant/procedure.py runs it; assistant/diagram.py draws it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from .messages import GameType, OccasionRecord, Role, Severity
from .paths import ROOT

DEFAULT_RULES = ROOT / "config" / "rules" / "nm-15.4.7.11.yaml"
NOTE_KEYS = ("clause", "says")
"""Keys of a rule pack transition that are for people and the diagram, not for the machine."""


class RuleError(ValueError):
    """The rule pack is malformed or names a check the engine does not have."""


@dataclass(frozen=True)
class FindingSpec:
    clause: str
    severity: Severity
    message: str
    owed: tuple[str, ...] = ()
    """An absence finding: the roles whose words were missing. An unsure hearing of one of them inside the
    finding's window may have been those words, so the finding is then uncertain, not a violation."""
    plan: bool = False
    """The finding rests on the game's plan (its type, ball count, cards sold, prize, last-ball status): it is
    uncertain while the game's place in the program is (`GameStart.doubts`)."""
    any_words: bool = False
    """The words owed may be said in any words (the rule quotes none and they name no ball: an announcement, an
    approval, a card read, a ruling): speech of the owing role inside the window that the grammar could not place
    may have been them, so the finding is then uncertain too."""


@dataclass(frozen=True)
class PromptSpec:
    text: str
    priority: int
    clause: str | None
    asks: str | None = None
    """Said only when all it rests on was heard for sure; otherwise the prompt named here (a question) is said
    instead."""
    stands_for: str | None = None
    """The prompt this one is said in place of when what that one rests on was heard unsure ("Was that a bingo?"
    for "Floor: read the card"); a prompt named by another's `asks` stands for that one without saying so."""
    wrong: bool = False
    """It tells the caller something went wrong (not called, say it again, the error sentence, was that a bingo,
    the held ball): one said where the transcript gives none is the worst prompt (the scenario benchmark counts
    them)."""
    owed: tuple[str, ...] = ()
    """It is said because words were not heard (a second saying, a call): unsure speech of these roles since the
    words were owed may have been them, so it asks (`asks`)."""


@dataclass(frozen=True)
class ClauseSpec:
    clause: str
    title: str
    observable: str
    """'yes' (speech shows it), 'no' (not observable by voice), 'board' (only the master board console shows it)."""
    applies: str | None
    """'limited', 'winner-take-all', 'outage': the clause applies only when the occasion had one."""


@dataclass(frozen=True)
class TransitionSpec:
    trigger: str
    sources: tuple[str, ...]
    dest: str | None
    conditions: tuple[str, ...]
    callbacks: tuple[str, ...]
    clause: str | None
    says: str | None


def _names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


SPEAKING_ROLES = (Role.CALLER.value, Role.FLOOR.value, Role.PLAYER.value)


def _flag(value: Any, code: object, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"finding {code}: {key} must be true or false, not {value!r}")
    return value


def _owed(value: Any, code: object) -> tuple[str, ...]:
    roles = _names(value)
    unknown = [r for r in roles if r not in SPEAKING_ROLES]
    if unknown:
        raise ValueError(f"finding {code}: owed by unknown roles {unknown} (known: {', '.join(SPEAKING_ROLES)})")
    return roles


@dataclass(frozen=True)
class RulePack:
    """A jurisdiction's procedure as data: the machine, the steps, the findings, the prompts, the clauses."""

    rule: str
    title: str
    states: tuple[str, ...]
    initial: str
    transitions: tuple[TransitionSpec, ...]
    machine: Mapping[str, Any]
    """The `transitions` configuration, without the notes."""
    steps: Mapping[str, str]
    findings: Mapping[str, FindingSpec]
    prompts: Mapping[str, PromptSpec]
    clauses: tuple[ClauseSpec, ...]
    source: Path | None = None

    @classmethod
    def load(cls, path: Path | None = None) -> RulePack:
        path = path or DEFAULT_RULES
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise RuleError(f"cannot read rule pack {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise RuleError(f"rule pack {path} is not valid YAML: {str(exc).splitlines()[0]}") from exc
        return cls.from_data(data, path)

    @classmethod
    def from_data(cls, data: Any, source: Path | None = None) -> RulePack:
        where = str(source or "rule pack")
        try:
            machine = data["machine"]
            states = tuple(s["name"] if isinstance(s, dict) else str(s) for s in machine["states"])
            specs: list[TransitionSpec] = []
            clean: list[dict[str, Any]] = []
            for t in machine["transitions"]:
                sources = ("*",) if t["source"] == "*" else _names(t["source"])
                specs.append(
                    TransitionSpec(
                        trigger=str(t["trigger"]),
                        sources=sources,
                        dest=t["dest"],
                        conditions=_names(t.get("conditions")) + _names(t.get("unless")),
                        callbacks=_names(t.get("before")) + _names(t.get("after")),
                        clause=t.get("clause"),
                        says=t.get("says"),
                    )
                )
                clean.append({k: v for k, v in t.items() if k not in NOTE_KEYS})
            findings = {
                str(code): FindingSpec(
                    str(f["clause"]),
                    Severity(f["severity"]),
                    str(f["message"]),
                    _owed(f.get("owed"), code),
                    _flag(f.get("plan", False), code, "plan"),
                    _flag(f.get("any_words", False), code, "any_words"),
                )
                for code, f in data["findings"].items()
            }
            loose = [code for code, f in findings.items() if f.any_words and not f.owed]
            if loose:
                raise ValueError(f"findings {loose}: any_words needs the role that owed the words (owed)")
            prompts = {
                str(kind): PromptSpec(
                    str(p["text"]),
                    int(p.get("priority", 1)),
                    p.get("clause"),
                    asks=None if p.get("asks") is None else str(p["asks"]),
                    wrong=_flag(p.get("wrong", False), kind, "wrong"),
                    stands_for=None if p.get("stands_for") is None else str(p["stands_for"]),
                    owed=_owed(p.get("owed"), kind),
                )
                for kind, p in data["prompts"].items()
            }
            for kind, p in list(prompts.items()):
                if p.asks in prompts and prompts[p.asks].stands_for is None:
                    prompts[p.asks] = replace(prompts[p.asks], stands_for=kind)
            named = {kind: p.asks or p.stands_for for kind, p in prompts.items()}
            unasked = {kind: other for kind, other in named.items() if other is not None and other not in prompts}
            if unasked:
                raise ValueError(f"prompts name prompts the pack does not have: {unasked}")
            clauses = tuple(
                ClauseSpec(
                    clause=str(c["clause"]),
                    title=str(c["title"]),
                    observable={True: "yes", False: "no"}.get(c.get("observable", True), str(c.get("observable"))),
                    applies=c.get("applies"),
                )
                for c in data["clauses"]
            )
            pack = cls(
                rule=str(data.get("rule", "")),
                title=str(data.get("title", "")),
                states=states,
                initial=str(machine["initial"]),
                transitions=tuple(specs),
                machine={**machine, "transitions": clean},
                steps={str(k): str(v) for k, v in data["steps"].items()},
                findings=findings,
                prompts=prompts,
                clauses=clauses,
                source=source,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise RuleError(f"{where}: malformed rule pack ({exc!r})") from exc
        missing = [s for s in states if s not in pack.steps]
        if missing:
            raise RuleError(f"{where}: states without a grammar step: {missing}")
        for spec in specs:
            bad = [s for s in spec.sources if s != "*" and s not in states]
            if bad or (spec.dest is not None and spec.dest not in states):
                raise RuleError(f"{where}: transition {spec.trigger!r} names unknown states {bad or [spec.dest]}")
        return pack


@dataclass(frozen=True)
class ClauseStatus:
    """One row of the report's clause table."""

    clause: str
    title: str
    status: str
    """pass, finding (a violation), warning (only warnings), uncertain (only unsure hearings), not-observable,
    not-applicable."""
    findings: int = 0


def clause_table(occasion: OccasionRecord, rules: RulePack | None = None) -> list[ClauseStatus]:
    """Every clause of the rule with what this occasion showed of it."""
    rules = rules or RulePack.load()
    findings = occasion.all_findings()
    games = occasion.games
    applies = {
        "limited": any(g.plan.type is GameType.LIMITED or g.plan.balls is not None for g in games),
        "winner-take-all": any(g.plan.type is GameType.WINNER_TAKE_ALL for g in games),
        "outage": bool(occasion.outages),
    }
    rows: list[ClauseStatus] = []
    for spec in rules.clauses:
        cited = [f for f in findings if f.clause == spec.clause]
        severities = {f.severity for f in cited}
        if spec.observable == "no":
            status = "not-observable"
        elif Severity.VIOLATION in severities:
            status = "finding"
        elif Severity.WARNING in severities:
            status = "warning"
        elif cited:
            status = "uncertain"
        elif not games or (spec.applies is not None and not applies.get(spec.applies, True)):
            status = "not-applicable"
        elif spec.observable == "board":
            calls = [c for g in games for c in g.calls if not c.withdrawn]
            status = "pass" if calls and all(c.keyed for c in calls) else "not-observable"
        else:
            status = "pass"
        rows.append(ClauseStatus(spec.clause, spec.title, status, len(cited)))
    return rows
