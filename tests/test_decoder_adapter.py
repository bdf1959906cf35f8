"""The decoder adapter: its data, the torch decoder it is trained in, and the numpy decoder it ends in."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assistant.engines import make_recognizer
from assistant.engines.whisper_engine import WhisperRecognizer, WhisperSettings
from assistant.grammar import Grammar
from assistant.messages import Ball
from lab import decoder_adapter

pytestmark = [pytest.mark.engine, pytest.mark.training]

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def recognizer() -> WhisperRecognizer:
    found = make_recognizer("whisper", Grammar.load(), None)
    assert isinstance(found, WhisperRecognizer)
    return found


@pytest.fixture(scope="module")
def made(recognizer: WhisperRecognizer) -> dict[str, np.ndarray]:
    """One espeak voice's calls and other sayings, made and encoded as `python -m lab.train decoder` does."""
    part = decoder_adapter._job(("decoder", "espeak:en-us+m3@160~50", 0, 7, 3, 4))
    assert part["x"].shape == (len(part["words"]), 500, 512)
    return part


def test_the_words_are_written_as_the_engine_s_prompt_writes_them() -> None:
    assert decoder_adapter.written("B forty four") == " B forty-four."
    assert decoder_adapter.written("N thirty") == " N thirty."
    assert decoder_adapter.written("i am reading the correct number") == " I am reading the correct number."
    assert decoder_adapter.written("are there any other bingos?") == " Are there any other bingos?"
    assert decoder_adapter.written("") == ""


def test_the_examples_say_what_their_words_say(made: dict[str, np.ndarray]) -> None:
    kinds = made["kind"].tolist()
    assert kinds[:3] == ["call", "call", "call"] and "babble" in kinds
    grammar = Grammar.load()
    for words, label, kind in zip(made["words"], made["label"], kinds, strict=True):
        if kind == "call":
            (meaning,) = grammar.parse(str(words), ("call",)).meanings
            assert meaning.ball is not None and meaning.ball.number == label
        elif kind == "babble":
            assert str(words) == "" and label == 0
        else:
            assert str(words) and label == 0


def test_the_sayings_of_the_rule_and_calls_naming_no_ball_are_sets_of_their_own() -> None:
    """The second set of each voice: a claim and a card's numbers a quarter each, the rest the rule's phrases, each
    parsed by the grammar as the intent it is (the adapter heard the floor's "bingo" and card as calls
    when its data had under two phrases a voice). The third: calls naming no ball, written as said (it wrote the
    bad call "B thirty two" as "b thirteen" when it had heard real balls only)."""
    grammar = Grammar.load()
    part = decoder_adapter._job(("said", "espeak:en-us+m3@160~50", 0, 7, 0, 8))
    assert part["x"].shape == (8, 500, 512) and set(part["label"].tolist()) == {0}
    intents = [[m.intent for m in grammar.parse(str(w), tuple(grammar.intents)).meanings] for w in part["words"]]
    assert intents[0] == intents[4] == ["bingo"]
    assert intents[1] == intents[5] == ["card"]
    assert all(i and "call" not in i for i in intents), intents
    plan = decoder_adapter.plan(decoder_adapter.SEED)
    assert {job[0] for job in plan["train-said"]} == {"said"}
    assert not any(job[1].startswith("real:") for job in plan["train-said"])  # they say digits only
    assert any(job[1].startswith("real:") for job in plan["train"])
    bad = decoder_adapter._job(("misnamed", "espeak:en-us+m3@160~50", 0, 7, 0, 3))
    assert set(bad["label"].tolist()) == {0} and set(bad["kind"].tolist()) == {"misnamed call"}
    for words in bad["words"].tolist():
        letter, number = words.split(" ", 1)
        spoken = next(n for n in range(1, 76) if grammar.number_words(n) == number)
        assert Ball(spoken).letter != letter, words  # a letter with another letter's number
    assert {job[0] for job in plan["train-misnamed"]} == {"misnamed"}
    joined = decoder_adapter.joined({"train": part, "train-said": part, "train-misnamed": bad}, "train")
    assert len(joined["words"]) == 19 and joined["x"].shape[0] == 19


