"""The audio port: where the recognizers' audio comes from, as chunks of 16 kHz mono int16 per channel.

One port, three adapters: a recording file read block by block (`FileSource`: any file libsndfile reads), a
recording in memory (`RecordingSource`), and the hall's input devices (`MicrophoneSource`, several as `Devices`).
Each gives `steps(start)`, one `AudioChunk` of every channel per step in lock-step, and `now()`, the stream time it
has reached. A stereo source is the caller (left) and the floor (right); the pipeline splits by channel.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from .device import Devices, MicrophoneSource, microphones
from .wav import (
    RATE,
    AudioChunk,
    AudioError,
    FileSource,
    Recording,
    RecordingSource,
    channels_heard,
    chunks,
    from_samples,
    is_audio,
    read_wav,
    write_wav,
)


class AudioSource(Protocol):
    """Audio as a stream: the recognizers' side of a file, a recording or the hall's devices."""

    name: str
    channels: int

    def steps(self, start: float = 0.0) -> Iterator[tuple[AudioChunk, ...]]:
        """One chunk of every channel per step, in lock-step, timed from `start`."""
        ...

    def now(self) -> float:
        """Stream time reached: the end of what was handed out (a file) or delivered (a device)."""
        ...


__all__ = [
    "RATE",
    "AudioChunk",
    "AudioError",
    "AudioSource",
    "Devices",
    "FileSource",
    "MicrophoneSource",
    "Recording",
    "RecordingSource",
    "channels_heard",
    "chunks",
    "from_samples",
    "is_audio",
    "microphones",
    "read_wav",
    "write_wav",
]
