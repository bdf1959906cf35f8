"""The call head: a small network over Whisper's frozen encoder states that says which of the 75 calls an
utterance is, or that it is none of them (the hall model, docs/hall-model.md).

The encoder runs once per utterance for the constrained decoder anyway; the head reads the same states (the
first `frames` of them, averaged in pairs), so it costs a few milliseconds for three members. It is trained here
(`python -m lab.train head`, torch) on voices and babble never used to judge it, and shipped as a few
hundred kilobytes of numpy arrays per member (`call_head.npz`) with the sha256 of what made them; inference is
numpy alone.

Layout, the same in training (`lab.head_data.Head`) and here:
  x (T, 512) -> gelu(x W1 + b1) (T, H) -> two convolutions of width 5 (the second dilated by 2), gelu, residual
  -> attention pooling and max pooling over the utterance's frames -> logits over 76 labels (0: no call).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..audio import RATE
from .base import EngineError

WEIGHTS = Path(__file__).with_name("call_head.npz")
FRAMES = 300
"""Encoder frames the head reads (50 a second: 6 s); the rest of the window is never a call's."""
POOL = 2
"""Encoder frames averaged into one of the head's (25 a second)."""
LABELS = 76
"""0: no call; n: ball n."""

Floats = npt.NDArray[np.float32]


def pooled(memory: npt.NDArray[np.floating], samples: int) -> tuple[Floats, int]:
    """The head's input from the encoder's states of one window: (FRAMES // POOL, width) and how many of those
    frames the utterance covers (at least one)."""
    states = np.asarray(memory[:FRAMES], dtype=np.float32)
    if len(states) < FRAMES:
        states = np.pad(states, ((0, FRAMES - len(states)), (0, 0)))
    x = states.reshape(FRAMES // POOL, POOL, -1).mean(axis=1)
    covered = int(np.ceil(samples / RATE * 50 / POOL)) + 2
    return x.astype(np.float32), max(1, min(FRAMES // POOL, covered))


def gelu(x: Floats) -> Floats:
    return np.asarray(0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))), dtype=np.float32)


def _conv(x: Floats, w: Floats, b: Floats, dilation: int) -> Floats:
    """Same-length 1-D convolution over time: x (T, C), w (K, C, C') -> (T, C')."""
    k = w.shape[0]
    pad = dilation * (k // 2)
    padded = np.pad(x, ((pad, pad), (0, 0)))
    out = np.zeros((x.shape[0], w.shape[2]), dtype=np.float32)
    for j in range(k):
        out += padded[j * dilation : j * dilation + x.shape[0]] @ w[j]
    return out + b


Arrays = dict[str, Floats]


@dataclass(frozen=True)
class CallHead:
    """The trained head: posterior over the 76 labels of one utterance. Several members (the same layout trained
    with different seeds on the same data) are averaged: where one member is sure of a wrong ones digit, the
    others seldom are (docs/hall-model.md)."""

    members: tuple[Arrays, ...]
    meta: dict[str, object]

    def __post_init__(self) -> None:
        if not self.members:
            raise ValueError("a call head needs at least one member")

    def posterior(self, memory: npt.NDArray[np.floating], samples: int) -> Floats:
        x, n = pooled(memory, samples)
        return self.posterior_pooled(x, n)

    def posterior_pooled(self, x: Floats, n: int) -> Floats:
        return np.asarray(np.mean([_member_posterior(a, x[:n]) for a in self.members], axis=0), dtype=np.float32)

    @property
    def sure_at(self) -> float:
        """The head's probability from which its own top call is wrong on at most 0.1 % of the validation voices'
        sayings (chosen in training, never on the held-out voices; reported, the engine asks for agreement)."""
        return float(self.meta.get("sure_at", 1.0))  # type: ignore[arg-type]


def _member_posterior(a: Arrays, x: Floats) -> Floats:
    h = gelu(x @ a["w1"] + a["b1"])
    h = h + gelu(_conv(h, a["c1w"], a["c1b"], 1))
    h = h + gelu(_conv(h, a["c2w"], a["c2b"], 2))
    scores = h @ a["att"]
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    both = np.concatenate([weights @ h, h.max(axis=0)])
    logits = both @ a["wo"] + a["bo"]
    p = np.exp(logits - logits.max())
    return np.asarray(p / p.sum(), dtype=np.float32)


def stored(members: tuple[Arrays, ...] | list[Arrays]) -> dict[str, Floats]:
    """The arrays as the weights file holds them: one member's by their names ("w1"), several as "m0.w1", ..."""
    if len(members) == 1:
        return dict(members[0])
    return {f"m{i}.{k}": v for i, member in enumerate(members) for k, v in member.items()}


def members_of(arrays: dict[str, Floats]) -> tuple[Arrays, ...]:
    """The members from the arrays of a weights file (`stored`'s inverse)."""
    if "w1" in arrays:
        return (arrays,)
    found: dict[int, Arrays] = {}
    for key, value in arrays.items():
        index, _, name = key.partition(".")
        if not index.startswith("m") or not index[1:].isdigit() or not name:
            raise ValueError(f"unexpected array {key!r}")
        found.setdefault(int(index[1:]), {})[name] = value
    if sorted(found) != list(range(len(found))):
        raise ValueError(f"members {sorted(found)} are not 0..{len(found) - 1}")
    return tuple(found[i] for i in range(len(found)))


def load(path: Path = WEIGHTS) -> CallHead | None:
    """The committed head, or None when there is none (the engine then listens as before)."""
    if not path.is_file():
        return None
    try:
        with np.load(path) as data:
            arrays = {k: np.asarray(data[k], dtype=np.float32) for k in data.files if k != "meta"}
            meta = json.loads(bytes(data["meta"]).decode("utf-8"))
        return CallHead(members_of(arrays), meta)
    except (OSError, ValueError, KeyError) as exc:
        raise EngineError(f"call head {path} cannot be read: {exc}") from exc
