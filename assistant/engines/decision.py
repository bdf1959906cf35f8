"""The hearing decision: the listeners' evidence about one call, turned into one ball and one calibrated probability.

Each listener gives evidence as data (`Evidence`): the constrained decoder's N-best share of each ball and its
confidence, the call head's posterior over no call and the balls, the utterance's length, and the other saying of
the same call when there was one. One place decides:

- the ball is the one the saying's own evidence favours: the decoder's N-best and the head's posterior multiplied
  (each floored, so that neither can veto alone). The other saying of the call does not choose the ball (a caller
  who repeats a call as another ball must be heard saying it, A(5)); whether it agrees is evidence of the
  probability;
- the probability that this ball is what was said comes from a logistic model over what made the choice (its
  share, each listener's word on it, whether they agree, the length, whether more words could make another ball),
  fitted on human voices (`python -m lab.train decision`), never on the voices it is reported on;
- the hearing is sure from one operating point (`sure_at`), chosen on the fit's own data so that at most one sure
  hearing in a thousand is wrong there.

The model is a small JSON file committed with the command, data and seed that remade it (`DECISION`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from .base import EngineError

DECISION = Path(__file__).with_name("call_decision.json")
"""The fitted decision (`python -m lab.train decision`), committed with what made it."""
FLOOR = 1e-3
"""The least share a listener gives any ball: one listener's silence about a ball is a doubt, not a veto."""
BALLS = 75
FEATURES = (
    "fused_share",
    "decoder_share",
    "head_share",
    "head_no_call",
    "decoder_certainty",
    "decoder_likeness",
    "decoder_agrees",
    "head_agrees",
    "seconds",
    "goes_on",
    "pair_agrees",
    "pair_share",
)
"""What the probability is made of (`features`, in this order). `decoder_certainty` is -ln(1 - the decoder's
confidence) when it read the favoured ball: 0.85 and 0.96 are far apart in what they say, not 0.11."""


def goes_on(number: int) -> bool:
    """Whether more words could make this call another: "G fifty" (G 55 to come), "B one" ("B one two")."""
    return number == 1 or (number >= 20 and number % 10 == 0)


@dataclass(frozen=True)
class Evidence:
    """What the listeners heard in one utterance on a step that takes calls."""

    decoder_balls: Mapping[int, float]
    """The decoder's N-best share of each ball it read (empty when it read no single call)."""
    decoder_call: int | None
    decoder_confidence: float
    decoder_likeness: float
    head: Sequence[float] | None
    """The call head's posterior: index 0 no call, then balls 1-75 (None: the engine has no head)."""
    seconds: float
    pair: Mapping[int, float] | None = None
    """The fused posterior over balls of the other saying of this call, when it came within the fuse window."""


@dataclass(frozen=True)
class Verdict:
    """The ball the evidence favours (None: no ball), the probability it is what was said, and the posterior."""

    ball: int | None
    probability: float
    posterior: Mapping[int, float]


def posterior(evidence: Evidence, with_pair: bool = True) -> dict[int, float]:
    """The balls' posterior from the listeners together (the head's no-call mass left out: it is a feature)."""
    if not evidence.decoder_balls and evidence.head is None:
        return {}
    scores = np.ones(BALLS + 1)
    scores[0] = 0.0
    if evidence.decoder_balls:
        share = np.full(BALLS + 1, FLOOR)
        for ball, q in evidence.decoder_balls.items():
            share[ball] = max(FLOOR, q)
        scores *= share
    if evidence.head is not None:
        scores[1:] *= np.maximum(np.asarray(evidence.head[1:], dtype=np.float64), FLOOR)
    if with_pair and evidence.pair:
        prior = np.full(BALLS + 1, FLOOR)
        for ball, q in evidence.pair.items():
            prior[ball] = max(FLOOR, q)
        scores *= prior
    total = float(scores.sum())
    return {b: float(scores[b] / total) for b in range(1, BALLS + 1) if scores[b] / total >= 1e-4}


def features(evidence: Evidence) -> tuple[int | None, list[float], dict[int, float]]:
    """The ball the evidence favours, what its probability is made of (FEATURES), and the posterior."""
    fused = posterior(evidence, with_pair=False)
    if not fused:
        return None, [], {}
    ball = max(fused, key=lambda b: fused[b])
    head = evidence.head
    head_share = float(head[ball]) if head is not None else 0.0
    head_top = int(np.argmax(head)) if head is not None else None
    pair = evidence.pair or {}
    pair_top = max(pair, key=lambda b: pair[b]) if pair else None
    row = [
        np.log(max(fused[ball], 1e-6)),
        np.log(max(evidence.decoder_balls.get(ball, 0.0), FLOOR)),
        np.log(max(head_share, FLOOR)),
        float(head[0]) if head is not None else 0.0,
        -np.log(max(1e-3, 1.0 - evidence.decoder_confidence)) if evidence.decoder_call == ball else 0.0,
        evidence.decoder_likeness if evidence.decoder_call == ball else 0.0,
        float(evidence.decoder_call == ball),
        float(head_top == ball),
        min(evidence.seconds, 6.0),
        float(goes_on(ball)),
        float(pair_top == ball),
        np.log(max(pair.get(ball, 0.0), FLOOR)) if pair else 0.0,
    ]
    return ball, [float(v) for v in row], fused


@dataclass(frozen=True)
class Logistic:
    """A logistic model of "this hearing is right" over standardised features, and the probability from which the
    hearing is sure (the engine's call confidence and the fitted decision are both one)."""

    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray
    bias: float
    sure_at: float

    def probability(self, row: Sequence[float]) -> float:
        z = float(((np.asarray(row, dtype=np.float64) - self.mean) / self.std) @ self.weights + self.bias)
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))))

    def scaled(self, probability: float, sure: float) -> float:
        """`probability` on an engine's confidence scale, monotone, with `sure_at` landing on `sure`."""
        if probability >= self.sure_at:
            return sure + (1.0 - sure) * (probability - self.sure_at) / max(1e-9, 1.0 - self.sure_at)
        return sure * probability / max(1e-9, self.sure_at)

    def confidence(self, row: Sequence[float], sure: float) -> float:
        """The probability of `row` on the engine's scale (`scaled`)."""
        return self.scaled(self.probability(row), sure)


@dataclass(frozen=True)
class Decision(Logistic):
    """The fitted decision: the logistic over FEATURES, and the ball the evidence favours."""

    def decide(self, evidence: Evidence) -> Verdict:
        ball, row, fused = features(evidence)
        if ball is None:
            return Verdict(None, 0.0, {})
        return Verdict(ball, self.probability(row), fused)


L = TypeVar("L", bound=Logistic)


def read_logistic(path: Path, names: Sequence[str], what: str, remake: str, kind: type[L]) -> L | None:
    """The logistic model of `kind` at `path`, made over the features `names`; None when there is none; a one-line
    error naming `what` it is and the command that remakes it when it cannot be read or was made for others."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["features"]) != tuple(names):
            raise EngineError(f"{path}: made for other features {data['features']}; remake it ({remake})")
        return kind(
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["std"], dtype=np.float64),
            np.asarray(data["weights"], dtype=np.float64),
            float(data["bias"]),
            float(data["sure_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EngineError(f"cannot read {what} {path}: {exc}") from exc


@functools.cache
def load(path: Path = DECISION) -> Decision | None:
    """The fitted decision at `path`; None when there is none; a one-line error when it does not fit FEATURES."""
    return read_logistic(path, FEATURES, "the hearing decision", "python -m lab.bench.decision", Decision)
