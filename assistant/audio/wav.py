"""Recordings: WAV files of any rate, width and channel count, and audio in memory, converted to what the
recognizers need (16 kHz mono int16 per channel); `FileSource` and `RecordingSource` give them out as a stream.

A stereo recording is a caller channel (left) and a floor channel (right); the pipeline splits by channel.
"""

from __future__ import annotations

import importlib
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Any

import numpy as np

RATE = 16000
"""The one sample rate every recognizer is fed."""


class AudioError(Exception):
    """Audio that cannot be used, with a one-line reason naming the file or device."""


@dataclass(frozen=True)
class AudioChunk:
    """A piece of one channel of a stream."""

    start: float
    """Seconds from the start of the stream."""
    samples: np.ndarray
    """int16, mono, 16 kHz."""
    missing: bool = False
    """The device delivered nothing for this stretch (it went away): `samples` are silence standing in, and
    anything may have been said."""

    @property
    def end(self) -> float:
        return self.start + len(self.samples) / RATE


@dataclass(frozen=True)
class Recording:
    """A whole recording converted to 16 kHz int16, one mono array per channel."""

    path: Path | None
    rate: int
    channels: tuple[np.ndarray, ...]
    duration: float


def _to_int16(data: np.ndarray) -> np.ndarray:
    clipped = np.clip(np.round(data), -32768, 32767)
    return clipped.astype(np.int16)


