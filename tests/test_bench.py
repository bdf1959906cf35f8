"""The accuracy benchmark's machinery on a tiny real run: espeak audio, babble, the real pocketsphinx engine."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from assistant.bench import audio as gen
from assistant.bench.__main__ import main
from assistant.bench.accuracy import (
    COLUMNS,
    BenchError,
    Hearing,
    Plan,
    engine_options,
    fuse,
    outcome,
    real_sets,
    run,
    table_rows,
)


def test_babble_is_mixed_at_the_asked_snr() -> None:
    rng = random.Random(1)
    crowd = gen.Crowd(rng, talkers=4, pool_size=6)
    speech = gen.speak("B seven", gen.Voice("en-us", 165))
    for snr in (20.0, 5.0):
        clean = gen.add_babble(speech.astype(np.float64), gen.power(speech), None, random.Random(2), None)
        noisy = gen.add_babble(speech.astype(np.float64), gen.power(speech), snr, random.Random(2), crowd)
        noise = noisy.astype(np.float64) - clean.astype(np.float64)
        measured = 10 * np.log10(gen.power(speech) / gen.power(noise))
        assert abs(measured - snr) < 1.5


def test_stream_truth_is_where_the_speech_is() -> None:
    rng = random.Random(3)
    items = [gen.Item("B seven", "call"), gen.Item("O sixty one", "call")]
    stream = gen.build_stream("s", items, [gen.Voice("en-gb", 165)] * 2, None, rng, None)
    first, second = stream.segments
    assert 1.0 - 1e-9 <= first.start < first.end < second.start < second.end <= stream.duration
    assert second.start - first.end >= 1.0  # a 1-2 s gap of background only
    inside = stream.samples[int(first.start * gen.RATE) : int(first.end * gen.RATE)].astype(np.float64)
    gap = stream.samples[int(first.end * gen.RATE) + 800 : int(second.start * gen.RATE) - 800].astype(np.float64)
    assert np.sqrt(np.mean(inside**2)) > 100 * np.sqrt(np.mean(gap**2))


def _h(calls: list[int], uncertain: bool = False) -> Hearing:
    return Hearing(0.0, 1.0, "", 0.9, uncertain, 1.1, calls)


def test_outcomes_and_fusing_the_two_hearings() -> None:
    assert outcome([_h([7])], 7) == ("right", 7)
    assert outcome([_h([8])], 7) == ("wrong", 8)
    assert outcome([_h([7], uncertain=True)], 7) == ("uncertain", None)
    assert outcome([], 7) == ("missed", None)
    assert fuse(("right", 7), ("missed", None), 7) == "right"
    assert fuse(("right", 7), ("wrong", 8), 7) == "uncertain"
    assert fuse(("wrong", 8), ("wrong", 8), 7) == "wrong"


def test_real_sets_come_from_the_manifest() -> None:
    sets = real_sets()
    assert len(sets["fsdd digit"]) == 300
    assert ("an4 number" in sets) and all(text for _, text in sets["an4 number"])


def test_bad_options_are_one_line_errors() -> None:
    with pytest.raises(BenchError, match="option group"):
        engine_options("pocketsphinx", [("nonsense.beam", 1.0)])
    assert main(["accuracy", "--voices", "0", "--engine", "pocketsphinx"]) == 2


def test_tiny_run_gives_a_full_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BINGO_VOSK_MODEL", raising=False)
    plan = Plan(
        engines=("pocketsphinx", "vosk"),
        voices=1,
        rates=(165,),
        conditions=("clean",),
        calls=5,
        phrases=False,
        chatter_seconds=10.0,
        real=False,
        workers=1,
    )
    scores, notes = run(plan, tmp_path, log=lambda _: None)
    assert [s.engine for s in scores] == ["pocketsphinx"]
    assert any("vosk" in n for n in notes)
    (row,) = table_rows(scores)
    assert len(row) == len(COLUMNS)
    values = dict(zip(COLUMNS, row, strict=True))
    assert values["calls"] == "10"  # 5 balls, each said twice
    shares = [float(values[k]) for k in ("right %", "wrong %", "uncertain %", "missed %")]
    assert abs(sum(shares) - 100.0) < 0.2
    assert values["right %"] != "0.0"  # clean espeak calls: the real engine gets some right
    assert 0 < float(values["RTF"]) < 1.0
    assert 20 < float(values["peak MB"]) < 2000
    assert float(values["load s"]) > 0
    assert 0 < float(values["latency p50 ms"]) <= float(values["latency p95 ms"]) < 10000
