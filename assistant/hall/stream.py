"""A WAV read piece by piece, so an occasion of hours is checked with steady memory, and a progress bar.

`read_wav` (audio.py) holds the whole file, decoded to float64 and converted: for 30 minutes of 16 kHz stereo
that is ~115 MB of PCM plus ~0.5 GB while converting. `WavStream` holds one block at a time.
"""

from __future__ import annotations

import sys
import time
import wave
from collections.abc import Iterator
from math import gcd
from pathlib import Path
from typing import TextIO

import numpy as np

from ..audio import RATE, AudioChunk, AudioError, from_samples


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux /proc; 0.0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class WavStream:
    """A PCM WAV file as chunks of every channel at 16 kHz int16, read a block at a time.

    16-bit files at 16 kHz pass through as they are; other rates and widths are converted block by block
    (`from_samples` on each block: a block edge can carry a tiny resampling step, a fraction of a sample).
    """

    def __init__(self, path: Path, chunk_seconds: float = 0.1, block_seconds: float = 10.0) -> None:
        self.path = Path(path)
        try:
            with wave.open(str(self.path), "rb") as w:
                self.rate, self.width, self.channels, self.frames = (
                    w.getframerate(),
                    w.getsampwidth(),
                    w.getnchannels(),
                    w.getnframes(),
                )
        except FileNotFoundError:
            raise AudioError(f"no such file: {self.path}") from None
        except (wave.Error, EOFError, OSError) as exc:
            raise AudioError(f"not a PCM WAV file ({exc or 'truncated'}): {self.path}") from exc
        if self.channels < 1 or self.rate < 1 or self.frames < 1:
            raise AudioError(f"empty audio or bad header: {self.path}")
        if self.width != 2:
            raise AudioError(f"streaming reads 16-bit PCM only, this is {self.width * 8}-bit: {self.path}")
        self.chunk = max(1, round(chunk_seconds * RATE))
        g = gcd(self.rate, RATE)
        whole = max(1, round(block_seconds * RATE) // self.chunk) * self.chunk
        self.block_in = max(1, whole * self.rate // RATE // (self.rate // g) * (self.rate // g))
        self.position = 0
        """Frames (16 kHz) handed out so far."""

    @property
    def duration(self) -> float:
        return self.frames / self.rate

    @property
    def seconds_read(self) -> float:
        return self.position / RATE

    def _blocks(self) -> Iterator[np.ndarray]:
        with wave.open(str(self.path), "rb") as w:
            while True:
                raw = w.readframes(self.block_in)
                if not raw:
                    return
                data = np.frombuffer(raw[: len(raw) // (2 * self.channels) * (2 * self.channels)], dtype="<i2")
                frames = data.reshape(-1, self.channels)
                if self.rate != RATE:
                    frames = np.stack(from_samples(frames, self.rate).channels, axis=1)
                yield frames

    def chunks(self) -> Iterator[tuple[AudioChunk, ...]]:
        """One chunk per channel, in lock-step, timed from the start of the file."""
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


class Progress:
    """A one-line progress bar on stderr: audio done, speed (real-time factor) and memory, redrawn in place."""

    def __init__(self, total_seconds: float, out: TextIO = sys.stderr, every: float = 0.5, width: int = 30) -> None:
        self.total = max(total_seconds, 1e-9)
        self.out = out
        self.every = every
        self.width = width
        self.started = time.perf_counter()
        self._last = -1e9
        self.samples: list[tuple[float, float, float]] = []
        """(audio seconds done, wall seconds, RSS MB) at each redraw."""

    def update(self, done: float, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self.every:
            return
        self._last = now
        wall = now - self.started
        rss = rss_mb()
        self.samples.append((done, wall, rss))
        share = min(1.0, done / self.total)
        filled = int(share * self.width)
        rtf = wall / done if done > 0 else 0.0
        self.out.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] {_clock(done)}/{_clock(self.total)} "
            f"{100 * share:3.0f}%  RTF {rtf:.3f}  RSS {rss:.0f} MB"
        )
        self.out.flush()

    def close(self, done: float) -> None:
        self.update(done, force=True)
        self.out.write("\n")
        self.out.flush()


def _clock(seconds: float) -> str:
    minutes, s = divmod(int(seconds), 60)
    return f"{minutes:02d}:{s:02d}"


def with_progress(stream: WavStream, progress: Progress) -> Iterator[tuple[AudioChunk, ...]]:
    """The stream's chunks, redrawing the bar as they go (and once more at the end)."""
    for step in stream.chunks():
        progress.update(stream.seconds_read)
        yield step
    progress.close(stream.seconds_read)
