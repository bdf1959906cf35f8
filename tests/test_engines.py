"""The pocketsphinx recognizer on real audio: committed fixtures and human recordings."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from recorded import recordings_grammar, script_lines

from assistant.audio import AudioChunk, chunks, from_samples, read_wav
from assistant.endpoint import EndpointSettings
from assistant.engines import EngineError, Heard, make_recognizer
from assistant.engines.pocketsphinx_engine import (
    PocketsphinxRecognizer,
    _grammar_dictionary,
    _noise_table,
    _with_floor,
    read_extra_dict,
)
from assistant.grammar import DEFAULT_GRAMMAR, Grammar
from assistant.messages import Ball
from lab import REAL_AUDIO
from lab.bench.audio import Crowd, Voice, mix, speak

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "audio_fixtures"
REAL = REAL_AUDIO


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return recordings_grammar()


@pytest.fixture(scope="module")
def recognizer(grammar: Grammar) -> PocketsphinxRecognizer:
    r = make_recognizer("pocketsphinx", grammar)
    assert isinstance(r, PocketsphinxRecognizer)
    return r


def calls_of(grammar: Grammar, heard: list[Heard]) -> list[str]:
    """Balls in the confidently heard utterances."""
    out = []
    for h in heard:
        if not h.uncertain:
            out += [str(m.ball) for m in grammar.parse(h.text).meanings if m.intent == "call" and m.ball]
    return out


def test_demo_game_caller_channel(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "demo_game.wav")
    recognizer.set_step(tuple(grammar.intents))
    heard = list(recognizer.stream(chunks(rec.channels[0])))
    lines = [x for x in script_lines(FIXTURES / "demo_game.txt") if x[1] == "caller"]
    expected = [w for _, _, w in lines]
    assert len(heard) == len(expected)  # one utterance per line: the endpointer cut them all
    texts = [h.text for h in heard]
    right = sum(t == e for t, e in zip(texts, expected, strict=True))
    assert right >= len(expected) - 1, texts
    # every confidently heard call is the call that was made (uncertain ones may be missed)
    wrong = [(t, e) for t, e, h in zip(texts, expected, heard, strict=True) if not h.uncertain and t != e]
    assert wrong == []
    for h, (start, _, _) in zip(heard, lines, strict=True):
        assert h.start == pytest.approx(start, abs=0.5)


def test_demo_game_floor_channel_claim_step(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "demo_game.wav")
    recognizer.set_step(grammar.step_intents("claim"))
    heard = list(recognizer.stream(chunks(rec.channels[1])))
    assert heard[0].text == "bingo" and not heard[0].uncertain
    card = grammar.parse(heard[1].text).meanings
    assert card and card[0].intent == "card" and card[0].manufacturer == "142"
    assert calls_of(grammar, heard[2:]) == ["B7", "I22", "N38", "G51", "O64"]


def test_calls_fixture(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "calls.wav")
    recognizer.set_step(grammar.step_intents("calling"))
    heard = list(recognizer.stream(chunks(rec.channels[0])))
    expected = [w for _, _, w in script_lines(FIXTURES / "calls.txt")]
    assert len(heard) == len(expected)
    right = sum(h.text == e for h, e in zip(heard, expected, strict=True))
    assert right >= 5, [h.text for h in heard]


def test_chatter_gives_no_confident_call(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "chatter.wav")
    recognizer.set_step(grammar.step_intents("calling"))
    heard = list(recognizer.stream(chunks(rec.channels[0])))
    assert len(heard) == 4
    assert calls_of(grammar, heard) == []


def test_human_sentences_are_not_confident_calls(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    """Sense and Sensibility read aloud (pocketsphinx test data): ordinary speech, never a call."""
    recognizer.set_step(grammar.step_intents("calling"))
    false_calls = []
    for path in sorted((REAL / "pocketsphinx").glob("sense_and_sensibility*.wav")):
        heard = recognizer.decode(read_wav(path).channels[0])
        false_calls += calls_of(grammar, [heard])
    assert false_calls == []


def test_human_numbers_an4(recognizer: PocketsphinxRecognizer) -> None:
    """AN4 census speakers saying numbers, under a number-only grammar."""
    recognizer.set_step(["number-only"])
    heard = [
        recognizer.decode(read_wav(REAL / "an4" / f"{name}.wav").channels[0])
        for name in ("cen3-fjdn-b", "cen3-mjwl-b", "cen3-mtxj-b")
    ]
    assert [h.text for h in heard] == ["thirty three", "nineteen", "one hundred"]
    assert sum(not h.uncertain for h in heard) >= 2  # measured: 'thirty three' comes out uncertain (0.44)
    recognizer.set_step(["digits-only"])
    strings = {"an4/cen6-ffmm-b.wav": "one five two one seven", "pocketsphinx/cards_004.wav": "five five"}
    strings["pocketsphinx/tidigits_dhd_2934z.wav"] = "two nine three four zero"
    heard_strings = {name: recognizer.decode(read_wav(REAL / name).channels[0]).text for name in strings}
    right = [name for name, text in strings.items() if heard_strings[name] == text]
    assert len(right) >= 2, heard_strings  # measured: 2 of 3 (cen6 gets an inserted "two" over the noise floor)


def test_human_digits_fsdd_at_8k(recognizer: PocketsphinxRecognizer) -> None:
    """FSDD digits taken down to 8 kHz telephone band and converted back: a hard case; measured 61% right."""
    recognizer.set_step(["digits-only"])
    manifest = [json.loads(line) for line in (REAL / "manifest.jsonl").read_text().splitlines()]
    items = [m for m in manifest if m["path"].startswith("fsdd/")][::3]
    right = 0
    for m in items:
        wideband = read_wav(REAL / m["path"]).channels[0]
        converted = from_samples(wideband[::2], 8000).channels[0]
        heard = recognizer.decode(converted)
        right += heard.text == m["text"] and not heard.uncertain
    assert right / len(items) >= 0.5


def test_step_switching_changes_what_is_heard(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "demo_game.wav")
    line = next(x for x in script_lines(FIXTURES / "demo_game.txt") if x[2] == "valid bingo")
    cut = rec.channels[0][int((line[0] - 0.3) * 16000) : int((line[0] + 1.6) * 16000)]
    recognizer.set_step(grammar.step_intents("claim"))
    assert recognizer.decode(cut).text == "valid bingo"
    recognizer.set_step(grammar.step_intents("calling"))
    assert recognizer.decode(cut).text != "valid bingo"
    recognizer.set_step(grammar.step_intents("claim"))
    assert recognizer.decode(cut).text == "valid bingo"


def test_speech_barely_above_the_crowd_is_never_sure(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    """Crowd babble at 15 dB under the calls: the endpointer measures how far each utterance stood above it,
    and below min_snr_db (30) a hearing is uncertain however confident the decoder was."""
    calls = read_wav(FIXTURES / "calls.wav").channels[0]
    recognizer.set_step(grammar.step_intents("calling"))
    clean = list(recognizer.stream(chunks(calls)))
    assert all(h.snr_db is not None and h.snr_db > 40 for h in clean)
    assert sum(not h.uncertain for h in clean) >= 5
    loud = mix(calls, 15.0, random.Random(3), Crowd(random.Random(4)))
    noisy = list(recognizer.stream(chunks(np.clip(loud, -32768, 32767).astype(np.int16))))
    assert noisy and all(h.snr_db is not None and h.snr_db < 30 for h in noisy)
    assert all(h.uncertain for h in noisy)
    assert recognizer.settings.min_snr_db == 30.0


def test_results_arrive_while_audio_streams(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "calls.wav")
    recognizer.set_step(grammar.step_intents("calling"))
    fed: list[float] = []

    def source() -> Iterator[AudioChunk]:
        for chunk in chunks(rec.channels[0]):
            fed.append(chunk.end)
            yield chunk

    stream = recognizer.stream(source())
    first = next(stream)
    assert fed[-1] < rec.duration / 2  # the first call came out with most of the audio still unread
    assert first.end < fed[-1]
    assert 0.0 < first.latency < 2.0
    stream.close()


def test_missing_pronunciation_fails_at_load(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_GRAMMAR.read_text(encoding="utf-8"))
    data["intents"]["odd"] = {"templates": ["zyxqwv"]}
    with pytest.raises(EngineError, match=r"no pronunciation for grammar words \['zyxqwv'\]"):
        PocketsphinxRecognizer(Grammar(data))


def test_bad_extra_dict_line(tmp_path: Path, grammar: Grammar) -> None:
    bad = tmp_path / "extra.dict"
    bad.write_text("bingos\n")
    with pytest.raises(EngineError, match=r"extra\.dict:1: expected"):
        PocketsphinxRecognizer(grammar, extra_dict=bad)


def test_digitally_silent_speech_is_heard_over_the_noise_floor(
    recognizer: PocketsphinxRecognizer, grammar: Grammar
) -> None:
    """espeak writes exact zeros between and inside words; without the floor 'eight' came out 'nine' or the
    letter was lost (B8 -> 'b nine', G48 -> 'b fourteen', I28 -> 'b nine'), measured with noise_floor=0."""
    recognizer.set_step(grammar.step_intents("calling"))
    pad = np.zeros(4000, dtype=np.int16)
    heard = {}
    for voice in ("en-us", "en-gb"):
        for number in (8, 28, 48, 58):
            said = speak(grammar.spoken(Ball(number)), Voice(voice, 150))
            heard[voice, number] = recognizer.decode(np.concatenate([pad, said, pad]))
    wrong = {
        k: (h.text, round(h.confidence, 2)) for k, h in heard.items() if h.text != grammar.spoken(Ball(k[1])).lower()
    }
    assert not wrong
    assert sum(h.uncertain for h in heard.values()) <= 1  # measured: all sure (0.70-0.95)


def test_the_noise_floor_is_the_same_however_the_audio_is_cut() -> None:
    """The floor is a fixed table indexed by sample position: chunks get what the whole would, every run."""
    table = _noise_table(60.0)
    silence = np.zeros(70_000, dtype=np.int16)
    whole = _with_floor(silence, table, 0)
    parts = np.concatenate([_with_floor(silence[:12_345], table, 0), _with_floor(silence[12_345:], table, 12_345)])
    assert np.array_equal(whole, parts) and np.array_equal(whole, _with_floor(silence, _noise_table(60.0), 0))
    assert 55 < float(np.std(whole)) < 65 and np.count_nonzero(whole) > 0.95 * len(whole)
    assert np.array_equal(_with_floor(silence, None, 0), silence)


def test_extra_dict_adds_variants_to_words_cmudict_has(tmp_path: Path) -> None:
    cmudict = tmp_path / "cmudict.dict"
    cmudict.write_text("o OW\nb B IY\nzebra Z IY B R AH\n")
    extra = tmp_path / "extra.dict"
    extra.write_text("# comment\nbingos B IH NG G OW Z\no(2) AH W  # British oh\no OW\n")
    words = _grammar_dictionary(cmudict, {"o", "b", "bingos"}, read_extra_dict(extra))
    assert words == {"o": ["OW", "AH W"], "b": ["B IY"], "bingos": ["B IH NG G OW Z"]}


def test_empty_utterance_and_unknown_engine(recognizer: PocketsphinxRecognizer, grammar: Grammar) -> None:
    with pytest.raises(EngineError, match="empty utterance"):
        recognizer.decode(np.zeros(0, dtype=np.int16))
    with pytest.raises(EngineError, match="unknown engine: 'kaldi'"):
        make_recognizer("kaldi", grammar)
    with pytest.raises(EngineError, match="unknown intents"):
        recognizer.set_step(["no-such-intent"])


def test_an_utterance_closed_at_its_longest_is_heard_unsure(grammar: Grammar) -> None:
    """As with whisper: an utterance the endpointer closed at `max_utterance` may hold more than was read."""
    said = read_wav(FIXTURES / "calls.wav").channels[0][: int(2.2 * 16000)]  # "b seven" at 0.6 s
    whole = PocketsphinxRecognizer(grammar)
    whole.set_step(grammar.step_intents("calling"))
    assert [(h.text, h.uncertain) for h in whole.stream(chunks(said))] == [("b seven", False)]
    limited = PocketsphinxRecognizer(grammar, endpoint=replace(EndpointSettings(), max_utterance=0.5))
    limited.set_step(grammar.step_intents("calling"))
    heard = list(limited.stream(chunks(said)))
    assert heard and heard[0].uncertain, heard
