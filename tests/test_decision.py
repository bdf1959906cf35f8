"""The hearing decision: evidence in, one ball and a calibrated probability out; its fit read back from a dump."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from assistant.engines import decision
from assistant.engines.base import EngineError
from lab.bench import decision as lab


def head_for(ball: int, q: float) -> list[float]:
    rest = (1.0 - q) / decision.BALLS
    post = [rest] * (decision.BALLS + 1)
    post[ball] = q + rest
    return post


def test_the_ball_is_what_the_listeners_favour_together_and_neither_vetoes_alone() -> None:
    # the decoder leans to B 8 a little, the head is sure of B 7: together, B 7
    both = decision.Evidence({7: 0.45, 8: 0.55}, 8, 0.55, 1.0, head_for(7, 0.9), 1.5)
    assert decision.features(both)[0] == 7
    # the decoder heard no call: the head's ball, with the decoder's word on it at the floor
    alone = decision.Evidence({}, None, 0.0, 0.0, head_for(33, 0.8), 1.5)
    ball, row, _ = decision.features(alone)
    assert ball == 33 and row[decision.FEATURES.index("decoder_agrees")] == 0.0
    # no evidence at all: no ball
    assert decision.features(decision.Evidence({}, None, 0.0, 0.0, None, 1.0))[0] is None


def test_the_other_saying_is_evidence_of_the_probability_never_of_the_ball() -> None:
    said = decision.Evidence({64: 0.9, 66: 0.1}, 64, 0.9, 1.0, head_for(64, 0.7), 1.4)
    ball, row, _ = decision.features(said)
    paired = decision.Evidence(said.decoder_balls, 64, 0.9, 1.0, said.head, 1.4, pair={64: 0.95})
    other = decision.Evidence(said.decoder_balls, 64, 0.9, 1.0, said.head, 1.4, pair={66: 0.99})
    assert decision.features(paired)[0] == decision.features(other)[0] == ball == 64
    agrees = decision.FEATURES.index("pair_agrees")
    assert decision.features(paired)[1][agrees] == 1.0 and decision.features(other)[1][agrees] == 0.0
    assert row[agrees] == 0.0


def dump_rows(seed: int, hearings: int) -> list[dict[str, object]]:
    """Dumped hearings of calls said twice, heard well or badly: the decoder and head right together most of the
    time, one of them or both wrong otherwise, and hearings of babble with no call under them."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    t = 0.0
    for k in range(hearings):
        truth = rng.randrange(1, 76) if k % 10 else None
        good = truth is not None and rng.random() < 0.8
        said = truth if good else rng.randrange(1, 76)
        q = rng.uniform(0.6, 0.99) if good else rng.uniform(0.05, 0.6)
        posterior = head_for(said, q)
        rows.append(
            {
                "set": "s",
                "voice": "v",
                "snr": None if k < hearings // 2 else 10.0,
                "layout": "continuous",
                "start": t,
                "end": t + 1.5,
                "call": said,
                "truth": truth,
                "sure": good,
                "posterior": {str(i): p for i, p in enumerate(posterior)},
                "decoder": {
                    "call": said,
                    "confidence": q,
                    "likeness": 1.0,
                    "balls": {str(said): q, str(said % 75 + 1): 1 - q},
                },
            }
        )
        t += 2.5
    return rows


def test_the_fit_keeps_sure_and_wrong_at_its_operating_point_and_reports_both_decisions(tmp_path: Path) -> None:
    fit = tmp_path / "fit.jsonl"
    fit.write_text("".join(json.dumps(r) + "\n" for r in dump_rows(1, 2000)), encoding="utf-8")
    held = tmp_path / "held.jsonl"
    held.write_text("".join(json.dumps(r) + "\n" for r in dump_rows(2, 600)), encoding="utf-8")
    out = tmp_path / "call_decision.json"
    assert lab.main(["--fit", str(fit), "--report", str(held), "--out", str(out)]) == 0
    model = decision.load(out)
    assert model is not None
    found = [(r, b, f) for r, b, f in lab.examples(lab.load(fit)) if b is not None]
    p = np.array([model.probability(f) for _, _, f in found])
    right = np.array([b == r["truth"] for r, b, _ in found])
    sure = p >= model.sure_at
    assert (sure & ~right).sum() <= lab.SURE_WRONG * len(found)  # the operating point holds on the fit data
    assert (sure & right).sum() > 0.5 * right.sum()  # and it is no "never sure"
    assert p[right].mean() > p[~right].mean()
    text = lab.table(lab.load(held), model)
    assert "| s | clean |" in text and "| s | 10 dB |" in text
    assert "fitted_on" in json.loads(out.read_text())


def test_a_decision_made_for_other_features_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "d.json"
    bad.write_text(json.dumps({"features": ["x"], "mean": [0], "std": [1], "weights": [0], "bias": 0, "sure_at": 1}))
    with pytest.raises(EngineError, match="other features"):
        decision.load(bad)
    assert decision.load(tmp_path / "none.json") is None


def test_the_decision_needs_no_engine_and_remembers_a_call_until_reset() -> None:
    """The engine reads, the decision decides: `engines.decision` loads without the Whisper engine, and a `Decider`
    made from the settings and the grammar alone (no model) weighs a call's second saying with its first, until a
    new stream resets it."""
    import subprocess
    import sys

    from assistant.engines.base import Heard
    from assistant.engines.whisper_settings import WhisperSettings
    from assistant.grammar import Grammar

    code = "import sys, assistant.engines.decision; print(sorted(m for m in sys.modules if 'whisper_engine' in m))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
    decider = decision.Decider(WhisperSettings(), Grammar.load())
    first = decision.Reading("n thirty nine", 0.7, {39: 0.92, 31: 0.08}, 39)
    second = decision.Reading("n thirty nine", 0.8, {39: 0.95, 31: 0.05}, 39)
    assert decider.fuse(Heard(1.0, 2.0, "n thirty nine", 0.7, True), first).uncertain
    paired = decider.fuse(Heard(3.0, 4.0, "n thirty nine", 0.8, True), second)
    assert not paired.uncertain and paired.confidence > 0.9  # 0.92 x 0.95 against 0.08 x 0.05
    decider.reset()
    alone = decider.fuse(Heard(3.0, 4.0, "n thirty nine", 0.8, True), second)
    assert alone.uncertain and alone.confidence == pytest.approx(0.8)