def test_the_torch_decoder_is_the_numpy_decoder_and_its_updates_merge_into_it(
    recognizer: WhisperRecognizer, made: dict[str, np.ndarray]
) -> None:
    decoder = recognizer._search.decoder
    model = decoder_adapter.torch_decoder(decoder, rank=4, alpha=8.0)
    prompt = decoder_adapter.prompts(recognizer)[0]
    tokens = np.array([[*prompt, *recognizer._tokenizer.encode(" B seven.", add_special_tokens=False).ids]])
    memory = made["x"][0].astype(np.float32)
    with torch.no_grad():
        ours = model(torch.from_numpy(tokens), torch.from_numpy(memory[None]))[0, -1].numpy()
    theirs, _ = decoder.run(tokens, decoder.cross(memory))
    assert np.abs(ours - theirs[0]).max() < 1e-3
    # Some updates, then the same sentence through the numpy decoder with them merged.
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn(p.shape, generator=generator) * 0.02)
        moved = model(torch.from_numpy(tokens), torch.from_numpy(memory[None]))[0, -1].numpy()
    adapted = decoder.adapted(model.deltas())
    merged, _ = adapted.run(tokens, adapted.cross(memory))
    assert np.abs(moved - ours).max() > 1e-2  # the updates changed what it writes
    assert np.abs(moved - merged[0]).max() < 1e-3


def test_training_teaches_the_decoder_the_words_said(
    recognizer: WhisperRecognizer, made: dict[str, np.ndarray], tmp_path: Path
) -> None:
    data = {"train": made, "valid": made}
    deltas, judged = decoder_adapter.fit(recognizer, data, seed=3, epochs=4, log=lambda _: None)
    assert judged[-1]["loss"] < judged[0]["loss"]
    path = tmp_path / "adapter.npz"
    np.savez(path, **deltas)
    adapted = make_recognizer("whisper", Grammar.load(), None, settings=WhisperSettings(adapter=str(path)))
    assert isinstance(adapted, WhisperRecognizer)
    assert adapted._search.decoder is not recognizer._search.decoder
    assert not np.array_equal(recognizer._search.decoder.layers[0].q[0], adapted._search.decoder.layers[0].q[0])
    half = make_recognizer(
        "whisper", Grammar.load(), None, settings=WhisperSettings(adapter=str(path), adapter_strength=0.5)
    )
    assert isinstance(half, WhisperRecognizer)
    own, full, halved = (r._search.decoder.layers[0].ff2[0] for r in (recognizer, adapted, half))
    assert np.abs(full - own).max() > 1e-4
    np.testing.assert_allclose(halved - own, (full - own) / 2, atol=1e-5)


def test_the_prompts_are_the_engine_s_own(recognizer: WhisperRecognizer) -> None:
    found = decoder_adapter.prompts(recognizer)
    calling = [tuple(p.tokens) for p in recognizer.prompt(Grammar.load().step_intents("calling"))]
    assert set(calling) <= set(found)
    assert all(p[0] == recognizer._previous and p[-4:] == tuple(recognizer._start) for p in found)


def test_the_training_run_makes_its_sets_once_and_writes_an_adapter_the_engine_reads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def small(seed: int) -> dict[str, list[decoder_adapter.Job]]:
        return {
            "train": [("decoder", "espeak:en-us+m3@160~50", 0, seed, 2, 1)],
            "valid": [("decoder", "espeak:en-gb+f2@175~60", 0, seed + 1, 1, 1)],
        }

    monkeypatch.setattr(decoder_adapter, "plan", small)
    said: list[str] = []
    out = tmp_path / "adapter.npz"
    table = decoder_adapter.run(5, 1, 1, tmp_path / "sets", out, "test", said.append)
    assert table.splitlines()[0].startswith("| after epoch |") and len(table.splitlines()) == 4
    assert (tmp_path / "sets" / "decoder-train.npz").is_file() and any("making" in line for line in said)
    with np.load(out) as found:
        meta = json.loads(found["meta"].tobytes())
        assert meta["data"]["train"] == {"examples": 4, "voices": 1} and meta["seed"] == 5
    recognizer = make_recognizer("whisper", Grammar.load(), None, settings=WhisperSettings(adapter=str(out)))
    assert isinstance(recognizer, WhisperRecognizer)
    said.clear()
    decoder_adapter.run(5, 1, 1, tmp_path / "sets", tmp_path / "again.npz", "test", said.append)
    assert not any("making" in line for line in said)  # the sets were kept
