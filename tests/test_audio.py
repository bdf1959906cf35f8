"""Audio in: any WAV converted to 16 kHz mono int16 per channel; bad files give one clear AudioError."""

from __future__ import annotations

import io
import random
import wave
from pathlib import Path

import numpy as np
import pytest

from assistant.audio import RATE, AudioError, MicrophoneSource, chunks, from_samples, read_wav, write_wav
from assistant.bench import hallset, real
from assistant.endpoint import HALL_CUTTING, Endpointer, EndpointSettings
from assistant.grammar import Grammar
from assistant.messages import Ball

FIXTURES = Path(__file__).resolve().parent.parent / "audio_fixtures"


def tone(freq: float, seconds: float, rate: int, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def pcm_bytes(signal: np.ndarray, width: int) -> bytes:
    """Float (-1..1) samples, (n,) or (n, ch), as little-endian PCM of the given byte width."""
    flat = signal.reshape(-1)
    if width == 1:
        return np.round(flat * 127 + 128).astype(np.uint8).tobytes()
    if width == 2:
        return np.round(flat * 32767).astype("<i2").tobytes()
    if width == 3:
        v = np.round(flat * (2**23 - 1)).astype(np.int32)
        return np.stack([v & 255, (v >> 8) & 255, (v >> 16) & 255], axis=1).astype(np.uint8).tobytes()
    return np.round(flat * (2**31 - 1)).astype("<i4").tobytes()


def wav_file(path: Path, signal: np.ndarray, rate: int, width: int) -> Path:
    channels = 1 if signal.ndim == 1 else signal.shape[1]
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(pcm_bytes(signal, width))
    path.write_bytes(buffer.getvalue())
    return path


def peak_hz(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64)))
    return float(np.argmax(spectrum) * RATE / len(samples))


@pytest.mark.parametrize("rate", [8000, 11025, 22050, 44100, 48000])
@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_any_rate_and_width_becomes_16k_int16(tmp_path: Path, rate: int, width: int) -> None:
    stereo = np.stack([tone(440, 0.5, rate), tone(1000, 0.5, rate, 0.25)], axis=1)
    rec = read_wav(wav_file(tmp_path / "x.wav", stereo, rate, width))
    assert rec.rate == RATE
    assert len(rec.channels) == 2
    assert all(ch.dtype == np.int16 for ch in rec.channels)
    assert rec.duration == pytest.approx(0.5, abs=0.01)
    assert peak_hz(rec.channels[0]) == pytest.approx(440, abs=5)
    assert peak_hz(rec.channels[1]) == pytest.approx(1000, abs=5)
    # levels survive conversion (8-bit is coarse, so a loose bound)
    assert np.max(np.abs(rec.channels[0])) == pytest.approx(0.5 * 32767, rel=0.05)
    assert np.max(np.abs(rec.channels[1])) == pytest.approx(0.25 * 32767, rel=0.05)


def test_many_channels_each_converted(tmp_path: Path) -> None:
    four = np.stack([tone(300 + 200 * c, 0.3, 8000) for c in range(4)], axis=1)
    rec = read_wav(wav_file(tmp_path / "four.wav", four, 8000, 2))
    assert [round(peak_hz(ch) / 100) for ch in rec.channels] == [3, 5, 7, 9]


