"""Generate the committed audio fixtures in audio_fixtures/ with espeak-ng, reproducibly.

    python tools/make_fixtures.py [--out audio_fixtures]

Each recording is laid out on a timeline, mixed with a little pink noise from a fixed seed (pure digital
silence misleads pocketsphinx's noise and CMN estimates), and written with its transcript in the transcript
script format. Caller and floor use different espeak-ng voices. Stereo files: left = caller, right = floor.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.audio import RATE, from_samples, write_wav

CALLER_VOICE = ("en-us", 155)
FLOOR_VOICE = ("en-gb+f3", 150)
NOISE_RMS = 40.0  # int16 units: about -58 dBFS of pink noise
SEED = 20260101


@dataclass(frozen=True)
class Line:
    time: float
    role: str  # caller | floor | player
    words: str


def speak(words: str, voice: tuple[str, int]) -> np.ndarray:
    """espeak-ng speech as 16 kHz int16 mono."""
    name, speed = voice
    wav = subprocess.run(
        ["espeak-ng", "-v", name, "-s", str(speed), "--stdout", words], check=True, capture_output=True
    ).stdout
    import wave

    with wave.open(io.BytesIO(wav)) as w:
        rate = w.getframerate()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return from_samples(data, rate).channels[0]


def pink_noise(n: int, rms: float, rng: np.random.Generator) -> np.ndarray:
    """Pink (1/f) noise by shaping white noise in the frequency domain."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype=np.float64)
    f[0] = 1.0
    pink = np.fft.irfft(spectrum / np.sqrt(f), n)
    pink -= pink.mean()
    return pink / (np.std(pink) + 1e-12) * rms


def voice_of(role: str) -> tuple[str, int]:
    return CALLER_VOICE if role == "caller" else FLOOR_VOICE


def render(lines: list[Line], stereo: bool, tail: float = 1.0) -> tuple[np.ndarray, list[Line]]:
    """Place each line at its time on its channel; return int16 audio and the lines with real start times."""
    clips = [(line, speak(line.words, voice_of(line.role))) for line in lines]
    end = max(line.time + len(clip) / RATE for line, clip in clips) + tail
    n = int(end * RATE)
    channels = np.zeros((n, 2 if stereo else 1))
    for line, clip in clips:
        at = int(line.time * RATE)
        channel = 0 if line.role == "caller" or not stereo else 1
        channels[at : at + len(clip), channel] += clip
    rng = np.random.default_rng(SEED)
    for c in range(channels.shape[1]):
        channels[:, c] += pink_noise(n, NOISE_RMS, rng)
    audio = np.clip(np.round(channels), -32768, 32767).astype(np.int16)
    return (audio if stereo else audio[:, 0]), lines


def timeline(items: list[tuple[str, str]], start: float = 0.6, gap: float = 0.7) -> list[Line]:
    """Lines one after another: each starts `gap` seconds after the previous one ends."""
    out: list[Line] = []
    t = start
    for role, words in items:
        out.append(Line(round(t, 2), role, words))
        t += len(speak(words, voice_of(role))) / RATE + gap
    return out


def script_text(header: str, lines: list[Line]) -> str:
    body = "\n".join(f"{line.time:.2f} {line.role}: {line.words}" for line in lines)
    return f"{header}\n{body}\n"


CALLS = ["b seven", "i twenty two", "n thirty eight", "g fifty one", "o sixty four", "b twelve"]
WINNING = ["b seven", "i twenty two", "n thirty eight", "g fifty one", "o sixty four"]


def demo_game(repeat_all: bool) -> list[tuple[str, str]]:
    """One short regular game; with repeat_all False the fourth call is said only once (A(3))."""
    items: list[tuple[str, str]] = [("caller", "last ball called is not required")]
    for i, call in enumerate(CALLS):
        items.append(("caller", call))
        if repeat_all or i != 3:
            items.append(("caller", call))
    items.append(("player", "bingo"))
    items.append(("floor", "manufacturer one four two serial number four seven two nine one"))
    items += [("floor", call) for call in WINNING]
    items += [
        ("caller", "valid bingo"),
        ("caller", "are there any other bingos"),
        ("caller", "this game is completed"),
    ]
    return items


HEADER = "@game type=regular last_ball_required=no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "audio_fixtures")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    games = {
        "demo_game": ("# A compliant regular game (left: caller, right: floor and players).", True),
        "demo_violation": ("# The same game with one planted A(3) violation: g fifty one is called only once.", False),
    }
    for name, (comment, repeat_all) in games.items():
        lines = timeline(demo_game(repeat_all), gap=0.6)
        audio, lines = render(lines, stereo=True)
        write_wav(out / f"{name}.wav", audio)
        (out / f"{name}.txt").write_text(f"{comment}\n" + script_text(HEADER, lines), encoding="utf-8")

    # Calls by the caller voice, each said once with pauses: a mono recording of the calling step.
    calls = ["b seven", "o sixty one", "n thirty three", "g fifty two", "i nineteen", "b twelve"]
    lines = timeline([("caller", c) for c in calls], gap=0.8)
    audio, lines = render(lines, stereo=False)
    write_wav(out / "calls.wav", audio)
    (out / "calls.txt").write_text("# Six calls, each said once (caller voice).\n" + script_text(HEADER, lines))

    # Ordinary chatter the grammar does not hold: must not come out as confident calls.
    chatter = [
        "we went to the shop and bought some bread",
        "how are you doing tonight my friend",
        "could you pass me the salt please",
        "my daughter plays the violin on sundays",
    ]
    lines = timeline([("player", c) for c in chatter], gap=0.8)
    audio, lines = render(lines, stereo=False)
    write_wav(out / "chatter.wav", audio)
    (out / "chatter.txt").write_text("# Off-grammar chatter (floor voice); no calls.\n" + script_text(HEADER, lines))
    for path in sorted(out.glob("*.wav")):
        print(f"{path.name}: {path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
