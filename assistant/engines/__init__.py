"""Recognizer adapters behind one port: hall (Whisper with the call head trained here), whisper (Whisper with no
weights of ours), pocketsphinx (embedded) and vosk (a model is set)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..grammar import Grammar
from .base import EngineError, Heard, Recognizer, WordTiming

__all__ = [
    "DEFAULT_VOSK_MODEL",
    "ENGINES",
    "WHISPER_ENGINES",
    "EngineError",
    "Heard",
    "Recognizer",
    "WordTiming",
    "cache_dir",
    "find_vosk_model",
    "find_whisper_model",
    "make_recognizer",
]

ENGINES = ("hall", "whisper", "pocketsphinx", "vosk")
WHISPER_ENGINES = ("hall", "whisper")
"""The engines that run Whisper (and take its model folder)."""
DEFAULT_VOSK_MODEL = "vosk-model-small-en-us-0.15"
MODEL_ENV = "BINGO_VOSK_MODEL"


def cache_dir() -> Path:
    """Per-user model cache: $XDG_CACHE_HOME/bingo-assistant/models (default ~/.cache/...)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bingo-assistant" / "models"


def find_vosk_model(explicit: Path | None, configured: Path | None) -> Path:
    """The vosk model directory: --model, then config, then $BINGO_VOSK_MODEL, then the per-user cache."""
    env = os.environ.get(MODEL_ENV)
    candidates: list[tuple[str, Path]] = []
    if explicit is not None:
        candidates.append(("--model", Path(explicit)))
    elif configured is not None:
        candidates.append(("config", Path(configured)))
    elif env:
        candidates.append((MODEL_ENV, Path(env)))
    else:
        candidates.append(("cache", cache_dir() / DEFAULT_VOSK_MODEL))
    source, path = candidates[0]
    if not path.is_dir():
        hint = "run 'bingo-assistant models fetch', " if source == "cache" else ""
        raise EngineError(f"vosk model not found: {path} ({hint}set --model or {MODEL_ENV})")
    return path


def find_whisper_model(explicit: Path | None, configured: Path | None) -> Path:
    """The Whisper model folder: --model, config, $BINGO_WHISPER_MODEL, then the packaged model (joined once)."""
    from .whisper_model import find_whisper_model as find

    return find(explicit, configured)


def make_recognizer(engine: str, grammar: Grammar, model: Path | None = None, **options: Any) -> Recognizer:
    """Build a recognizer: 'hall' or 'whisper' (model = a CTranslate2 Whisper folder, optional), 'pocketsphinx'
    (model = acoustic model folder, optional) or 'vosk' (model folder). 'hall' is 'whisper' with the call head
    (`WhisperSettings.head`) whatever settings are given."""
    if engine in WHISPER_ENGINES:
        from dataclasses import replace

        from .whisper_engine import WhisperRecognizer, WhisperSettings

        folder = find_whisper_model(model, options.pop("configured", None))
        if engine == "hall":
            options["settings"] = replace(options.get("settings") or WhisperSettings(), head=True)
        return WhisperRecognizer(grammar, folder, **options)
    if engine == "pocketsphinx":
        from .pocketsphinx_engine import PocketsphinxRecognizer

        return PocketsphinxRecognizer(grammar, model=model, **options)
    if engine == "vosk":
        from .vosk_engine import VoskRecognizer

        return VoskRecognizer(grammar, find_vosk_model(model, options.pop("configured", None)), **options)
    raise EngineError(f"unknown engine: {engine!r} (choose from {', '.join(ENGINES)})")
