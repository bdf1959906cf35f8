"""Voice-activity models as cutting candidates for `python -m lab.bench cuts`: silero-vad (its
ONNX model from the `silero-vad` wheel, run by onnxruntime) and WebRTC's VAD (`webrtcvad-wheels`), each cutting
utterances the way the endpointer does (open on speech, close after a hangover of non-speech, a pre-roll, short
blips dropped, an 8 s limit), so the table compares what tells speech from the hall, not the bookkeeping.

The benchmark's only: the product cuts with `endpoint.Endpointer`. Install with `pip install -e ".[bench]"`
(tools/setup.sh does)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assistant.endpoint import HALL_CUTTING

RATE = 16000


class VadMissing(Exception):
    """A candidate's package is not installed."""


@dataclass(frozen=True)
class Bookkeeping:
    """How speech frames become utterances, as the endpointer's `HALL_CUTTING` does it (seconds)."""

    hangover: float = HALL_CUTTING.hangover
    pre_roll: float = HALL_CUTTING.pre_roll
    min_speech: float = HALL_CUTTING.min_speech
    max_utterance: float = HALL_CUTTING.max_utterance
    onset: float = 0.09
    """Speech needed within the last `onset_window` seconds to open an utterance."""
    onset_window: float = 0.15


def utterances(speech: np.ndarray, frame: float, keep: Bookkeeping) -> list[tuple[float, float]]:
    """(start, end) of the utterances cut from per-frame speech decisions (`frame` seconds each)."""
    out: list[tuple[float, float]] = []
    window = max(1, round(keep.onset_window / frame))
    need = max(1, round(keep.onset / frame))
    hang = max(1, round(keep.hangover / frame))
    start: int | None = None
    last = voiced = 0
    for i, s in enumerate(speech):
        if start is None:
            if s and int(speech[max(0, i - window + 1) : i + 1].sum()) >= need:
                recent = speech[max(0, i - window + 1) : i + 1]
                start, last = i - len(recent) + 1 + int(np.argmax(recent)), i  # from its first speech frame
                voiced = int(recent.sum())
            continue
        if s:
            last = i
            voiced += 1
        if i - last >= hang or (i - start) * frame >= keep.max_utterance:
            if voiced * frame >= keep.min_speech:
                out.append((max(0.0, start * frame - keep.pre_roll), (last + 1) * frame))
            start = None
    if start is not None and voiced * frame >= keep.min_speech:
        out.append((max(0.0, start * frame - keep.pre_roll), (last + 1) * frame))
    return out


@dataclass(frozen=True)
class Silero:
    """silero-vad v5+ (ONNX, 16 kHz): 32 ms frames; speech from `threshold` on, and it stays speech down to
    `threshold - 0.15` (the package's own hysteresis)."""

    threshold: float = 0.5
    keep: Bookkeeping = Bookkeeping()

    def speech(self, samples: np.ndarray) -> tuple[np.ndarray, float]:
        session = _silero_session()
        x = samples.astype(np.float32) / 32768.0
        frames = len(x) // 512
        state = np.zeros((2, 1, 128), dtype=np.float32)
        context = np.zeros(64, dtype=np.float32)
        sr = np.array(RATE, dtype=np.int64)
        probs = np.empty(frames, dtype=np.float32)
        for i in range(frames):
            chunk = x[i * 512 : (i + 1) * 512]
            out, state = session.run(
                None, {"input": np.concatenate([context, chunk])[None, :], "state": state, "sr": sr}
            )
            context = chunk[-64:]
            probs[i] = float(out.reshape(-1)[0])
        speech = np.zeros(frames, dtype=bool)
        on = False
        for i, p in enumerate(probs):
            on = bool(p >= (self.threshold - 0.15 if on else self.threshold))
            speech[i] = on
        return speech, 512 / RATE

    def cuts(self, samples: np.ndarray) -> list[tuple[float, float]]:
        speech, frame = self.speech(samples)
        return utterances(speech, frame, self.keep)


@dataclass(frozen=True)
class WebRtc:
    """WebRTC's VAD at `mode` (0 least to 3 most aggressive), 30 ms frames."""

    mode: int = 3
    keep: Bookkeeping = Bookkeeping()

    def cuts(self, samples: np.ndarray) -> list[tuple[float, float]]:
        try:
            import webrtcvad
        except ImportError as exc:
            raise VadMissing("webrtcvad is not installed (pip install webrtcvad-wheels)") from exc
        vad = webrtcvad.Vad(self.mode)
        n = 480
        pcm = samples.astype(np.int16)
        speech = np.array([vad.is_speech(pcm[i : i + n].tobytes(), RATE) for i in range(0, len(pcm) - n + 1, n)])
        return utterances(speech, n / RATE, self.keep)


_SESSION: list[Any] = []


def _silero_session() -> Any:
    if not _SESSION:
        try:
            import onnxruntime
            import silero_vad
        except ImportError as exc:
            raise VadMissing("silero-vad is not installed (pip install silero-vad onnxruntime)") from exc
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = options.intra_op_num_threads = 1
        model = Path(silero_vad.__file__).parent / "data" / "silero_vad.onnx"
        _SESSION.append(onnxruntime.InferenceSession(str(model), sess_options=options))
    return _SESSION[0]