def _convert(frames: np.ndarray, rate: int) -> tuple[np.ndarray, ...]:
    """(n, ch) float samples in int16 scale at `rate` -> one int16 16 kHz array per channel."""
    if rate != RATE:
        g = gcd(rate, RATE)
        # scipy ships no type stubs, and is loaded only when a recording needs resampling (it is large).
        signal: Any = importlib.import_module("scipy.signal")
        frames = signal.resample_poly(frames, RATE // g, rate // g, axis=0)
    return tuple(_to_int16(frames[:, c]) for c in range(frames.shape[1]))


def _decode_pcm(raw: bytes, width: int, channels: int) -> np.ndarray:
    """Little-endian PCM bytes -> (n, ch) float64 scaled to the int16 range."""
    if width == 1:  # 8-bit WAV is unsigned
        data = (np.frombuffer(raw, dtype=np.uint8).astype(np.float64) - 128.0) * 256.0
    elif width == 2:
        data = np.frombuffer(raw, dtype="<i2").astype(np.float64)
    elif width == 3:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        data = v.astype(np.float64) / 256.0
    elif width == 4:
        data = np.frombuffer(raw, dtype="<i4").astype(np.float64) / 65536.0
    else:
        raise ValueError(f"unsupported sample width: {width * 8} bits")
    return data.reshape(-1, channels)


def _header(path: Path) -> tuple[int, int, int, int]:
    """(rate, sample width in bytes, channels, frames) of a PCM WAV; AudioError with a one-line reason if it
    is none."""
    if not path.exists():
        raise AudioError(f"no such file: {path}")
    if path.is_dir():
        raise AudioError(f"not a WAV file (a directory): {path}")
    if path.stat().st_size == 0:
        raise AudioError(f"empty audio (0 bytes): {path}")
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, nch, n = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
    except wave.Error as exc:
        raise AudioError(f"not a PCM WAV file ({exc}): {path}") from exc
    except (EOFError, OSError) as exc:
        raise AudioError(f"not a WAV file ({exc or 'truncated'}): {path}") from exc
    if nch < 1 or rate < 1:
        raise AudioError(f"not a WAV file (bad header): {path}")
    if width not in (1, 2, 3, 4):
        raise AudioError(f"unsupported sample width: {width * 8} bits: {path}")
    return rate, width, nch, n


def read_wav(path: Path) -> Recording:
    """Read a PCM WAV of any rate, 8/16/24/32-bit width and channel count; raise AudioError otherwise."""
    path = Path(path)
    rate, width, nch, n = _header(path)
    try:
        with wave.open(str(path), "rb") as w:
            raw = w.readframes(n)
    except (wave.Error, EOFError, OSError) as exc:
        raise AudioError(f"not a WAV file ({exc or 'truncated'}): {path}") from exc
    usable = len(raw) // (width * nch) * (width * nch)
    if usable == 0:
        raise AudioError(f"empty audio (no samples): {path}")
    channels = _convert(_decode_pcm(raw[:usable], width, nch), rate)
    return Recording(path=path, rate=RATE, channels=channels, duration=len(channels[0]) / RATE)


def from_samples(samples: np.ndarray, rate: int) -> Recording:
    """In-memory audio: int16 or float (-1..1) samples, mono (n,) or (n, channels), at any rate."""
    data = np.asarray(samples)
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2 or data.shape[0] == 0 or data.shape[1] == 0:
        raise AudioError(f"empty audio or bad shape: {data.shape}")
    if rate < 1:
        raise AudioError(f"bad sample rate: {rate}")
    if np.issubdtype(data.dtype, np.floating):
        frames = data.astype(np.float64) * 32767.0
    elif data.dtype == np.int16:
        frames = data.astype(np.float64)
    else:
        raise AudioError(f"unsupported sample type {data.dtype} (int16 or float)")
    channels = _convert(frames, rate)
    return Recording(path=None, rate=RATE, channels=channels, duration=len(channels[0]) / RATE)


def write_wav(path: Path, samples: np.ndarray, rate: int = RATE) -> None:
    """Write int16 samples, mono (n,) or (n, channels), as a PCM WAV."""
    data = np.asarray(samples)
    if data.dtype != np.int16:
        data = _to_int16(data.astype(np.float64))
    nch = 1 if data.ndim == 1 else data.shape[1]
    with wave.open(str(path), "wb") as w:
        w.setnchannels(nch)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(data.astype("<i2").tobytes())


def chunks(samples: np.ndarray, chunk_seconds: float = 0.1, start: float = 0.0) -> Iterator[AudioChunk]:
    """Stream one 16 kHz channel as chunks, as a microphone would deliver it."""
    size = max(1, round(chunk_seconds * RATE))
    for i in range(0, len(samples), size):
        yield AudioChunk(start=start + i / RATE, samples=samples[i : i + size])


class FileSource:
    """A WAV file as a stream of chunks of every channel at 16 kHz int16, read a block at a time, so a recording
    of hours is heard with steady memory (`read_wav` holds it all: for 30 minutes of 16 kHz stereo ~115 MB of
    PCM and ~0.5 GB while converting). 16-bit files at 16 kHz pass through as they are; other rates and widths
    are converted block by block (a block edge can carry a tiny resampling step, a fraction of a sample)."""

    def __init__(self, path: Path, chunk_seconds: float = 0.1, block_seconds: float = 10.0) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self.rate, self.width, self.channels, self.frames = _header(self.path)
        if self.frames < 1:
            raise AudioError(f"empty audio (no samples): {self.path}")
        self.chunk = max(1, round(chunk_seconds * RATE))
        step = self.rate // gcd(self.rate, RATE)  # input frames per whole number of output frames
        whole = max(1, round(block_seconds * RATE) // self.chunk) * self.chunk
        self.block_in = max(step, whole * self.rate // RATE // step * step)
        self.position = 0
        """Frames (16 kHz) handed out so far."""

    @property
    def duration(self) -> float:
        return self.frames / self.rate

    def now(self) -> float:
        """Seconds of audio handed out so far."""
        return self.position / RATE

    def _blocks(self) -> Iterator[np.ndarray]:
        frame = self.width * self.channels
        with wave.open(str(self.path), "rb") as w:
            while raw := w.readframes(self.block_in):
                raw = raw[: len(raw) // frame * frame]
                if not raw:
                    return
                if self.width == 2 and self.rate == RATE:
                    yield np.frombuffer(raw, dtype="<i2").reshape(-1, self.channels)
                else:
                    yield np.stack(_convert(_decode_pcm(raw, self.width, self.channels), self.rate), axis=1)

    def steps(self, start: float = 0.0) -> Iterator[tuple[AudioChunk, ...]]:
        """One chunk per channel, in lock-step, timed from `start` (the start of the file by default)."""
        self.position = round(start * RATE)
        carry = np.zeros((0, self.channels), dtype=np.int16)
        for block in self._blocks():
            data = np.concatenate([carry, block]) if len(carry) else block
            usable = len(data) // self.chunk * self.chunk
            for i in range(0, usable, self.chunk):
                yield self._cut(data[i : i + self.chunk])
            carry = data[usable:]
        if len(carry):
            yield self._cut(carry)

    def _cut(self, piece: np.ndarray) -> tuple[AudioChunk, ...]:
        start = self.position / RATE
        self.position += len(piece)
        return tuple(AudioChunk(start=start, samples=np.ascontiguousarray(piece[:, c])) for c in range(self.channels))


class RecordingSource:
    """A recording already in memory (`read_wav`, `from_samples`) as a stream of chunks of every channel."""

    def __init__(self, recording: Recording, chunk_seconds: float = 0.1) -> None:
        self.recording = recording
        self.name = str(recording.path) if recording.path is not None else "audio in memory"
        self.channels = len(recording.channels)
        self.chunk_seconds = chunk_seconds
        self.position = 0.0

    @property
    def duration(self) -> float:
        return self.recording.duration

    def now(self) -> float:
        """Seconds of audio handed out so far."""
        return self.position

    def steps(self, start: float = 0.0) -> Iterator[tuple[AudioChunk, ...]]:
        """One chunk per channel, in lock-step, timed from `start`."""
        per_channel = [chunks(channel, self.chunk_seconds, start) for channel in self.recording.channels]
        for step in zip(*per_channel, strict=False):
            self.position = step[0].end
            yield step
