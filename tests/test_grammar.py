"""The one grammar: every sentence it allows parses to exactly one meaning; typed text reads as spoken."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.grammar import Grammar, GrammarError
from assistant.messages import Ball


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


def test_every_sentence_parses_to_exactly_one_meaning(grammar: Grammar) -> None:
    checked = 0
    for name in grammar.known:  # what the recognizers listen for, and what only typed text says
        for words, expected in grammar.samples(name):
            parsed = grammar.parse(words)
            assert parsed.meanings == [expected], words
            assert not parsed.unknown and not parsed.ambiguous, words
            checked += 1
    calls = sum(1 for _ in grammar.samples("call"))
    assert calls == 75 + 66  # every ball in words, and every two-digit ball digit by digit
    no_ball = sum(1 for _ in grammar.samples("bad-call"))
    assert (
        no_ball == 5 * 60 + 60 + 4 * 51
    )  # each letter with the 60 numbers not under it, two-digit ones digit by digit
    assert checked > 3000


@pytest.mark.parametrize(
    ("text", "letter", "number"),
    [
        ("B thirty two", "B", 32),
        ("O five", "O", 5),
        ("n sixteen", "N", 16),
        ("G 75", "G", 75),
        ("I three one", "I", 31),
    ],
)
def test_a_call_naming_no_ball_is_its_own_meaning(grammar: Grammar, text: str, letter: str, number: int) -> None:
    (meaning,) = grammar.parse(text).meanings
    assert (meaning.intent, meaning.ball, meaning.letter, meaning.number) == ("bad-call", None, letter, number)


def test_the_recognizers_never_listen_for_a_call_naming_no_ball(grammar: Grammar) -> None:
    """On audio the letter is the least sure part of a call: recognizers hear calls that name a ball only."""
    assert "bad-call" in grammar.known and "bad-call" not in grammar.intents
    assert all("bad-call" not in intents for intents in grammar.steps.values())
    assert "noball" not in grammar.jsgf() and grammar.vocabulary() == grammar.vocabulary(grammar.intents)
    assert [m.intent for m in grammar.parse("B thirty two", intents=grammar.intents).meanings] == []


@pytest.mark.parametrize(
    ("text", "ball"),
    [
        ("B seven", "B7"),
        ("B 7", "B7"),
        ("b-7", "B7"),
        ("I twenty two", "I22"),
        ("N thirty two", "N32"),
        ("G fifty", "G50"),
        ("O sixty one", "O61"),
        ("O six one", "O61"),
        ("oh seventy five", "O75"),
        ("bee fifteen", "B15"),
        ("B one five", "B15"),
    ],
)
def test_calls_as_people_say_and_write_them(grammar: Grammar, text: str, ball: str) -> None:
    parsed = grammar.parse(text)
    assert [(m.intent, str(m.ball)) for m in parsed.meanings] == [("call", ball)]


@pytest.mark.parametrize("text", ["B sixteen", "O sixty", "N thirty", "G seventy five", "B 0"])
def test_a_number_outside_its_letter_is_not_a_call(grammar: Grammar, text: str) -> None:
    assert all(m.intent != "call" for m in grammar.parse(text).meanings)


def test_the_error_sentence_and_its_paraphrase_are_different_meanings(grammar: Grammar) -> None:
    exact = grammar.parse("An error has been made, I am reading the correct number, please correct your card. B 8")
    assert [(m.intent, m.ball) for m in exact.meanings] == [("error-correction", Ball(8))]  # the call in one breath
    alone = grammar.parse("an error has been made i am reading the correct number please correct your card")
    assert [(m.intent, m.ball) for m in alone.meanings] == [("error-correction", None)]
    loose = grammar.parse("sorry, wrong number")
    assert [m.intent for m in loose.meanings] == ["error-paraphrase"]
    named = grammar.parse("Sorry folks, that should be G fifty five")
    assert [(m.intent, m.ball) for m in named.meanings] == [("error-paraphrase", Ball(55))]


def test_card_numbers_read_digit_by_digit(grammar: Grammar) -> None:
    parsed = grammar.parse("manufacturer one four two serial number four seven two nine one")
    (card,) = parsed.meanings
    assert (card.intent, card.manufacturer, card.serial) == ("card", "142", "47291")
    typed = grammar.parse("Manufacturer 142, serial number 047291")
    assert (typed.meanings[0].manufacturer, typed.meanings[0].serial) == ("142", "047291")
    lettered = grammar.parse("serial number a b four oh two")
    assert lettered.meanings[0].serial == "AB402"


def test_amounts_counts_and_winning_numbers(grammar: Grammar) -> None:
    assert grammar.parse("one hundred twenty cards sold").meanings[0].number == 120
    assert grammar.parse("The prize is $2,500").meanings[0].number == 2500
    assert grammar.parse("the prize is two thousand five hundred dollars").meanings[0].number == 2500
    assert grammar.parse("this is a fifty ball game").meanings[0].number == 50
    winning = grammar.parse("B seven, I twenty two, N thirty three, G fifty, O seventy one")
    assert [str(m.ball) for m in winning.meanings] == ["B7", "I22", "N33", "G50", "O71"]


def test_chatter_is_left_unknown_not_forced_onto_a_call(grammar: Grammar) -> None:
    parsed = grammar.parse("hello everybody and welcome to tonight's session")
    assert parsed.meanings == []
    assert "hello" in parsed.unknown


def test_per_step_intents_narrow_what_is_understood(grammar: Grammar) -> None:
    calling = grammar.step_intents("calling")
    assert "call" in calling and "card" not in calling
    parsed = grammar.parse("manufacturer one four two", intents=calling)
    assert all(m.intent != "card" for m in parsed.meanings)


def test_jsgf_covers_the_vocabulary(grammar: Grammar) -> None:
    text = grammar.jsgf(grammar.step_intents("closing"))
    assert text.startswith("#JSGF V1.0;")
    assert "are there any other bingos" in text
    assert "<call> =" in text


def test_number_words_round_trip(grammar: Grammar) -> None:
    for n in [*range(1, 121), 250, 999, 1000, 1200, 2500, 12345, 99999]:
        words = grammar.number_words(n)
        assert grammar.read_number(words.split(), 0)[-1] == (len(words.split()), n), words


def test_a_malformed_grammar_fails_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("letters: [", encoding="utf-8")
    with pytest.raises(GrammarError, match="not valid YAML"):
        Grammar.load(bad)
    missing = tmp_path / "missing.yaml"
    with pytest.raises(GrammarError, match="cannot read grammar"):
        Grammar.load(missing)


def test_numbers_in_words_are_read_each_as_far_as_it_goes() -> None:
    grammar = Grammar.load()
    assert grammar.numbers_in(["eighty", "eight"]) == [88]
    assert grammar.numbers_in(["b", "sixty", "two", "sixty", "two"]) == [62, 62]
    assert grammar.numbers_in(["i", "twenty"]) == [20]
    assert grammar.numbers_in(["one", "two"]) == [1, 2]  # digit by digit: two numbers, as said
    assert grammar.numbers_in(["twenty", "zero", "fourteen"]) == [20, 0, 14]
    assert grammar.numbers_in(["thank", "you"]) == []


def test_near_meanings_are_named_once_and_hold_both_ways(grammar: Grammar) -> None:
    """`near` in the grammar file, on either side, makes two intents near each other; an unknown one is an error."""
    assert grammar.intents["valid"].near == ("bingo", "not-valid")
    assert grammar.intents["not-valid"].near == ("bingo", "valid")
    assert grammar.intents["yes"].near == ("no",)
    assert grammar.intents["last-ball-not-required"].near == (), "measured: the choice made right ones unsure"
    assert grammar.intents["prize"].near == ()
    data = {
        "letters": {"b": {"word": "b", "first": 1}},
        "numbers": {"units": ["zero"], "teens": ["ten"], "tens": {"twenty": 20}, "scales": {"hundred": 100}},
        "intents": {"yes": {"templates": ["yes"], "near": ["maybe"]}},
    }
    with pytest.raises(GrammarError, match="near unknown 'maybe'"):
        Grammar(data)


def test_words_said_like_a_number_name_a_number(grammar: Grammar) -> None:
    """`sounds_like` maps what a recognizer writes for a number word heard to that word; only number words."""
    assert grammar.sounds_like["for"] == "four" and grammar.sounds_like["to"] == "two"
    assert set(grammar.sounds_like.values()) <= set(grammar.units)
    data = {
        "letters": {"b": {"word": "b", "first": 1}},
        "numbers": {
            "units": ["zero", "one"],
            "teens": ["ten"],
            "tens": {"twenty": 20},
            "scales": {"hundred": 100},
            "sounds_like": {"won": "one", "bee": "b"},
        },
        "intents": {"yes": {"templates": ["yes"]}},
    }
    with pytest.raises(GrammarError, match="not numbers"):
        Grammar(data)
