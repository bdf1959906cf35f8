"""The pipeline's own decisions: games of the program started from speech, unplaceable words made unsure."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import numpy as np
import pytest

from assistant.audio import AudioChunk, chunks
from assistant.engines.base import Heard
from assistant.grammar import Grammar
from assistant.messages import GamePlan, GameStart, GameType, Role, Utterance
from assistant.pipeline import heard_to_utterance, lockstep_utterances, program_games
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


class _Failing:
    """A recognizer (the port, for this one layer) that hears one call, then fails on the chunk after `at`."""

    name = "failing"
    pending_since: float | None = None

    def __init__(self, at: int | None) -> None:
        self.at = at

    def set_step(self, intents: object) -> None:
        pass

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        for k, chunk in enumerate(chunks):
            if k == 2:
                yield Heard(chunk.start, chunk.end, "b seven", 1.0, False)
            if self.at is not None and k == self.at:
                raise ValueError("number out of range: 1420251512")

    def decode(self, samples: object, start: float = 0.0) -> Heard:
        raise NotImplementedError


@pytest.mark.parametrize("failing", ["caller", "floor", "both"])
def test_a_recognizer_that_fails_mid_stream_is_an_error_never_a_hang(grammar: Grammar, failing: str) -> None:
    """Measured: whisper failed on a card number written as one numeral and the hall check hung for good (the
    channels' lock-step waited for a chunk request that never came)."""
    silence = np.zeros(16000, dtype=np.int16)
    steps = zip(chunks(silence, 0.1), chunks(silence, 0.1), strict=True)
    recognizers = [_Failing(5 if failing in ("caller", "both") else None), _Failing(4 if failing != "caller" else None)]
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(list(lockstep_utterances(steps, recognizers, grammar)))
        except ValueError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "lock-step hung on a failed recognizer"
    assert isinstance(outcome[0], ValueError) and "1420251512" in str(outcome[0])
