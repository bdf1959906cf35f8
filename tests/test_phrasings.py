"""The phrasing corpus (grammars/phrasings.yaml): every way callers and floor staff say a phrase of the rule reads
as labelled, and the corpus's games, with each way said in them, give the findings labelled. Real grammar, rule
pack, machine."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from assistant.grammar import DEFAULT_GRAMMAR, Grammar
from assistant.messages import HeardForReview, Meaning, Role
from assistant.procedure import RulePack, check_inputs
from assistant.script import parse_script

CORPUS_PATH = DEFAULT_GRAMMAR.parent / "phrasings.yaml"
CORPUS: dict[str, Any] = yaml.safe_load(CORPUS_PATH.read_text(encoding="utf-8"))
QUESTIONS = {"ask-count", "ask-last", "ask-called", "ask-letter", "ask-not-called", "ask-repeat", "yes", "no"}
"""Intents that are no phrase of the rule: questions to the assistant, and yes/no."""


@dataclass(frozen=True)
class Way:
    phrase: str
    clause: str
    who: str
    game: str
    slot: str | None
    words: str
    means: tuple[str, ...]
    rest: tuple[str, ...]
    expect: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.clause} {self.words}"


WAYS = [
    Way(
        phrase=group["phrase"],
        clause=group["clause"],
        who=group["who"],
        game=group["game"],
        slot=group.get("slot"),
        words=way["words"],
        means=tuple(way["means"]),
        rest=tuple(way.get("rest", ())),
        expect=tuple(way.get("expect", ())),
    )
    for group in CORPUS["phrases"]
    for way in group["ways"]
]


def label(meaning: Meaning) -> str:
    if meaning.ball is None and meaning.letter is not None and meaning.number is not None:
        return f"{meaning.intent} {meaning.letter}{meaning.number}"
    return f"{meaning.intent} {meaning.ball}" if meaning.ball is not None else meaning.intent


def game_script(way: Way) -> str:
    text: str = CORPUS["games"][way.game]
    if way.slot is None:
        return text.replace("{said}", way.words)
    slots = {**CORPUS["slots"], way.slot: f"{way.who}: {way.words}"}
    return re.sub(r"\{(\w+)\}", lambda m: slots[m[1]], text)


@pytest.mark.parametrize("way", WAYS, ids=[w.id for w in WAYS])
def test_every_way_reads_as_labelled(grammar: Grammar, way: Way) -> None:
    parsed = grammar.parse(way.words)
    assert [label(m) for m in parsed.meanings] == list(way.means)
    assert parsed.unknown == list(way.rest)
    assert parsed.ambiguous == []


@pytest.mark.parametrize("way", WAYS, ids=[w.id for w in WAYS])
def test_every_way_said_in_its_game_gives_the_findings_labelled(grammar: Grammar, rules: RulePack, way: Way) -> None:
    occasion, outputs = check_inputs(parse_script(game_script(way), grammar), rules, grammar)
    want: Counter[str] = Counter(way.expect)
    got: Counter[str] = Counter()
    for f in occasion.all_findings():
        pinned = f"{f.clause} {f.code} {f.severity.value}"
        got[pinned if pinned in want else f"{f.clause} {f.code}"] += 1
    detail = "\n".join(
        f"  {f.time:7.1f} {f.clause} {f.code} [{f.severity.value}] {f.message}" for f in occasion.all_findings()
    )
    assert got == want, f"{way.words!r} in the {way.game} game:\n{detail}"
    kept = [r for r in outputs if isinstance(r, HeardForReview)]
    if way.who == Role.CALLER.value and way.rest:
        assert kept and {r.heard for r in kept} == {way.words}  # the caller's unplaced words are kept for review
    else:
        assert kept == []


def test_each_phrase_has_five_ways_the_grammar_reads(grammar: Grammar) -> None:
    for group in CORPUS["phrases"]:
        read = [w for w in group["ways"] if w["means"] and not w.get("rest")]
        assert len(read) >= 5, group["phrase"]


def test_the_corpus_covers_every_phrase_and_prompt_of_the_rule(grammar: Grammar, rules: RulePack) -> None:
    """Every intent the rule pack reacts to (bar questions), and every prompt that asks for words of the rule (one
    with a clause), has its ways in the corpus."""
    said = {m.split()[0] for w in WAYS for m in w.means}
    phrases = {name for name in grammar.known if name not in QUESTIONS}
    assert phrases - said == set()
    asked = {kind for group in CORPUS["phrases"] for kind in group.get("prompts", [])}
    assert asked == {kind for kind, prompt in rules.prompts.items() if prompt.clause is not None}


def test_the_corpus_is_beside_the_grammar() -> None:
    assert CORPUS_PATH.parent == Path(DEFAULT_GRAMMAR).parent
    assert set(CORPUS["games"]) == {w.game for w in WAYS}
