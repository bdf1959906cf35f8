"""The hall set's held-out neural voices (Piper's joe, hibari's heart): they speak, the same text is the same audio,
the real recognizer hears their calls, and nothing trains or tunes on them."""

from __future__ import annotations

import numpy as np
import pytest
from recorded import recordings_grammar

from assistant.audio import chunks
from assistant.engines import make_recognizer
from lab.bench import hallset, neural_voices

pytestmark = pytest.mark.training

pytest.importorskip("piper")
pytest.importorskip("hibari")


@pytest.mark.parametrize("voice", hallset.HELD_OUT_NEURAL)
def test_a_held_out_neural_voice_says_a_call_the_same_way_twice_and_whisper_hears_it(voice: str) -> None:
    grammar = recordings_grammar()
    engine = make_recognizer("whisper", grammar)
    engine.set_step(grammar.step_intents("calling"))
    kind, _, name = voice.partition(":")
    clip = hallset.say("N, forty four.", voice)
    assert clip.dtype == np.int16 and 0.5 < len(clip) / 16000 < 3.0
    assert np.array_equal(clip, neural_voices.say.__wrapped__(kind, name, "N, forty four."))
    faster = neural_voices.say(kind, name.replace("~1.0", "~1.3"), "N, forty four.")
    assert len(faster) < len(clip)
    padded = np.concatenate([np.zeros(8000, np.int16), clip, np.zeros(16000, np.int16)])
    heard = [h.text for h in engine.stream(chunks(padded, 0.1))]
    assert heard == ["n forty four"], (voice, heard)


def test_a_bad_neural_voice_is_one_clear_error() -> None:
    for bad, message in (
        ("piper:nobody", "unknown piper voice"),
        ("hibari:emma", "unknown hibari voice"),  # a download, not in the package
        ("piper:joe~fast", "the speed is a number"),
        ("hibari:heart~9", "between 0.5 and 2"),
    ):
        with pytest.raises(hallset.HallSetError, match=message):
            hallset.say("b seven", bad)


def test_no_training_or_tuning_set_holds_a_held_out_voice() -> None:
    from lab import head_data

    kinds = {v.partition(":")[0] for v in hallset.HELD_OUT_NEURAL}
    assert kinds == set(neural_voices.KINDS)
    for name, voices in hallset.SETS.items():
        if not name.startswith("held-out"):
            assert not {v.partition(":")[0] for v in voices} & kinds, name
    train, valid = head_data.training_voices(head_data.SEED)
    neural_train, neural_valid = head_data.kokoro_voices(head_data.SEED)
    every = [*train, *valid, *neural_train, *neural_valid]
    assert not any(v.partition(":")[0] in kinds for v in every)
