"""Whisper's text decoder in numpy, read from a CTranslate2 model.bin, for grammar-constrained search.

CTranslate2 encodes the audio (int8, fast); the decoder runs here because a constrained search needs what
CTranslate2's `generate` does not give: the next-token scores of many partial sentences, with the audio's
cross-attention keys and values computed once per utterance and shared by every hypothesis. Each call to
`generate` would compute them again for every hypothesis, which made it 5-10x slower for the same search.
The arithmetic matches CTranslate2's float32 decoder to 1e-5 in log-probability (tests/test_whisper.py).
"""

from __future__ import annotations

import dataclasses
import mmap
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import erf

from .base import EngineError

Array = npt.NDArray[np.floating[Any]]
"""Float arrays; the decoder computes in float32."""

_DTYPES: dict[int, type[np.generic]] = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
_LAYER_WEIGHTS = (
    "self_attention/layer_norm/gamma",
    "self_attention/layer_norm/beta",
    "self_attention/linear_0/weight",
    "self_attention/linear_0/bias",
    "self_attention/linear_1/weight",
    "self_attention/linear_1/bias",
    "attention/layer_norm/gamma",
    "attention/layer_norm/beta",
    "attention/linear_0/weight",
    "attention/linear_0/bias",
    "attention/linear_1/weight",
    "attention/linear_1/bias",
    "attention/linear_2/weight",
    "attention/linear_2/bias",
    "ffn/layer_norm/gamma",
    "ffn/layer_norm/beta",
    "ffn/linear_0/weight",
    "ffn/linear_0/bias",
    "ffn/linear_1/weight",
    "ffn/linear_1/bias",
)

ADAPTABLE = ("qkv", "out1", "q", "kv", "out2", "ff1", "ff2")
"""The dense weights of a layer a decoder adapter may update (`WhisperDecoder.adapted`)."""


def read_variables(path: Path, prefix: str) -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 model.bin whose names start with `prefix`, copied out of the file.

    The format (ctranslate2/specs/model_spec.py `_serialize`): version, spec name, revision, then for each
    variable its name, shape, dtype id and bytes; then aliases.
    """
    try:
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            pos = 0

            def unpack(fmt: str) -> int:
                nonlocal pos
                (value,) = struct.unpack_from(fmt, data, pos)
                pos += struct.calcsize(fmt)
                return int(value)

            def string() -> str:
                nonlocal pos
                n = unpack("H")
                text = bytes(data[pos : pos + n - 1]).decode("utf-8")
                pos += n
                return text

            version = unpack("I")
            if version < 5:
                raise EngineError(f"{path}: CTranslate2 model format {version} is too old")
            string()  # spec name
            unpack("I")  # revision
            out: dict[str, np.ndarray] = {}
            for _ in range(unpack("I")):
                name = string()
                shape = [unpack("I") for _ in range(unpack("B"))]
                dtype = _DTYPES.get(unpack("B"))
                size = unpack("I")
                if name.startswith(prefix):
                    if dtype is None:
                        raise EngineError(f"{path}: variable {name} has an unsupported type")
                    out[name] = np.frombuffer(data, dtype=dtype, count=size // np.dtype(dtype).itemsize, offset=pos)
                    out[name] = out[name].reshape(shape).copy()
                pos += size
            return out
    except (OSError, ValueError, struct.error) as exc:
        raise EngineError(f"cannot read whisper model {path}: {exc}") from exc


def _layer_norm(x: Array, gamma: Array, beta: Array) -> Array:
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdims=True)
    out: Array = centered / np.sqrt(var + 1e-5) * gamma + beta
    return out


def _gelu(x: Array) -> Array:
    out: Array = 0.5 * x * (1.0 + erf(x * np.float32(0.7071067811865476)))
    return out


def _softmax(x: Array) -> Array:
    e = np.exp(x - x.max(-1, keepdims=True))
    out: Array = e / e.sum(-1, keepdims=True)
    return out


@dataclass(frozen=True)
class _Layer:
    ln1: tuple[Array, Array]
    qkv: tuple[Array, Array]
    out1: tuple[Array, Array]
    ln2: tuple[Array, Array]
    q: tuple[Array, Array]
    kv: tuple[Array, Array]
    out2: tuple[Array, Array]
    ln3: tuple[Array, Array]
    ff1: tuple[Array, Array]
    ff2: tuple[Array, Array]


@dataclass(frozen=True)
class Cross:
    """Cross-attention keys and values of one utterance's audio: per layer (heads, frames, head size)."""

    keys: tuple[Array, ...]
    values: tuple[Array, ...]


