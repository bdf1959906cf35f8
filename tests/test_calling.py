"""Calls as the rule reads them, not as a few timings: A(3) said twice, A(2) one ball at a time, A(5) a ball read
two ways. Real grammar, rule pack, machine."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.conduct.calling import misread
from assistant.grammar import Grammar
from assistant.messages import Ball, Finding, Output, Prompt
from assistant.procedure import ProcedureSettings, RulePack, check_inputs
from assistant.script import parse_script

GAME = "@game type=regular last_ball_required=yes\n0 caller: last ball called is required\n"
ERROR = "Say: an error has been made, I am reading the correct number, please correct your card"


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


@pytest.fixture(scope="module")
def rules() -> RulePack:
    return RulePack.load()


def run(text: str, grammar: Grammar, rules: RulePack) -> tuple[Any, list[Output]]:
    return check_inputs(parse_script(GAME + text, grammar), rules, grammar, ProcedureSettings())


def found(outputs: list[Output]) -> list[tuple[float, str, str, str]]:
    return [(f.time, f.clause, f.code, f.severity.value) for f in outputs if isinstance(f, Finding)]


def prompts(outputs: list[Output]) -> list[tuple[float, str]]:
    return [(p.time, p.text) for p in outputs if isinstance(p, Prompt)]


def test_a_call_said_once_then_the_next_call_is_a3_at_that_moment(grammar: Grammar, rules: RulePack) -> None:
    """However soon the next call comes, the call before it was said once: A(3), with A(2) only as a warning."""
    for gap in (2, 5, 9):
        occasion, outputs = run(f"6 caller: B seven\n{6 + gap} caller: N thirty three\n", grammar, rules)
        assert found(outputs) == [
            (6.0 + gap, "A(3)", "call-not-repeated", "violation"),
            (6.0 + gap, "A(2)", "next-ball-before-repeat", "warning"),
        ], gap
        assert prompts(outputs) == []  # no "say it again" was needed to know
        assert [c.ball for c in occasion.games[0].calls] == [Ball(7), Ball(33)]


def test_a_late_second_saying_after_the_finding_is_not_a_new_ball(grammar: Grammar, rules: RulePack) -> None:
    text = "6 caller: B seven\n8 caller: N thirty three\n11 caller: N thirty three\n13 caller: B seven\n"
    occasion, outputs = run(text, grammar, rules)
    assert [c.ball for c in occasion.games[0].calls] == [Ball(7), Ball(33)]
    assert [code for _, _, code, _ in found(outputs)] == ["call-not-repeated", "next-ball-before-repeat"]


@pytest.mark.parametrize(
    ("first", "second", "same_ball"),
    [
        (16, 19, True),  # one digit read wrong
        (7, 37, True),  # the letter follows the number read
        (61, 67, True),
        (23, 32, True),  # digits swapped
        (14, 40, True),  # "fourteen" for "forty"
        (7, 12, False),
        (7, 33, False),
        (22, 45, False),
    ],
)
def test_a_misreading_is_one_ball_read_two_ways(first: int, second: int, same_ball: bool) -> None:
    assert misread(Ball(first), Ball(second)) is same_ball
    assert misread(Ball(second), Ball(first)) is same_ball


def test_a_second_saying_that_misreads_the_ball_asks_for_the_error_sentence(grammar: Grammar, rules: RulePack) -> None:
    _, outputs = run("6 caller: I sixteen\n9 caller: I nineteen\n30 tick\n", grammar, rules)
    assert prompts(outputs)[0] == (9.0, ERROR)  # at once
    assert found(outputs) == [(15.0 + 9.0, "A(5)", "miscall-not-corrected", "violation")]
