"""Recordings: files libsndfile reads (every WAV variant, FLAC, OGG, MP3, AIFF...; any rate, width and channel
count) and audio in memory, converted to what the recognizers need (16 kHz mono int16 per channel); `FileSource`
and `RecordingSource` give them out as a stream.

A stereo recording is a caller channel (left) and a floor channel (right); the pipeline splits by channel. A file
of more channels says which are used (`channels`, the CLI's `--channels CALLER,FLOOR`). A truncated file is read as
far as it goes, and its `shortfall` says so.
"""

from __future__ import annotations

import importlib
import os
import sys
import wave
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import soundfile as sf

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
    shortfall: str | None = None
    """What the file lacked (truncated, unreadable past a point): it was read as far as it goes."""


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


AUDIO_SUFFIXES = frozenset(
    {".wav", ".wave", ".bwf", ".rf64", ".w64", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff", ".aifc"}
    | {".caf", ".au", ".snd", ".m4a", ".aac", ".wma", ".mp4"}
)
"""Names a recording goes by: a file so named that holds no audio is a wrong file, never taken as a transcript."""

MP3 = "an MP3 file"
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (8, b"WAVE", "a WAV file"),
    (0, b"fLaC", "a FLAC file"),
    (0, b"OggS", "an Ogg file"),
    (0, b"ID3", MP3),
    (4, b"ftyp", "an MP4/M4A (AAC) file"),
    (8, b"AIFF", "an AIFF file"),
    (8, b"AIFC", "an AIFF-C file"),
    (0, b"caff", "a CAF file"),
    (8, b"AVI ", "an AVI video"),
    (0, bytes.fromhex("3026b2758e66cf11"), "a WMA/ASF file"),
    (0, b"#!AMR", "an AMR file"),
    (0, b"MThd", "a MIDI file (notes, not sound)"),
    (0, b"%PDF", "a PDF document"),
    (0, b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (0, b"SQLite format 3", "a SQLite database (a record? see `verify`/`report`)"),
    (0, b"\x7fELF", "a program"),
)
"""What a file that libsndfile cannot read is, told by its first bytes, so the one-line error names it."""


def _sniff(head: bytes) -> str | None:
    """The kind of file `head` (its first bytes) starts, when it is one we know by its bytes."""
    for offset, magic, name in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return name
    if head[:2] not in UTF16_MARKS and len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:  # MPEG sync
        return MP3
    return None


@contextmanager
def _decoder_quiet() -> Iterator[None]:
    """The MP3 decoder libsndfile uses (mpg123) prints warnings on the process's stderr, where the CLI keeps one
    line per error: they are silenced while an MP3 is opened or read whole (the process's stderr, every thread's,
    goes nowhere meanwhile; libsndfile's own log still tells what it found)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (a test's capture): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _open(path: Path) -> sf.SoundFile:
    """The file opened by libsndfile; AudioError with a one-line reason naming what the file is otherwise."""
    if not path.exists():
        raise AudioError(f"no such file: {path}")
    if path.is_dir():
        raise AudioError(f"not an audio file (a directory): {path}")
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError as exc:
        raise AudioError(f"cannot read {path}: {exc.strerror}") from exc
    if not head:
        raise AudioError(f"empty audio (0 bytes): {path}")
    try:
        with _decoder_quiet() if _sniff(head) == MP3 else nullcontext():
            return sf.SoundFile(str(path))
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        reason = str(exc).removeprefix("Error opening").strip(" :")
        reason = " ".join(reason.replace(repr(str(path)), "").split()).strip(" :.") or "unreadable"
        kind = _sniff(head) or ("a text file" if _is_text(head) else "no audio format libsndfile knows")
        raise AudioError(f"not audio libsndfile can read ({kind}; {reason}): {path}") from None


UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")
"""Byte-order marks of UTF-16 text (Windows Notepad's "Unicode")."""


def _is_text(head: bytes) -> bool:
    """True when `head` reads as text: UTF-8 (a last character cut at the end of the bytes read allowed), or
    UTF-16 after its byte-order mark."""
    if head.startswith(UTF16_MARKS):
        try:
            text = head[: len(head) // 2 * 2].decode("utf-16")
        except UnicodeDecodeError:
            return False
        return "\x00" not in text
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return b"\x00" not in head


def _plain_bytes(head: bytes) -> bool:
    """True when `head` could be text in some 8-bit encoding (no control bytes but line ends and tabs)."""
    return all(b >= 0x20 or b in b"\t\n\r\f" for b in head)


def is_audio(path: Path) -> bool:
    """True when `path` is a recording libsndfile reads (WAV of any kind, FLAC, OGG, MP3, AIFF...), told by its
    content, not its name; False when it is text (a transcript; the script reader tells one not in UTF-8).
    AudioError with a one-line reason naming what the file is when it is neither, or when a file named as audio
    (`AUDIO_SUFFIXES`) holds none."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise AudioError(f"cannot read {path}: {exc.strerror}") from exc
    named = path.suffix.lower() in AUDIO_SUFFIXES
    kind = _sniff(head)
    if kind is None and _is_text(head) and not named:
        return False  # an empty file too: a transcript that holds nothing
    try:
        _open(path).close()
    except AudioError:
        if kind is None and not named and _plain_bytes(head):
            return False  # text in another encoding: the script reader says so
        raise
    return True


@dataclass(frozen=True)
class _Riff:
    """Where a RIFF/WAVE file's samples are and what its header says of them."""

    data_at: int
    """Offset of the data chunk's first sample."""
    size: int
    """The data chunk's size as the header says (0 when the recorder never wrote it)."""
    align: int
    """Bytes a frame."""

    @property
    def claim(self) -> int | None:
        """The frames the header says it holds, whether or not the file holds them (libsndfile reads what is there
        and says no more); None for a size left open (0, or RF64 and streaming's 0xFFFFFFFF)."""
        return self.size // self.align if self.align and 0 < self.size < 0xFFFFFFFF else None


def _riff(path: Path) -> _Riff | None:
    """The layout of a RIFF/WAVE file; None for another kind of file."""
    try:
        with path.open("rb") as f:
            head = f.read(12)
            if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
                return None
            align = 0
            while len(chunk := f.read(8)) == 8:
                size = int.from_bytes(chunk[4:], "little")
                if chunk[:4] == b"fmt ":
                    fmt = f.read(size + (size & 1))
                    align = int.from_bytes(fmt[12:14], "little")
                elif chunk[:4] == b"data":
                    return _Riff(data_at=f.tell(), size=size, align=align)
                else:
                    f.seek(size + (size & 1), 1)
    except OSError:
        return None
    return None


PIECE = 4096
"""Frames asked of libsndfile at a time (a FLAC frame's size)."""


class _Reader:
    """A recording opened by libsndfile, read a block at a time as (n, channels) float samples in int16 scale
    (16-bit files as int16), its channels chosen; it keeps how far it got and what the file lacked."""

    def __init__(self, path: Path, channels: Sequence[int] | None) -> None:
        self.path = Path(path)
        self.file = _open(self.path)
        self.rate = int(self.file.samplerate)
        self.kind = f"{self.file.format_info} {self.file.subtype_info}"
        found = int(self.file.channels)
        if self.rate < 1 or found < 1:
            self.file.close()
            raise AudioError(f"not audio (bad header): {self.path}")
        chosen = tuple(channels) if channels is not None else tuple(range(found))
        beyond = [c + 1 for c in chosen if not 0 <= c < found]
        if beyond:
            self.file.close()
            raise AudioError(f"no channel {beyond[0]} in {self.path}: it has {found} (--channels counts from 1)")
        self.chosen = chosen
        riff = _riff(self.path)
        self._raw: BinaryIO | None = None
        self.unfinished = False
        """The header's sizes were never written (a recorder stopped before it closed the file): the samples after
        the header are read as they are."""
        if riff is not None and riff.size == 0 and self.file.frames == 0 and riff.align:
            self._raw = self.path.open("rb")
            self._raw.seek(riff.data_at)
            form = {"samplerate": self.rate, "channels": found, "subtype": self.file.subtype, "endian": "LITTLE"}
            self.file.close()
            self.file = sf.SoundFile(self._raw, mode="r", format="RAW", **form)
            self.unfinished = True
        self.claimed = max(int(self.file.frames), (riff.claim if riff is not None else None) or 0)
        """Frames the file says it holds (its header, or its decoder's count)."""
        self.ended = not (self.file.format == "OGG" and "lacks an end-of-stream" in self.file.extra_info)
        """False when an Ogg stream stops before its last page (a file cut short)."""
        self.read = 0
        """Frames read so far."""
        self.broken: str | None = None
        """libsndfile's reason when reading stopped before the end."""
        self.pcm16 = self.file.subtype == "PCM_16"

    def blocks(self, frames: int) -> Iterator[np.ndarray]:
        """Blocks of up to `frames` frames, the chosen channels only: int16 for 16-bit files, otherwise float64 in
        the int16 range. A file that cannot be read further ends there (`broken`), with what was read before."""
        try:
            while True:
                pieces = list(self._pieces(frames))
                if not pieces:
                    return
                block = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
                self.read += len(block)
                yield block[:, list(self.chosen)] if self.chosen != tuple(range(block.shape[1])) else block
                if self.broken is not None:
                    return
        finally:
            self.close()

    def close(self) -> None:
        self.file.close()
        if self._raw is not None:
            self._raw.close()

    def _pieces(self, frames: int) -> Iterator[np.ndarray]:
        # read in pieces of a decoder's frame: a FLAC broken in the middle gives nothing of a read that spans the
        # break, so what comes before it is kept to the last piece
        while frames > 0 and self.broken is None:
            try:
                if self.pcm16:
                    piece = self.file.read(min(frames, PIECE), dtype="int16", always_2d=True)
                else:
                    piece = self.file.read(min(frames, PIECE), dtype="float64", always_2d=True) * 32768.0
            except (sf.LibsndfileError, RuntimeError) as exc:
                self.broken = str(exc).removeprefix("Error :").strip(" .") or "unreadable"
                return
            if not len(piece):
                return
            frames -= len(piece)
            yield piece

    def shortfall(self) -> str | None:
        """What the file lacked, once read: it ended before what its header claims, or could not be read on."""
        why = f" ({self.broken})" if self.broken is not None else ""
        if self.read < self.claimed:
            return (
                f"{self.path.name} is truncated: it holds {_clock(self.read / self.rate)} of the "
                f"{_clock(self.claimed / self.rate)} its header claims{why}; read as far as it goes"
            )
        held = _clock(self.read / self.rate)
        if self.broken is not None:
            return f"{self.path.name} could not be read after {held}{why}; read as far as it goes"
        if self.unfinished:
            return (
                f"{self.path.name}'s header was never finished (its recorder stopped before closing the file): "
                f"read the {held} it holds, which may end early"
            )
        if not self.ended:
            return f"{self.path.name} ends without its last page (cut short): read the {held} it holds"
        return None


def channels_heard(path: Path, chosen: Sequence[int] | None) -> tuple[int, ...]:
    """The channels of the recording at `path` heard as the caller's and the floor's (0-based): `chosen`, or all of
    them when there are one or two. A recording of more says which to choose (AudioError): a six-track recorder's
    channels read as two without a word would hear the wrong microphones."""
    with _open(Path(path)) as f:
        found = int(f.channels)
    if chosen is not None:
        return tuple(chosen)
    if found > 2:
        raise AudioError(
            f"{found} channels in {path}: say which is the caller's and which the floor's with "
            "--channels CALLER,FLOOR (e.g. --channels 1,2), or --channels CALLER alone"
        )
    return tuple(range(found))


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def read_wav(path: Path, channels: Sequence[int] | None = None) -> Recording:
    """Read a whole recording libsndfile reads (every WAV variant, FLAC, OGG, MP3, AIFF...; any rate and width),
    `channels` chosen (0-based; all by default); raise AudioError otherwise. A truncated file is
    read as far as it goes, and `Recording.shortfall` says so."""
    reader = _Reader(Path(path), channels)
    with _decoder_quiet() if reader.file.format == "MP3" else nullcontext():
        blocks = list(reader.blocks(1 << 16))
    if not blocks:
        raise AudioError(f"empty audio (no samples): {path}")
    frames = np.concatenate(blocks).astype(np.float64)
    converted = _convert(frames, reader.rate)
    return Recording(
        path=Path(path),
        rate=RATE,
        channels=converted,
        duration=len(converted[0]) / RATE,
        shortfall=reader.shortfall(),
    )


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
    """A recording as a stream of chunks of every channel at 16 kHz int16, read a block at a time, so a recording
    of hours is heard with steady memory (`read_wav` holds it all: for 30 minutes of 16 kHz stereo ~115 MB of
    PCM and ~0.5 GB while converting). 16-bit files at 16 kHz pass through as they are; other rates and widths
    are converted block by block (a block edge can carry a tiny resampling step, a fraction of a sample).
    `channels`: the file's channels used, in order (caller, floor), 0-based (all by default; `channels_heard`)."""

    def __init__(
        self,
        path: Path,
        chunk_seconds: float = 0.1,
        block_seconds: float = 10.0,
        channels: Sequence[int] | None = None,
    ) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self._reader = _Reader(self.path, channels)
        self.rate, self.channels, self.frames = self._reader.rate, len(self._reader.chosen), self._reader.claimed
        if self.frames < 1:
            self._reader.close()
            raise AudioError(f"empty audio (no samples): {self.path}")
        self.chunk = max(1, round(chunk_seconds * RATE))
        step = self.rate // gcd(self.rate, RATE)  # input frames per whole number of output frames
        whole = max(1, round(block_seconds * RATE) // self.chunk) * self.chunk
        self.block_in = max(step, whole * self.rate // RATE // step * step)
        self.position = 0
        """Frames (16 kHz) handed out so far."""

    @property
    def duration(self) -> float:
        """Seconds the file says it holds (a truncated file holds less: `shortfall`)."""
        return self.frames / self.rate

    def now(self) -> float:
        """Seconds of audio handed out so far."""
        return self.position / RATE

    def shortfall(self) -> str | None:
        """Once read: what the file lacked (truncated, or unreadable past a point), or None."""
        return self._reader.shortfall()

    def _blocks(self) -> Iterator[np.ndarray]:
        for block in self._reader.blocks(self.block_in):
            if self._reader.pcm16 and self.rate == RATE:
                yield block
            else:
                yield np.stack(_convert(block.astype(np.float64), self.rate), axis=1)

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
