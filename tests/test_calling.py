"""Calls as the rule reads them, not as a few phrasings or timings: A(3) said twice, A(2) one ball at a time, A(5)
a call named wrong (a misreading, a call naming no ball, a correction in other words). Real grammar, rule pack,
machine."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.conduct.calling import misread
from assistant.grammar import Grammar
from assistant.messages import Ball, CallMade, CallWithdrawn, Finding, Output, Prompt, Severity
from assistant.procedure import Procedure, ProcedureSettings, RulePack, check_inputs
from assistant.script import parse_script

GAME = "@game type=regular last_ball_required=yes\n0 caller: last ball called is required\n"
ERROR = "Say: an error has been made, I am reading the correct number, please correct your card"


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
        assert prompts(outputs) == [(6.0 + gap, "Recorded: A 3, call not repeated")]  # no "say it again" needed
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


def test_a_call_naming_no_ball_prompts_the_error_sentence_at_once(grammar: Grammar, rules: RulePack) -> None:
    text = "6 caller: B seven\n9 caller: B seven\n18 caller: B thirty two\n21 caller: B thirty two\n40 tick\n"
    occasion, outputs = run(text, grammar, rules)
    assert prompts(outputs) == [
        (18.0, ERROR),
        (33.0, "Recorded: A 5, bad call not corrected"),
    ]  # once, though said twice
    (finding,) = [f for f in outputs if isinstance(f, Finding)]
    assert (finding.time, finding.clause, finding.code, finding.severity) == (
        33.0,
        "A(5)",
        "bad-call-not-corrected",
        Severity.VIOLATION,
    )
    assert finding.heard == "B thirty two"
    assert finding.message.startswith("'B thirty two' names no ball (32 is under N) and no correction followed")
    assert [c.ball for c in occasion.games[0].calls] == [Ball(7)]  # a call naming no ball is never in play


def test_a_call_naming_no_ball_heard_unsure_is_no_violation(grammar: Grammar, rules: RulePack) -> None:
    _, outputs = run("6 caller: B seven\n9 caller: B seven\n18 caller?: O five\n40 tick\n", grammar, rules)
    assert prompts(outputs) == []  # an unsure hearing does not stop the game
    assert found(outputs) == [(33.0, "A(5)", "bad-call-not-corrected", "uncertain")]


def test_a_call_naming_no_ball_then_the_right_call_without_the_sentence(grammar: Grammar, rules: RulePack) -> None:
    text = "6 caller: B thirty two\n9 caller: N thirty two\n12 caller: N thirty two\n"
    occasion, outputs = run(text, grammar, rules)
    assert found(outputs) == [(9.0, "A(5)", "bad-call-not-corrected", "violation")]
    assert [c.ball for c in occasion.games[0].calls] == [Ball(32)]


def test_the_call_in_hand_misnamed_then_corrected_to_itself(grammar: Grammar, rules: RulePack) -> None:
    sentence = "an error has been made, I am reading the correct number, please correct your card"
    text = (
        f"6 caller: B seven\n9 caller: B thirty seven\n12 caller: {sentence}\n17 caller: B seven\n20 caller: B seven\n"
    )
    occasion, outputs = run(text, grammar, rules)
    assert found(outputs) == []
    assert [c.ball for c in occasion.games[0].calls] == [Ball(7)]


@pytest.mark.parametrize(
    "words",
    [
        "sorry folks, that should be G fifty five",
        "my mistake, that's G fifty five",
        "correction, G fifty five",
        "that should have been G fifty five",
        "I mean G fifty five",
    ],
)
def test_a_correction_in_other_words_naming_the_ball_is_taken(grammar: Grammar, rules: RulePack, words: str) -> None:
    text = f"6 caller: G fifty\n9 caller: G fifty\n14 caller: {words}\n17 caller: G fifty five\n"
    occasion, outputs = run(text, grammar, rules)
    assert found(outputs) == [(14.0, "A(5)", "error-phrase-paraphrased", "violation")]
    assert [(w.ball, w.time) for w in outputs if isinstance(w, CallWithdrawn)] == [(Ball(50), 14.0)]
    assert [c.ball for c in outputs if isinstance(c, CallMade)] == [Ball(50), Ball(55)]
    assert [c.ball for c in occasion.games[0].calls if not c.withdrawn] == [Ball(55)]


def test_a_correction_in_other_words_then_the_ball(grammar: Grammar, rules: RulePack) -> None:
    text = "6 caller: G fifty\n9 caller: sorry, wrong number\n12 caller: G fifty five\n15 caller: G fifty five\n"
    occasion, outputs = run(text, grammar, rules)
    assert found(outputs) == [(9.0, "A(5)", "error-phrase-paraphrased", "violation")]
    assert [c.ball for c in occasion.games[0].calls if not c.withdrawn] == [Ball(55)]


def test_the_rule_sentence_with_the_ball_in_one_breath_is_compliant(grammar: Grammar, rules: RulePack) -> None:
    sentence = "an error has been made, I am reading the correct number, please correct your card, G fifty five"
    text = f"6 caller: G fifty\n9 caller: G fifty\n14 caller: {sentence}\n17 caller: G fifty five\n"
    occasion, outputs = run(text, grammar, rules)
    assert found(outputs) == []
    assert [c.ball for c in occasion.games[0].calls if not c.withdrawn] == [Ball(55)]


def test_live_the_procedure_prompts_before_the_window_ends(grammar: Grammar, rules: RulePack) -> None:
    outputs: list[Output] = []
    procedure = Procedure(rules, grammar, ProcedureSettings(), outputs.append)
    for item in parse_script(GAME + "6 caller: O five\n", grammar):
        procedure.feed(item)
    assert prompts(outputs) == [(6.0, ERROR)]
    assert procedure.board.called == [] and found(outputs) == []


@pytest.mark.parametrize(
    ("opening", "expected"),
    [
        (GAME, []),
        (
            "@game type=regular last_ball_required=yes\n",
            [(10.0, "A(1)", "last-ball-status-not-announced", "violation")],
        ),
    ],
)
def test_the_first_ball_corrected_in_one_breath_is_the_first_call(
    grammar: Grammar, rules: RulePack, opening: str, expected: list[tuple[float, str, str, str]]
) -> None:
    """A call naming no ball opens the game; the correct call said with the sentence is checked like a first call."""
    sentence = "an error has been made, I am reading the correct number, please correct your card, O sixty five"
    text = opening + f"6 caller: O five\n10 caller: {sentence}\n13 caller: O sixty five\n"
    outputs: list[Output] = []
    procedure = Procedure(rules, grammar, ProcedureSettings(), outputs.append)
    for item in parse_script(text, grammar):
        procedure.feed(item)
    assert procedure.state == "calling" and procedure.board.called == [Ball(65)]
    assert found(outputs) == expected
