"""Audio in: any WAV converted to 16 kHz mono int16 per channel; bad files give one clear AudioError."""

from __future__ import annotations

import io
import itertools
import random
import wave
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from crowded import calls_in_crowd

from assistant.audio import (
    RATE,
    AudioError,
    FileSource,
    MicrophoneSource,
    chunks,
    from_samples,
    read_wav,
    write_wav,
)
from assistant.audio.device import _Resampler, _Teller, _ZeroRuns
from assistant.endpoint import HALL_CUTTING, Endpointer, EndpointSettings
from assistant.grammar import Grammar
from assistant.messages import Ball
from lab.bench import hallset, real

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
    with pytest.raises(AudioError, match=r"^not audio libsndfile can read \(a text file.*notes\.wav$"):
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


def test_an_utterance_the_crowd_holds_open_is_closed_at_its_longest_and_says_so() -> None:
    """The stream opens in a lull of real-speech babble, then the crowd talks on, 10 dB under the calls: the noise
    level learnt in the lull lets the crowd hold the first utterance open until `max_utterance`, over the first
    calls (hall audio at 5 dB lost a "B seven" so, and with it heard as nothing a false A(3) violation followed).
    The endpointer says so (`limited`), so that the engines give that hearing as unsure; the utterances after it,
    closed by quiet, are not."""
    speech = read_wav(FIXTURES / "calls.wav").channels[0].astype(np.float64)
    babble = real.real_crowd(random.Random(1), part="test").babble(len(speech))
    voiced = speech[np.abs(speech) > 1000]
    babble *= np.sqrt(np.mean(voiced**2) / np.mean(babble**2) / 10.0)
    babble[: RATE // 4] *= 0.1
    mixed = np.clip(speech + babble, -32768, 32767).astype(np.int16)
    endpointer = Endpointer(HALL_CUTTING)
    spans: list[tuple[float, float, bool]] = []
    for chunk in chunks(mixed):
        for event in endpointer.feed(chunk.samples):
            if event.kind == "start":
                opened = event.time
            elif event.kind == "end":
                spans.append((opened, event.time, endpointer.limited))
    first, *rest = spans
    assert first[1] - first[0] >= HALL_CUTTING.max_utterance - 0.1 and first[2], spans
    assert rest and not any(limited for _, _, limited in rest), spans


def _listen(samples: np.ndarray, settings: EndpointSettings) -> tuple[list[tuple[str, float, float]], Endpointer]:
    """Utterances long enough to decode ('u') and stirrings ('s'), each utterance taken as heard sure (as an
    engine tells the endpointer its speaker's level)."""
    endpointer = Endpointer(settings)
    found: list[tuple[str, float, float]] = []
    opened = 0.0
    events = (event for chunk in chunks(samples) for event in endpointer.feed(chunk.samples))
    for event in itertools.chain(events, endpointer.flush()):
        if event.kind == "start":
            opened = event.time
        elif event.kind == "end" and endpointer.voiced_seconds() >= settings.min_speech:
            found.append(("u", opened, event.time))
            endpointer.heard_speaker(endpointer.last_peak)
        elif event.kind == "stir":
            found.append(("s", event.time, event.until))
    return found, endpointer


def test_a_call_under_the_crowd_that_opens_no_utterance_to_decode_is_a_stirring() -> None:
    """Calls 7 dB over real-speech babble: the caller's usual level stands so little over the crowd that a call
    may open no utterance, or one too short to decode (the fourth call here); before, nothing of it reached the
    rule of evidence, and a repeat lost so was taken as unsaid. Every call after the first (which sets the
    speaker's level) is now an utterance or a stirring, and the quiet between them is no proof of quiet."""
    samples, spans = calls_in_crowd(7.0)
    found, endpointer = _listen(samples, HALL_CUTTING)
    assert endpointer.unproven
    for start, end in spans[1:]:
        assert any(a < end and b > start for _, a, b in found), (start, end, found)
    off, _ = _listen(samples, replace(HALL_CUTTING, stir_frames=0))
    assert any(not any(a < end and b > start for _, a, b in off) for start, end in spans[1:]), off


def test_quiet_between_calls_far_over_the_crowd_is_proof_of_quiet() -> None:
    """Calls 20 dB over real-speech babble, then two minutes of the crowd alone: no stirring. The crowd flickers
    near an utterance's onset once (at 69 s), far under the caller's level, which a stirring must come near."""
    samples, _ = calls_in_crowd(20.0, after=120.0)
    found, endpointer = _listen(samples, HALL_CUTTING)
    assert not endpointer.unproven
    assert [f for f in found if f[0] == "s"] == []
    ungated, _ = _listen(samples, replace(HALL_CUTTING, stir_below_db=float("inf")))
    assert [f for f in ungated if f[0] == "s"], "the crowd's flicker this test is about is gone: choose another"


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


def test_a_file_source_converts_other_rates_and_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    t = np.arange(44100 * 2) / 44100
    tone = (np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)
    wav = tmp_path / "cd.wav"
    write_wav(wav, np.stack([tone, tone // 2], axis=1), rate=44100)
    pieces = list(FileSource(wav).steps())
    left = np.concatenate([p[0].samples for p in pieces])
    assert len(left) == pytest.approx(32000, abs=2)
    assert np.abs(left - read_wav(wav).channels[0]).max() < 200
    text = tmp_path / "notes.wav"
    text.write_text("not audio", encoding="utf-8")
    with pytest.raises(AudioError, match="a text file"):
        FileSource(text)
    with pytest.raises(AudioError, match="no such file"):
        FileSource(tmp_path / "missing.wav")


def test_a_file_source_streams_24_bit_audio_as_read_wav_reads_it(tmp_path: Path) -> None:
    t = np.arange(16000 * 3) / 16000
    tone = np.sin(2 * np.pi * 300 * t) * 0.5
    wav = tmp_path / "24bit.wav"
    as_int = np.round(tone * (2**23 - 1)).astype(np.int32)
    packed = np.stack([as_int & 0xFF, (as_int >> 8) & 0xFF, (as_int >> 16) & 0xFF], axis=1).astype(np.uint8)
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(3)
        w.setframerate(16000)
        w.writeframes(packed.tobytes())
    source = FileSource(wav, block_seconds=1.0)
    streamed = np.concatenate([step[0].samples for step in source.steps()])
    assert np.array_equal(streamed, read_wav(wav).channels[0])
    assert source.now() == pytest.approx(3.0)


@pytest.mark.parametrize("rate", [48000, 44100, 8000])
def test_a_device_at_another_rate_is_converted_block_by_block_without_steps(rate: int) -> None:
    t = np.arange(rate * 2) / rate
    tone = np.round(np.sin(2 * np.pi * 440 * t) * 8000).astype(np.int16)[:, None]
    convert = _Resampler(rate, 1)
    block = rate // 10 + 7  # blocks of no round size: the carry and the history are exercised
    out = np.concatenate([convert(tone[i : i + block]) for i in range(0, len(tone), block)])[:, 0]
    assert 32000 - 40 <= len(out) <= 32000  # all but the filter's delay, which waits for more input
    want = np.sin(2 * np.pi * 440 * np.arange(len(out)) / RATE) * 8000  # output time is input time
    assert np.abs(out[400:] - want[400:]).max() < 80


def test_digital_silence_is_marked_only_after_sound_and_only_when_long_enough() -> None:
    runs = _ZeroRuns()
    zeros, noise = np.zeros(1600, np.int16), np.full(1600, 3, np.int16)
    assert not runs.missing(zeros)  # a device that has not yet given sound is starting up
    assert not runs.missing(noise)
    short = noise.copy()
    short[500:580] = 0  # 5 ms: a waveform's own zeros never last this long, but they are under the limit
    assert not runs.missing(short)
    long = noise.copy()
    long[500:900] = 0  # 25 ms: a dropout
    assert runs.missing(long)
    assert not runs.missing(noise)
    tail, head = noise.copy(), noise.copy()
    tail[-200:], head[:200] = 0, 0  # 12.5 ms + 12.5 ms across a chunk edge
    assert not runs.missing(tail)
    assert runs.missing(head)
    assert runs.missing(zeros) and runs.missing(zeros)  # a muted input stays marked


def test_a_devices_trouble_is_told_once_then_counted() -> None:
    lines: list[str] = []
    say = _Teller(lines.append)
    assert say("overrun", 1.0, "overran at 1.0 s")
    assert not say("overrun", 3.0, "overran at 3.0 s") and not say("overrun", 9.0, "overran at 9.0 s")
    assert say("silence", 9.5, "silence at 9.5 s")  # another kind is told at once
    assert say("overrun", 12.0, "overran at 12.0 s")
    assert lines == ["overran at 1.0 s", "silence at 9.5 s", "overran at 12.0 s (2 more like it since the last line)"]
