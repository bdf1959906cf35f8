"""The sounddevice adapter: live audio from input devices, 16 kHz mono int16 per channel, on one clock.

Only this module touches sounddevice. A device that records at another rate is converted as it streams. What
a device does wrong is said on standard error in one line and marked in the stream, never hidden: a device
that stops (nothing for `stall` seconds), audio lost on the way (the host's buffer overran, or listening fell
`max_behind` seconds behind the device), and digital silence after sound (a dropout or a muted input). The
chunks of such stretches are `missing`: anything may have been said there, and the record says so.
"""

from __future__ import annotations

import contextlib
import importlib
import queue
import sys
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from math import ceil, gcd
from typing import Any

import numpy as np

from .wav import RATE, AudioChunk, AudioError

DIGITAL_SILENCE = 0.02
"""Seconds of exact zeros that no microphone gives (its own noise never stays at 0 that long): after the device
has given sound, such a run is a dropout or a muted input, not quiet."""

TELL_EVERY = 10.0
"""Seconds between two lines on the same kind of trouble of a device; what happened in between is counted."""


@dataclass(frozen=True)
class _Block:
    """What the device's callback queued: audio, or a count of frames dropped because listening fell behind (the
    audio that waited for it, so that it goes on from the present)."""

    frames: int
    samples: np.ndarray | None
    after_overrun: bool = False
    """The host's buffer overran before this block: some audio before it was lost."""


