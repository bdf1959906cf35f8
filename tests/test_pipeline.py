"""The pipeline's own decisions: games of the program started from speech, unplaceable words made unsure."""

from __future__ import annotations

import pytest

from assistant.engines.base import Heard
from assistant.grammar import Grammar
from assistant.messages import GamePlan, GameStart, GameType, Role, Utterance
from assistant.pipeline import heard_to_utterance, program_games
from assistant.procedure import RulePack, check_inputs
from assistant.script import parse_script


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


PLANS = [GamePlan(GameType.REGULAR, last_ball_required=True), GamePlan(GameType.LIMITED, balls=50)]


def _caller(grammar: Grammar, t: float, words: str, uncertain: bool = False) -> Utterance:
    return grammar.utterance(t, t + 1.5, Role.CALLER, words, uncertain=uncertain)


def test_the_next_game_starts_at_its_opening_words_when_the_completion_was_missed(grammar: Grammar) -> None:
    said = [
        _caller(grammar, 0, "last ball called is required"),
        _caller(grammar, 5, "B seven"),
        _caller(grammar, 8, "B seven"),
        _caller(grammar, 20, "this is a fifty ball game"),  # "this game is completed" was drowned out
        _caller(grammar, 25, "N thirty three"),
    ]
    items = list(program_games(said, PLANS))
    starts = [(i.time, i.plan.type) for i in items if isinstance(i, GameStart)]
    assert starts == [(0.0, GameType.REGULAR), (20.0, GameType.LIMITED)]
    assert items.index(next(i for i in items if isinstance(i, GameStart) and i.time == 20.0)) == 4


def test_opening_words_before_any_call_or_heard_unsure_start_no_game(grammar: Grammar) -> None:
    said = [
        _caller(grammar, 0, "last ball called is required"),
        _caller(grammar, 3, "this is a fifty ball game"),
        _caller(grammar, 5, "B seven"),
        _caller(grammar, 9, "this is a fifty ball game", uncertain=True),
    ]
    assert sum(isinstance(i, GameStart) for i in program_games(said, PLANS)) == 1


def test_a_game_boundary_never_rests_on_an_unsure_hearing(grammar: Grammar) -> None:
    """Measured on hall audio: the caller's greeting heard as an unsure "g forty eight", then the last-ball
    announcement opened the next game, and every finding after it was judged against the wrong plan."""
    said = [
        _caller(grammar, 0, "G forty eight", uncertain=True),
        _caller(grammar, 4, "last ball called is required"),
        _caller(grammar, 10, "B seven"),
        _caller(grammar, 13, "B seven"),
        _caller(grammar, 20, "this game is completed", uncertain=True),
        _caller(grammar, 30, "I twenty two"),
    ]
    assert [i.time for i in program_games(said, PLANS) if isinstance(i, GameStart)] == [0.0]


def test_a_completed_game_starts_the_next_one_and_the_procedure_follows(grammar: Grammar) -> None:
    script = parse_script(
        "0:00 caller: last ball called is required\n0:05 caller: B seven\n0:08 caller: B seven\n"
        "0:20 caller: this game is completed\n0:30 caller: this is a fifty ball game\n",
        grammar,
    )
    said = [i for i in script if isinstance(i, Utterance)]
    occasion, _ = check_inputs(list(program_games(said, PLANS)), RulePack.load(), grammar)
    assert [g.plan.type for g in occasion.games] == [GameType.REGULAR, GameType.LIMITED]


def test_words_the_grammar_cannot_place_make_a_hearing_unsure(grammar: Grammar) -> None:
    dangling = heard_to_utterance(Heard(0.0, 1.0, "one hundred and cards sold", 0.92, False), Role.CALLER, grammar)
    assert dangling.uncertain and dangling.unknown
    clean = heard_to_utterance(Heard(0.0, 1.0, "b seven", 0.92, False), Role.CALLER, grammar)
    assert not clean.uncertain and [str(m.ball) for m in clean.meanings] == ["B7"]
