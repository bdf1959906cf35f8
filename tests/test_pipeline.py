"""The pipeline's own decisions: games of the program started from speech, unplaceable words made unsure."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import numpy as np
import pytest

from assistant.audio import AudioChunk, chunks
from assistant.engines.base import Heard
from assistant.grammar import Grammar
from assistant.messages import Doubt, GamePlan, GameStart, GameType, Role, Severity, Utterance
from assistant.pipeline import UNHEARD_END, Listening, heard_to_utterance, lockstep_inputs, program_games
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


THREE_PLANS = [
    GamePlan(GameType.REGULAR, last_ball_required=True),
    GamePlan(GameType.REGULAR, last_ball_required=False),
    GamePlan(GameType.REGULAR, last_ball_required=True),
]


def _three_games(grammar: Grammar, end_of_second: bool) -> list[Utterance]:
    """Three games; the first ended unheard (its completion and the second's opening drowned out) and, if
    `end_of_second`, the second's completion heard unsure, as hall audio at 5 dB gave them."""
    return [
        _caller(grammar, 0, "last ball called is required"),
        _caller(grammar, 5, "B seven"),
        _caller(grammar, 8, "B seven"),
        _caller(grammar, 30, "I twenty two"),
        _caller(grammar, 33, "I twenty two"),
        *([_caller(grammar, 50, "this game is completed", uncertain=True)] if end_of_second else []),
        _caller(grammar, 60, "last ball called is required"),
        _caller(grammar, 65, "N thirty three"),
        _caller(grammar, 68, "N thirty three"),
    ]


def test_a_game_whose_place_in_the_program_rests_on_unsure_speech_judges_its_plan_uncertain(
    grammar: Grammar,
) -> None:
    """The third game's "last ball called is required" opens the program's second game (last ball not
    required): the second's own opening was never heard. The caller's unsure words before it may have been a
    game ending unheard, so the contradiction with the plan is uncertain, naming them; without them it stands."""
    unsure = list(program_games(_three_games(grammar, end_of_second=True), THREE_PLANS))
    starts = [i for i in unsure if isinstance(i, GameStart)]
    assert [s.time for s in starts] == [0.0, 60.0]
    assert [(d.time, d.heard) for d in starts[1].doubts] == [(50.0, "this game is completed")]
    occasion, _ = check_inputs(unsure, RulePack.load(), grammar)
    (contradiction,) = [f for f in occasion.all_findings() if f.code == "last-ball-status-contradicts-plan"]
    assert contradiction.severity is Severity.UNCERTAIN
    assert [d.time for d in contradiction.doubts] == [50.0]

    heard_all = list(program_games(_three_games(grammar, end_of_second=False), THREE_PLANS))
    assert all(not i.doubts for i in heard_all if isinstance(i, GameStart))
    occasion, _ = check_inputs(heard_all, RulePack.load(), grammar)
    (contradiction,) = [f for f in occasion.all_findings() if f.code == "last-ball-status-contradicts-plan"]
    assert contradiction.severity is Severity.VIOLATION


def test_a_games_place_stays_unsure_in_the_games_after_it(grammar: Grammar) -> None:
    said = [
        *_three_games(grammar, end_of_second=True),
        _caller(grammar, 80, "this game is completed"),
        _caller(grammar, 90, "last ball called is required"),
    ]
    starts = [i for i in program_games(said, [*THREE_PLANS, THREE_PLANS[0]]) if isinstance(i, GameStart)]
    assert [s.time for s in starts] == [0.0, 60.0, 81.5]
    assert [d.time for d in starts[2].doubts] == [50.0]


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
            outcome.append(list(Listening(recognizers, grammar).inputs(steps)))
        except ValueError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "lock-step hung on a failed recognizer"
    assert isinstance(outcome[0], ValueError) and "1420251512" in str(outcome[0])


def test_a_resumed_occasion_carries_the_doubts_of_its_game_into_the_next(grammar: Grammar) -> None:
    """`listen --resume`: nobody listened between the record's end and now, so a game may have ended there; the
    game the record was in passes that doubt on to the next game the speech opens."""
    gap = Doubt(40.0, Role.CALLER, "", UNHEARD_END)
    said = [_caller(grammar, 60, "B seven"), _caller(grammar, 70, "this game is completed")]
    starts = [i for i in program_games(said, THREE_PLANS, begun=1, calls=2, doubts=(gap,)) if isinstance(i, GameStart)]
    assert [(s.time, s.plan, s.doubts) for s in starts] == [(71.5, THREE_PLANS[1], (gap,))]


class _Speaking(_Failing):
    """A recognizer (the port, for this one layer) in the middle of an utterance from its fourth chunk on."""

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        for k, chunk in enumerate(chunks):
            if k == 3:
                self.pending_since = chunk.start
        yield from ()


def test_the_lock_step_keeps_the_time_up_to_which_each_channel_has_given_out_what_it_heard(grammar: Grammar) -> None:
    """A `listen` stopped with Ctrl-C while listening lagged, or in the middle of speech, has not heard the end: the
    channel's `heard_until` stops where it has given out all it heard (the utterance under way begins there)."""
    silence = np.zeros(16000, dtype=np.int16)
    steps = zip(chunks(silence, 0.1), chunks(silence, 0.1), strict=True)
    heard_until: dict[Role, float] = {}
    inputs = lockstep_inputs(steps, [_Speaking(None), _Failing(None)], grammar, heard_until=heard_until)
    taken = [item for _, item in zip(range(1), inputs, strict=False)]
    for _ in range(6):  # the stream goes on under nobody's words but the floor's one call
        next(inputs, None)
    inputs.close()
    assert [u.text for u in taken if isinstance(u, Utterance)] == ["b seven"]
    assert heard_until[Role.CALLER] == pytest.approx(0.3)  # the caller speaking since 0.3 s: unheard from there
    assert heard_until[Role.FLOOR] >= 0.6  # the floor heard all it was given