@dataclass(frozen=True)
class SelfCache:
    """Self-attention keys and values of a batch of partial sentences: per layer (batch, heads, length, head)."""

    keys: tuple[Array, ...]
    values: tuple[Array, ...]

    @property
    def length(self) -> int:
        return int(self.keys[0].shape[2])

    def take(self, rows: list[int]) -> SelfCache:
        """The caches of these rows (a row may repeat: two hypotheses that share a prefix)."""
        index = np.asarray(rows)
        return SelfCache(tuple(k[index] for k in self.keys), tuple(v[index] for v in self.values))


class WhisperDecoder:
    """Whisper's decoder (pre-norm transformer, learned positions, tied output embedding) in float32."""

    def __init__(self, path: Path) -> None:
        v = read_variables(path, "decoder/")
        try:
            self.heads = int(v["decoder/num_heads"])
            self.embedding16: npt.NDArray[np.float16] = v["decoder/embeddings/weight"].astype(np.float16)
            self.positions: Array = v["decoder/position_encodings/encodings"].astype(np.float32)
            self.final = (self._f(v, "decoder/layer_norm/gamma"), self._f(v, "decoder/layer_norm/beta"))
            layers = []
            i = 0
            while f"decoder/layer_{i}/self_attention/linear_0/weight" in v:
                w = {name: self._f(v, f"decoder/layer_{i}/{name}") for name in _LAYER_WEIGHTS}

                def dense(name: str, w: dict[str, Array] = w) -> tuple[Array, Array]:
                    return np.ascontiguousarray(w[f"{name}/weight"].T), w[f"{name}/bias"]

                layers.append(
                    _Layer(
                        ln1=(w["self_attention/layer_norm/gamma"], w["self_attention/layer_norm/beta"]),
                        qkv=dense("self_attention/linear_0"),
                        out1=dense("self_attention/linear_1"),
                        ln2=(w["attention/layer_norm/gamma"], w["attention/layer_norm/beta"]),
                        q=dense("attention/linear_0"),
                        kv=dense("attention/linear_1"),
                        out2=dense("attention/linear_2"),
                        ln3=(w["ffn/layer_norm/gamma"], w["ffn/layer_norm/beta"]),
                        ff1=dense("ffn/linear_0"),
                        ff2=dense("ffn/linear_1"),
                    )
                )
                i += 1
        except KeyError as exc:
            raise EngineError(f"{path} is not a Whisper model for CTranslate2: no {exc.args[0]}") from exc
        if not layers:
            raise EngineError(f"{path} is not a Whisper model for CTranslate2: no decoder layers")
        self.layers = tuple(layers)
        self.width = int(self.positions.shape[1])
        self.head_size = self.width // self.heads
        self.max_length = int(self.positions.shape[0])
        self._scale = np.float32(1.0 / np.sqrt(self.head_size))

    @staticmethod
    def _f(v: dict[str, np.ndarray], name: str) -> Array:
        return np.asarray(v[name], dtype=np.float32)

    def adapted(self, deltas: Mapping[str, np.ndarray]) -> WhisperDecoder:
        """This decoder with low-rank updates added to its dense weights (a LoRA adapter, merged once): for layer
        L's weight NAME (qkv, out1, q, kv, out2, ff1, ff2, as `_Layer` names them), `L.NAME.a` (in, rank) and
        `L.NAME.b` (rank, out), the update being a @ b. The embedding and the layer norms are not adapted."""
        layers = list(self.layers)
        for key in deltas:
            index, name, part = key.split(".") if key.count(".") == 2 else ("", "", "")
            if part not in ("a", "b") or not index.isdigit() or name not in ADAPTABLE:
                raise EngineError(f"decoder adapter: {key!r} names no weight of the decoder")
            if part == "b":
                continue
            i = int(index)
            if i >= len(layers) or f"{index}.{name}.b" not in deltas:
                raise EngineError(f"decoder adapter: {key!r} has no layer or no second factor in this model")
            weight, bias = getattr(layers[i], name)
            update = np.asarray(deltas[key], dtype=np.float32) @ np.asarray(deltas[f"{index}.{name}.b"], np.float32)
            if update.shape != weight.shape:
                raise EngineError(f"decoder adapter: {key!r} is {update.shape}, the weight {weight.shape}")
            layers[i] = dataclasses.replace(layers[i], **{name: (weight + update, bias)})
        copy = object.__new__(WhisperDecoder)
        copy.__dict__.update(self.__dict__)
        copy.layers = tuple(layers)
        return copy

    def output_embedding(self, tokens: npt.NDArray[np.int64]) -> Array:
        """Rows of the tied output projection for these tokens, (len, width) float32."""
        out: Array = self.embedding16[tokens].astype(np.float32)
        return out

    def cross(self, memory: Array) -> Cross:
        """Keys and values of the encoder's output (frames, width), once per utterance."""
        frames = memory.shape[0]
        keys, values = [], []
        for layer in self.layers:
            kv = memory @ layer.kv[0] + layer.kv[1]
            k = kv[:, : self.width].reshape(frames, self.heads, self.head_size).transpose(1, 0, 2)
            val = kv[:, self.width :].reshape(frames, self.heads, self.head_size).transpose(1, 0, 2)
            keys.append(np.ascontiguousarray(k))
            values.append(np.ascontiguousarray(val))
        return Cross(tuple(keys), tuple(values))

    def _attend_audio(self, x: Array, layer: _Layer, index: int, cross: Cross) -> Array:
        """Cross-attention of (batch, length, width) queries on the audio."""
        b, t, _ = x.shape
        h = _layer_norm(x, *layer.ln2)
        q = (h @ layer.q[0] + layer.q[1]).reshape(b, t, self.heads, self.head_size).transpose(0, 2, 1, 3)
        weights = _softmax((q @ cross.keys[index].transpose(0, 2, 1)[None]) * self._scale)
        o = (weights @ cross.values[index][None]).transpose(0, 2, 1, 3).reshape(b, t, self.width)
        out: Array = o @ layer.out2[0] + layer.out2[1]
        return out

    def _feed_forward(self, x: Array, layer: _Layer) -> Array:
        h = _layer_norm(x, *layer.ln3)
        out: Array = _gelu(h @ layer.ff1[0] + layer.ff1[1]) @ layer.ff2[0] + layer.ff2[1]
        return out

    def run(
        self, tokens: npt.NDArray[np.int64], cross: Cross, cache: SelfCache | None = None
    ) -> tuple[Array, SelfCache]:
        """Feed (batch, length) tokens after `cache` (None: from the start); return the final hidden state of
        each row's last token (batch, width) and the cache extended by these tokens."""
        b, t = tokens.shape
        start = 0 if cache is None else cache.length
        if start + t > self.max_length:
            raise EngineError(f"whisper decoder: sentence longer than {self.max_length} tokens")
        x: Array = self.embedding16[tokens].astype(np.float32) + self.positions[start : start + t]
        mask = np.triu(np.full((t, start + t), -np.inf, dtype=np.float32), start + 1) if t > 1 else None
        keys, values = [], []
        for index, layer in enumerate(self.layers):
            h = _layer_norm(x, *layer.ln1)
            qkv = (h @ layer.qkv[0] + layer.qkv[1]).reshape(b, t, 3, self.heads, self.head_size)
            q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
            if cache is not None:
                k = np.concatenate([cache.keys[index], k], axis=2)
                v = np.concatenate([cache.values[index], v], axis=2)
            keys.append(k)
            values.append(v)
            scores = (q @ k.transpose(0, 1, 3, 2)) * self._scale
            if mask is not None:
                scores = scores + mask
            o = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, t, self.width)
            x = x + o @ layer.out1[0] + layer.out1[1]
            x = x + self._attend_audio(x, layer, index, cross)
            x = x + self._feed_forward(x, layer)
        hidden = _layer_norm(x[:, -1], *self.final)
        return hidden, SelfCache(tuple(keys), tuple(values))