class _Resampler:
    """A device's own rate to 16 kHz, block by block without steps at the block edges (polyphase FIR with the
    input's history kept)."""

    def __init__(self, rate: int, channels: int) -> None:
        signal: Any = importlib.import_module("scipy.signal")  # no type stubs; large, loaded only when needed
        self._upfirdn = signal.upfirdn
        g = gcd(rate, RATE)
        self.up, self.down = RATE // g, rate // g
        half = 10 * max(self.up, self.down)
        self._taps = signal.firwin(2 * half + 1, 1.0 / max(self.up, self.down), window=("kaiser", 5.0)) * self.up
        history = ceil(len(self._taps) / self.up / self.down) * self.down
        self._pending = np.zeros((history, channels))
        self._history = history
        self._skip = round(half / self.down)
        """Output frames of the filter's delay still to drop, so that output time is input time."""

    def __call__(self, block: np.ndarray) -> np.ndarray:
        """int16 frames (n, channels) at the device's rate -> int16 frames at 16 kHz (a multiple of `down`
        input frames at a time; the rest waits for the next block)."""
        data = np.concatenate([self._pending, block.astype(np.float64)])
        usable = self._history + (len(data) - self._history) // self.down * self.down
        out = self._upfirdn(self._taps, data[:usable], self.up, self.down, axis=0)
        first = self._history * self.up // self.down
        wanted = out[first : first + (usable - self._history) * self.up // self.down]
        self._pending = data[usable - self._history :]
        dropped = min(self._skip, len(wanted))
        self._skip -= dropped
        return np.asarray(np.clip(np.round(wanted[dropped:]), -32768, 32767), dtype=np.int16)


class _Teller:
    """One line on standard error (or `tell`) per trouble, at most one per kind every `TELL_EVERY` seconds of
    stream time; the ones held back are counted into the next."""

    def __init__(self, tell: Callable[[str], None]) -> None:
        self.tell = tell
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def __call__(self, kind: str, at: float, line: str) -> bool:
        """Say `line` unless a line of this kind was said less than `TELL_EVERY` s ago; whether it was said."""
        if at - self._last.get(kind, -1e9) < TELL_EVERY:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        self._last[kind] = at
        self.tell(line + (f" ({held} more like it since the last line)" if held else ""))
        return True


class _ZeroRuns:
    """Digital silence in one channel after it has given sound: marks the chunks it touches."""

    def __init__(self) -> None:
        self.sounded = False
        self.run = 0
        """Exact zeros at the end of what was seen so far."""
        self.since: float | None = None
        """Stream time the digital silence began, while it lasts."""
        self.told = False
        """Its beginning was told (so its end is told too)."""

    def missing(self, samples: np.ndarray) -> bool:
        """Whether this chunk holds (part of) a run of at least `DIGITAL_SILENCE` zeros after sound."""
        least = round(DIGITAL_SILENCE * RATE)
        zero = samples == 0
        if zero.all():
            self.run += len(samples)
            return self.sounded and self.run >= least
        nonzero = np.flatnonzero(~zero)
        lead, trail = int(nonzero[0]), len(samples) - 1 - int(nonzero[-1])
        inner = _longest_run(zero[nonzero[0] : nonzero[-1] + 1])
        hit = (self.sounded and self.run + lead >= least) or inner >= least or trail >= least
        self.sounded = True
        self.run = trail
        return hit


def _longest_run(flags: np.ndarray) -> int:
    """The longest run of True in a boolean array."""
    if not flags.any():
        return 0
    padded = np.concatenate([[False], flags, [False]]).astype(np.int8)
    starts, ends = np.flatnonzero(np.diff(padded) == 1), np.flatnonzero(np.diff(padded) == -1)
    return int((ends - starts).max())


class MicrophoneSource:
    """The sounddevice adapter: live audio from an input device, 16 kHz mono int16 per channel."""

    def __init__(
        self,
        device: str | int | None,
        channels: int = 1,
        chunk_seconds: float = 0.1,
        stall: float = 2.0,
        tell: Callable[[str], None] | None = None,
        rate: int | None = None,
        max_behind: float = 10.0,
        alert: Callable[[str, int, float], None] | None = None,
    ) -> None:
        """`stall`: seconds without audio after which the device is taken for gone; `tell` gets the one-line
        reports of trouble (default: standard error). `rate`: the rate to record at (default 16 kHz if the device
        takes it, else its own), converted to 16 kHz as it streams. `max_behind`: seconds of audio held for
        listening that has fallen behind; what comes beyond is dropped, marked missing. `alert`, when given, is
        told ("lost" or "back", channel, stream time) when a channel's sound is lost (the device stops, or gives
        digital silence after sound) and when it is back: what the caller is told aloud."""
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
        self.tell = tell or (lambda line: print(line, file=sys.stderr, flush=True))
        self._say = _Teller(self.tell)
        self._alert = alert or (lambda kind, channel, at: None)
        if rate is None:
            rate = RATE if self._takes(RATE) else round(float(info["default_samplerate"]))
        elif not self._takes(rate):
            raise AudioError(f"input device {self.name} cannot record at {rate} Hz")
        self.rate = rate
        if rate != RATE:
            self.tell(f"audio: {self.name} records at {rate} Hz; converted to {RATE} Hz as it streams")
        self._blocksize = max(1, round(chunk_seconds * rate))
        self._limit = max(1, round(max_behind * rate / self._blocksize))
        """Blocks held at most for listening that has fallen behind."""
        self.max_behind = max_behind
        self._blocks: queue.Queue[_Block] = queue.Queue()
        self._delivered = 0
        """Frames (at the device's rate) the device has delivered since it was last opened, taken or not."""
        self._base = 0
        """Stream position (16 kHz frames) at which it was last opened."""
        self._stream: Any = None
        self.stall = stall

    def _takes(self, rate: int) -> bool:
        try:
            self._sd.check_input_settings(device=self.device, channels=self.channels, samplerate=rate, dtype="int16")
        except (ValueError, self._sd.PortAudioError):
            return False
        return True

    def open(self) -> None:
        """Start the device: from now on its callback queues what it records."""
        if self._stream is not None:
            return

        def callback(indata: np.ndarray, frames: int, time: Any, status: Any) -> None:
            self._delivered += frames
            if self._blocks.qsize() >= self._limit:  # listening is behind: drop what waits, go on from now
                dropped = 0
                with contextlib.suppress(queue.Empty):
                    while True:
                        dropped += self._blocks.get_nowait().frames
                self._blocks.put(_Block(dropped, None))
            self._blocks.put(_Block(frames, indata.copy(), bool(status.input_overflow)))

        self._stream = self._sd.InputStream(
            device=self.device,
            channels=self.channels,
            samplerate=self.rate,
            dtype="int16",
            blocksize=self._blocksize,
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
        return self._base / RATE + self._delivered / self.rate

    def close(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None

    def stream(self, start: float = 0.0) -> Generator[tuple[AudioChunk, ...], None, None]:
        """Chunks as they arrive, one per channel, timed from the start of the stream (or of its clock). A device
        that delivers nothing for `stall` seconds is gone: the stream goes on in step with the wall clock with
        `missing` chunks of silence, tries the device again every `stall` seconds, and goes on with its audio when
        it returns. Audio lost or dropped on the way, and digital silence after sound, are `missing` too."""
        self.open()
        position = self._base = round(start * RATE)
        convert = _Resampler(self.rate, self.channels) if self.rate != RATE else None
        zeros = [_ZeroRuns() for _ in range(self.channels)]
        try:
            while True:
                try:
                    block = self._next()
                except queue.Empty:
                    gone = position / RATE
                    self.tell(
                        f"audio: {self.name} delivered nothing for {self.stall:g} s at {gone:.1f} s; "
                        "the record marks the gap, listening goes on when it returns"
                    )
                    for c in range(self.channels):
                        self._alert("lost", c, gone)
                    for stand_in in self._outage(position, round(self.chunk_seconds * RATE)):
                        position += len(stand_in[0].samples)
                        yield stand_in
                    self.tell(
                        f"audio: {self.name} is back at {position / RATE:.1f} s "
                        f"({position / RATE - gone:.1f} s not heard)"
                    )
                    for c in range(self.channels):
                        self._alert("back", c, position / RATE)
                    continue
                at = position / RATE
                if block.samples is None:
                    silence = np.zeros(round(block.frames * RATE / self.rate), dtype=np.int16)
                    self._say(
                        "behind",
                        at,
                        f"audio: listening fell {self.max_behind:g} s behind {self.name} at {at:.1f} s; "
                        f"{len(silence) / RATE:.1f} s dropped to catch up, and the record marks the gap",
                    )
                    position += len(silence)
                    yield tuple(AudioChunk(start=at, samples=silence, missing=True) for _ in range(self.channels))
                    continue
                if block.after_overrun:
                    self._say(
                        "overrun",
                        at,
                        f"audio: {self.name} overran at {at:.1f} s: some audio was lost, and the record marks it",
                    )
                frames = convert(block.samples) if convert is not None else block.samples
                if not len(frames):
                    continue
                position += len(frames)
                yield tuple(
                    AudioChunk(
                        start=at,
                        samples=frames[:, c].copy(),
                        missing=self._silent(zeros[c], frames[:, c], at, c) or block.after_overrun,
                    )
                    for c in range(self.channels)
                )
        finally:
            self.close()

    def _next(self) -> _Block:
        """The next block; queue.Empty when the device has delivered nothing for `stall` seconds. (A process
        frozen for longer, then woken, may look before the device's callback has run again: a moment more.)"""
        try:
            return self._blocks.get(timeout=self.stall)
        except queue.Empty:
            return self._blocks.get(timeout=0.5)

    def _silent(self, zeros: _ZeroRuns, samples: np.ndarray, at: float, channel: int) -> bool:
        """Whether this chunk of one channel is (partly) digital silence after sound; told once each way."""
        missing = zeros.missing(samples)
        name = self.name if self.channels == 1 else f"{self.name} ({_channel_name(channel, self.channels)})"
        if missing and zeros.since is None:
            zeros.since = at
            zeros.told = self._say(
                "silence",
                at,
                f"audio: {name} gives digital silence at {at:.1f} s (a dropout, or a muted input); the record marks it",
            )
            if zeros.told:
                self._alert("lost", channel, at)
        elif not missing and zeros.since is not None:
            if zeros.told:
                silent = at - zeros.since
                self.tell(f"audio: {name} gives sound again at {at:.1f} s ({silent:.1f} s of digital silence)")
                self._alert("back", channel, at)
            zeros.since = None
        return missing

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


def _channel_name(channel: int, channels: int) -> str:
    return ("left", "right")[channel] if channels == 2 else f"channel {channel + 1}"


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


class Devices:
    """The hall's input devices as one source: every channel of every device in lock-step on one clock (the
    first device's), started together by `steps`, stopped by `close`."""

    def __init__(self, sources: Sequence[MicrophoneSource]) -> None:
        self.sources = list(sources)
        self.name = ", ".join(s.name for s in self.sources)
        self.channels = sum(s.channels for s in self.sources)
        self._steps: Generator[tuple[AudioChunk, ...], None, None] | None = None

    def now(self) -> float:
        """Seconds the first device has delivered (stream time)."""
        return self.sources[0].now()

    def steps(self, start: float = 0.0) -> Iterator[tuple[AudioChunk, ...]]:
        self._steps = microphones(self.sources, start)
        return self._steps

    def close(self) -> None:
        if self._steps is not None:
            self._steps.close()
        for source in self.sources:
            source.close()
