"""Spoken questions answered from the real master board the procedure engine keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.grammar import Grammar
from assistant.messages import Ball, Meaning, Output, Prompt
from assistant.procedure import Procedure, ProcedureSettings, RulePack
from assistant.questions import ANSWER_PRIORITY, answer
from assistant.script import parse_script

RULES = Path(__file__).resolve().parent.parent / "config" / "rules" / "nm-15.4.7.11.yaml"
QUESTIONS = ("ask-count", "ask-last", "ask-called", "ask-letter", "ask-not-called", "ask-repeat")

COVER_ALL_GAME = """
@game type=cover-all
0:01 caller: last ball called is required
0:03 caller: B seven
0:05 caller: B seven
0:09 caller: G fifty two
0:11 caller: G fifty two
0:15 caller: G forty six
0:17 caller: G forty six
0:22 caller: O sixty one
0:24 caller: O sixty one
"""


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


def play(grammar: Grammar, script: str) -> tuple[Procedure, list[Output]]:
    out: list[Output] = []
    proc = Procedure(RulePack.load(RULES), grammar, ProcedureSettings(), out.append)
    for item in parse_script(script, grammar):
        proc.feed(item)
    return proc, out


def ask(grammar: Grammar, proc: Procedure, words: str, last: Prompt | None = None) -> Prompt | None:
    (meaning,) = grammar.parse(words).meanings
    return answer(meaning, proc.board, last, grammar, time=30.0)


def test_count_last_and_called_from_the_board(grammar: Grammar) -> None:
    proc, _ = play(grammar, COVER_ALL_GAME)
    assert proc.board.called == [Ball(7), Ball(52), Ball(46), Ball(61)]
    count = ask(grammar, proc, "how many balls have been called")
    assert count is not None and count.text == "Four balls have been called."
    assert count.time == 30.0 and count.kind == "answer-ask-count" and count.priority == ANSWER_PRIORITY
    last = ask(grammar, proc, "what was the last call")
    assert last is not None and last.text == "The last call was O sixty one."
    yes = ask(grammar, proc, "was g fifty two called")
    no = ask(grammar, proc, "has g fifty three been called")
    assert yes is not None and yes.text == "Yes, G fifty two has been called."
    assert no is not None and no.text == "No, G fifty three has not been called."


def test_letter_reads_the_called_balls_in_board_order(grammar: Grammar) -> None:
    proc, _ = play(grammar, COVER_ALL_GAME)
    under_g = ask(grammar, proc, "read the g balls")
    assert under_g is not None and under_g.text == "Under G, two called: G forty six, G fifty two."
    under_i = ask(grammar, proc, "which balls are called under i")
    assert under_i is not None and under_i.text == "No balls called under I."


def test_not_called_reads_every_other_ball_for_cover_all(grammar: Grammar) -> None:
    proc, _ = play(grammar, COVER_ALL_GAME)
    reply = ask(grammar, proc, "read the numbers not called")
    assert reply is not None and reply.clause == "B(8)"
    assert reply.text.startswith("Not called, seventy one: B one, B two, B three, B four, B five, B six, B eight,")
    assert "B seven" not in reply.text and "G fifty two" not in reply.text
    assert reply.text.endswith("O seventy five.")
    spoken = reply.text.split(": ", 1)[1].rstrip(".").split(", ")
    assert len(spoken) == 71


def test_a_withdrawn_call_is_not_on_the_board(grammar: Grammar) -> None:
    script = """
@game type=regular
0:01 caller: last ball called is not required
0:03 caller: B seven
0:05 caller: B seven
0:08 caller: an error has been made I am reading the correct number please correct your card
0:10 caller: B eight
0:12 caller: B eight
"""
    proc, _ = play(grammar, script)
    assert Ball(7) not in proc.board.called
    reply = ask(grammar, proc, "was b seven called")
    assert reply is not None and reply.text == "No, B seven has not been called."


def test_before_the_first_ball(grammar: Grammar) -> None:
    proc, _ = play(grammar, "@game type=regular\n")
    texts = {q: ask(grammar, proc, w) for q, w in [("count", "ball count"), ("last", "last call")]}
    assert texts["count"] is not None and texts["count"].text == "No balls have been called yet."
    assert texts["last"] is not None and texts["last"].text == "No ball has been called yet."
    reply = ask(grammar, proc, "which numbers are not called")
    assert reply is not None and reply.text == "No balls have been called yet."


def test_repeat_says_the_last_prompt_again(grammar: Grammar) -> None:
    proc, _ = play(grammar, COVER_ALL_GAME)
    nothing = ask(grammar, proc, "say that again")
    assert nothing is not None and nothing.text == "There is nothing to repeat yet."
    last = Prompt(20.0, "Say it again: O sixty one", "repeat-call", 2, "A(3)")
    again = ask(grammar, proc, "repeat the last prompt", last)
    assert again == Prompt(30.0, "Say it again: O sixty one", "answer-ask-repeat", ANSWER_PRIORITY, "A(3)")


def test_every_question_the_grammar_allows_is_answered(grammar: Grammar) -> None:
    proc, _ = play(grammar, COVER_ALL_GAME)
    asked = 0
    for intent in QUESTIONS:
        for words, meaning in grammar.samples(intent):
            (parsed,) = grammar.parse(words).meanings
            assert parsed.intent == intent
            reply = answer(meaning, proc.board, None, grammar)
            assert reply is not None and reply.text, words
            assert reply.kind == f"answer-{intent}"
            asked += 1
    assert asked > 75 * 2  # every ball asked both ways


def test_what_is_not_a_question_gets_no_answer(grammar: Grammar) -> None:
    proc, _ = play(grammar, COVER_ALL_GAME)
    assert answer(Meaning("call", ball=Ball(7)), proc.board, None, grammar) is None
    assert answer(Meaning("ask-called"), proc.board, None, grammar) is None
    assert answer(Meaning("ask-letter", letter="Q"), proc.board, None, grammar) is None