def test_text_file_named_wav(tmp_path: Path) -> None:
    path = tmp_path / "notes.wav"
    path.write_text("this is not audio\n")
    with pytest.raises(AudioError, match=r"^not a (PCM )?WAV file.*notes\.wav$"):
        read_wav(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.wav"
    path.write_bytes(b"")
    with pytest.raises(AudioError, match=r"^empty audio.*empty\.wav$"):
        read_wav(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match=r"^no such file: .*gone\.wav$"):
        read_wav(tmp_path / "gone.wav")


def test_zero_length_wav(tmp_path: Path) -> None:
    path = wav_file(tmp_path / "zero.wav", np.zeros(0), 16000, 2)
    with pytest.raises(AudioError, match=r"^empty audio \(no samples\)"):
        read_wav(path)


def test_truncated_wav(tmp_path: Path) -> None:
    good = wav_file(tmp_path / "good.wav", tone(440, 0.2, 16000), 16000, 2).read_bytes()
    path = tmp_path / "cut.wav"
    path.write_bytes(good[:30])
    with pytest.raises(AudioError, match=r"cut\.wav$"):
        read_wav(path)


def test_error_message_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.wav"
    path.write_text("hello")
    with pytest.raises(AudioError) as info:
        read_wav(path)
    assert "\n" not in str(info.value)


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    samples = (tone(700, 0.25, RATE) * 20000).astype(np.int16)
    write_wav(tmp_path / "rt.wav", samples)
    rec = read_wav(tmp_path / "rt.wav")
    assert np.array_equal(rec.channels[0], samples)


def test_from_samples_float_stereo_at_8k() -> None:
    stereo = np.stack([tone(500, 0.4, 8000), tone(900, 0.4, 8000)], axis=1)
    rec = from_samples(stereo, 8000)
    assert rec.path is None and len(rec.channels) == 2
    assert len(rec.channels[0]) == int(0.4 * RATE)
    assert peak_hz(rec.channels[1]) == pytest.approx(900, abs=5)


def test_from_samples_rejects_empty_and_odd_types() -> None:
    with pytest.raises(AudioError, match="empty"):
        from_samples(np.zeros(0, dtype=np.int16), 16000)
    with pytest.raises(AudioError, match="unsupported sample type"):
        from_samples(np.zeros(10, dtype=np.uint16), 16000)


def test_chunks_cover_the_channel_in_order() -> None:
    samples = np.arange(16000 * 2 + 123, dtype=np.int64).astype(np.int16)
    parts = list(chunks(samples, 0.1))
    assert [round(p.start, 3) for p in parts[:3]] == [0.0, 0.1, 0.2]
    assert np.array_equal(np.concatenate([p.samples for p in parts]), samples)
    assert parts[-1].end == pytest.approx(len(samples) / RATE)


def test_microphone_without_such_device_says_so() -> None:
    with pytest.raises(AudioError, match=r"^no input device"):
        MicrophoneSource("no-such-device-in-this-hall")


def test_endpointer_cuts_each_call_of_the_fixture() -> None:
    """calls.wav holds six calls with pauses; the transcript gives their start times."""
    rec = read_wav(FIXTURES / "calls.wav")
    starts = [float(line.split()[0]) for line in (FIXTURES / "calls.txt").read_text().splitlines()[2:]]
    endpointer = Endpointer()
    events = [e for c in chunks(rec.channels[0]) for e in endpointer.feed(c.samples)]
    events += list(endpointer.flush())
    found = [e.time for e in events if e.kind == "start"]
    assert len(found) == len(starts) == len([e for e in events if e.kind == "end"])
    for got, expected in zip(found, starts, strict=True):
        assert got == pytest.approx(expected, abs=0.4)


def test_endpointer_closes_utterances_in_continuous_babble() -> None:
    """Under steady noise 20 dB below the speech, the floor rises and every call still closes."""
    rec = read_wav(FIXTURES / "calls.wav")
    speech = rec.channels[0].astype(np.float64)
    rng = np.random.default_rng(7)
    noise = rng.standard_normal(len(speech))
    voiced = speech[np.abs(speech) > 1000]
    noise *= np.sqrt(np.mean(voiced**2)) / 10.0  # 20 dB below the speech
    mixed = np.clip(speech + noise, -32768, 32767).astype(np.int16)
    endpointer = Endpointer()
    events = [e for c in chunks(mixed) for e in endpointer.feed(c.samples)]
    closed_in_stream = [e for e in events if e.kind == "end"]
    assert len(closed_in_stream) == 6
    assert not endpointer.in_speech


def test_endpointer_learns_a_louder_background() -> None:
    """The hall gets loud and stays loud: at most one over-long cut, then the new level is background."""
    rng = np.random.default_rng(0)
    quiet, loud = rng.standard_normal(16000 * 3) * 30, rng.standard_normal(16000 * 30) * 3000
    audio = np.concatenate([quiet, loud]).astype(np.int16)
    endpointer = Endpointer()
    events = [e for c in chunks(audio) for e in endpointer.feed(c.samples)]
    assert len([e for e in events if e.kind == "end"]) <= 1
    assert not endpointer.in_speech
    assert endpointer.noise_db is not None and endpointer.noise_db > 60


def _whole(stream: hallset.HallStream, settings: EndpointSettings) -> int:
    """Sayings cut as one utterance of their own (`hallset.cut_kind`)."""
    cuts = hallset.cut(stream.continuous, settings)
    return sum(hallset.cut_kind(seg, stream.segments, cuts) == "whole" for seg in stream.segments)


def test_endpointer_keeps_each_saying_whole_in_real_babble() -> None:
    """A hall: each call said twice (the letter, a pause of 0.1-0.6 s, the number, or one breath), the PA
    returning it, real-speech babble 20 dB under the whole stream. With the hall's cutting each saying is one
    utterance of its own: the pause does not split it, the babble neither joins it nor bridges the quiet between two
    sayings. The default cutting (0.3 s hangover, any frame above the noise keeps an utterance open) splits or joins
    many of them."""
    grammar = Grammar.load()
    crowd = real.real_crowd(random.Random(3), part="test")
    balls = [Ball(n) for n in (3, 17, 33, 48, 64, 72, 9, 25, 41, 57, 66, 14)]
    stream = hallset.build("espeak:en-us@165", balls, 20.0, 5, grammar, crowd)
    sayings = len(stream.segments)
    assert _whole(stream, HALL_CUTTING) >= sayings - 1
    assert _whole(stream, EndpointSettings()) <= sayings * 0.8
