"""Audio source port: WAV files and the microphone, converted to what the recognizers need (16 kHz mono int16).

A stereo recording is a caller channel (left) and a floor channel (right); the pipeline splits by channel.
Only `MicrophoneSource` touches sounddevice.
"""

from __future__ import annotations

import contextlib
import importlib
import queue
import sys
import time
import wave
from collections.abc import Callable, Generator, Iterator, Sequence
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


def read_wav(path: Path) -> Recording:
    """Read a PCM WAV of any rate, 8/16/24/32-bit width and channel count; raise AudioError otherwise."""
    path = Path(path)
    if not path.exists():
        raise AudioError(f"no such file: {path}")
    if path.is_dir():
        raise AudioError(f"not a WAV file (a directory): {path}")
    if path.stat().st_size == 0:
        raise AudioError(f"empty audio (0 bytes): {path}")
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, nch, n = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
            raw = w.readframes(n)
    except wave.Error as exc:
        raise AudioError(f"not a PCM WAV file ({exc}): {path}") from exc
    except (EOFError, OSError) as exc:
        raise AudioError(f"not a WAV file ({exc or 'truncated'}): {path}") from exc
    if nch < 1 or rate < 1:
        raise AudioError(f"not a WAV file (bad header): {path}")
    usable = len(raw) // (width * nch) * (width * nch)
    if usable == 0:
        raise AudioError(f"empty audio (no samples): {path}")
    try:
        frames = _decode_pcm(raw[:usable], width, nch)
    except ValueError as exc:
        raise AudioError(f"{exc}: {path}") from exc
    channels = _convert(frames, rate)
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


class MicrophoneSource:
    """The sounddevice adapter: live audio from an input device, 16 kHz mono int16 per channel."""

    def __init__(
        self,
        device: str | int | None,
        channels: int = 1,
        chunk_seconds: float = 0.1,
        stall: float = 2.0,
        tell: Callable[[str], None] | None = None,
    ) -> None:
        """`stall`: seconds without audio after which the device is taken for gone; `tell` gets one line when it
        goes and one when it returns (default: standard error)."""
        try:
            import sounddevice as sd
        except OSError as exc:  # PortAudio library missing
            raise AudioError(f"no input device: audio library unavailable ({exc})") from exc
        self._sd: Any = sd
        try:
            info = sd.query_devices(device, kind="input")
        except (ValueError, sd.PortAudioError) as exc:
            raise AudioError(f"no input device: {device if device is not None else 'default'} ({exc})") from exc
        if int(info["max_input_channels"]) < channels:
            raise AudioError(f"no input device with {channels} channels: {info['name']}")
        self.device = device
        self.channels = channels
        self.chunk_seconds = chunk_seconds
        self.name = str(info["name"])
        self._blocks: queue.Queue[np.ndarray] = queue.Queue()
        self._delivered = 0
        """Frames the device has delivered (in its callback) since it was last opened, taken or not."""
        self._base = 0
        """Stream position at which it was last opened."""
        self._stream: Any = None
        self.stall = stall
        self.tell = tell or (lambda line: print(line, file=sys.stderr, flush=True))

    def open(self) -> None:
        """Start the device: from now on its callback queues what it records."""
        if self._stream is not None:
            return

        def callback(indata: np.ndarray, frames: int, time: Any, status: Any) -> None:
            self._blocks.put(indata.copy())
            self._delivered += frames

        self._stream = self._sd.InputStream(
            device=self.device,
            channels=self.channels,
            samplerate=RATE,
            dtype="int16",
            blocksize=round(self.chunk_seconds * RATE),
            callback=callback,
        )
        self._stream.start()

    def delivering(self) -> bool:
        return self._delivered > 0

    def restart_clock(self) -> None:
        """Drop what was recorded so far: stream time 0 is now (to start several devices together)."""
        while not self._blocks.empty():
            self._blocks.get_nowait()
        self._delivered = 0

    def now(self) -> float:
        """Seconds of audio the device has delivered (or stood in for while it was gone): the hall's present on
        the stream clock, however far behind the recognizers are."""
        return (self._base + self._delivered) / RATE

    def close(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None

    def stream(self, start: float = 0.0) -> Generator[tuple[AudioChunk, ...], None, None]:
        """Chunks as they arrive, one per channel, timed from the start of the stream (or of its clock). A device
        that delivers nothing for `stall` seconds is gone: the stream goes on in step with the wall clock with
        `missing` chunks of silence, tries the device again every `stall` seconds, and goes on with its audio when
        it returns."""
        self.open()
        size = round(self.chunk_seconds * RATE)
        position = self._base = round(start * RATE)
        try:
            while True:
                try:
                    block = self._blocks.get(timeout=self.stall)
                except queue.Empty:
                    gone = position / RATE
                    self.tell(
                        f"audio: {self.name} delivered nothing for {self.stall:g} s at {gone:.1f} s; "
                        "the record marks the gap, listening goes on when it returns"
                    )
                    for stand_in in self._outage(position, size):
                        position += size
                        yield stand_in
                    self.tell(
                        f"audio: {self.name} is back at {position / RATE:.1f} s "
                        f"({position / RATE - gone:.1f} s not heard)"
                    )
                    continue
                start = position / RATE
                position += len(block)
                yield tuple(AudioChunk(start=start, samples=block[:, c].copy()) for c in range(self.channels))
        finally:
            self.close()

    def _outage(self, position: int, size: int) -> Iterator[tuple[AudioChunk, ...]]:
        """Missing chunks in step with the wall clock (the stall's seconds first) until the device delivers; its
        clock then goes on from where the stand-ins ended."""
        behind = round(self.stall * RATE)
        retry = 0.0
        while True:
            if time.monotonic() >= retry:
                retry = time.monotonic() + max(0.5, self.stall)
                self.close()
                self.restart_clock()
                with contextlib.suppress(Exception):  # PortAudioError, or a device not yet back: try again
                    self.open()
            self._base = position
            if self.delivering():
                return
            if behind < size:
                time.sleep(self.chunk_seconds)
                behind += size
            behind -= size
            silence = np.zeros(size, dtype=np.int16)
            yield tuple(AudioChunk(start=position / RATE, samples=silence, missing=True) for _ in range(self.channels))
            position += size


def microphones(
    sources: Sequence[MicrophoneSource], start: float = 0.0, timeout: float = 10.0
) -> Generator[tuple[AudioChunk, ...], None, None]:
    """Several input devices in lock-step: each step holds one chunk of every channel of every device, timed on
    one clock from `start`. The devices are all started first and their clocks set going together once each
    delivers (a device can take a second or more to start), so the caller's and the floor's words keep their
    order."""
    for source in sources:
        source.open()
    deadline = time.monotonic() + timeout
    while not all(s.delivering() for s in sources):
        if time.monotonic() > deadline:
            for s in sources:
                s.close()
            silent = ", ".join(s.name for s in sources if not s.delivering())
            raise AudioError(f"no input: {silent} delivered no audio within {timeout:.0f} s")
        time.sleep(0.01)
    for source in sources:
        source.restart_clock()
    streams: list[Generator[tuple[AudioChunk, ...], None, None]] = [s.stream(start) for s in sources]
    try:
        for steps in zip(*streams, strict=False):
            yield tuple(chunk for step in steps for chunk in step)
    finally:
        for stream in streams:
            stream.close()
