"""Settings: the bundled config/default.toml, a hall's own file, then command-line flags, in that order."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

_CHECKOUT = Path(__file__).resolve().parent.parent
ROOT = _CHECKOUT if (_CHECKOUT / "config" / "default.toml").is_file() else Path(__file__).resolve().parent / "bundled"
"""Where the defaults, the grammar, the rule pack and the demo's recordings are: the checkout's top-level folders, or
their copy in an installed wheel (`assistant/bundled/`). Relative paths in the defaults are relative to it."""
DEFAULT_CONFIG = ROOT / "config" / "default.toml"


class SettingsError(ValueError):
    """A configuration file or value is unusable."""


@dataclass(frozen=True)
class RecognizerSettings:
    engine: str = "hall"
    """hall (the default: whisper with the call head trained here), whisper (Whisper base from its registry
    packages), pocketsphinx (embedded) or vosk."""
    model: Path | None = None
    """The engine's model folder from the command line (--model); overrides the engine's configured one."""
    whisper_model: Path | None = None
    """A CTranslate2 Whisper folder; None means BINGO_WHISPER_MODEL, then the packaged model (user cache)."""
    vosk_model: Path | None = None
    """A vosk model directory; None means BINGO_VOSK_MODEL, then the per-user cache."""
    grammar: Path = ROOT / "grammars" / "bingo.yaml"
    """The one grammar source."""
    min_snr_db: float = 30.0
    """pocketsphinx: a hearing that stood less than this many dB above the hall's background is unsure."""


@dataclass(frozen=True)
class ProcedureConfig:
    rules: Path = ROOT / "config" / "rules" / "nm-15.4.7.11.yaml"
    """The rule pack the procedure follows."""
    repeat_window: float = 10.0
    """Seconds for the second saying of a call (A(3))."""
    answer_window: float = 15.0
    """Seconds for a due announcement or answer."""
    claim_echo: float = 1.5
    """Seconds within which a player's second bingo may be the first said again: the card it owes is uncertain."""
    claim_wait: float = 4.0
    """Seconds a bingo heard unsure waits before "Was that a bingo?"; a sure hearing in them answers it."""
    claim_ask_floor: float = 0.2
    """A bingo heard with less confidence is kept for review, not asked about ("Was that a bingo?")."""
    prize_cap: float = 2500.0
    """Aggregate prizes of an occasion (E(2)(f))."""
    min_confidence: float = 0.5
    """Below this recognizer confidence a hearing is unsure: never a violation on its own."""


@dataclass(frozen=True)
class VoiceConfig:
    mode: str = "auto"
    """auto, live, wav or silent."""
    rate: int = 170
    """Words per minute."""
    volume: float = 1.0
    """0..1."""
    voice: str | None = None
    """An espeak-ng voice name; None for the default."""
    device: str | None = None
    """Output device for prompts (the caller's earpiece)."""
    muted_kinds: frozenset[str] = frozenset()
    """Prompt kinds never spoken."""
    repeat_suppress: float = 20.0
    """Seconds within which the same prompt is not said again."""
    interrupt: bool = True
    """A higher-priority prompt (a violation) cuts off one being spoken (a reminder)."""
    notice_quiet: float = 3.0
    """Seconds the caller's microphone must be quiet before a notice (a violation recorded) is said live."""


@dataclass(frozen=True)
class AudioConfig:
    caller_device: str | None = None
    """Input device of the caller's microphone."""
    floor_device: str | None = None
    """Input device of the floor employee's microphone; None: none, or the right channel of the caller's."""
    device_rate: int | None = None
    """Sample rate to record the devices at, converted to 16 kHz as they stream; None: 16 kHz if the device
    takes it, else its own rate."""
    max_behind: float = 10.0
    """Seconds of audio held for listening that has fallen behind the devices; beyond that it is dropped (and the
    gap marked in the record), so the verdicts never fall further behind the hall."""


@dataclass(frozen=True)
class StoreConfig:
    db: Path | str = Path("bingo.db")
    """The record: a SQLite file, or a hall's chain on a PostgreSQL server (`postgresql://HOST/DB?hall=NAME`)."""
    retention_years: int = 3
    """Years records are kept (15.4.1.12 NMAC)."""


@dataclass(frozen=True)
class Settings:
    recognizer: RecognizerSettings = field(default_factory=RecognizerSettings)
    procedure: ProcedureConfig = field(default_factory=ProcedureConfig)
    voice: VoiceConfig = field(default_factory=VoiceConfig)
    audio: AudioConfig = field(default_factory=AudioConfig)
    store: StoreConfig = field(default_factory=StoreConfig)


def _coerce(section: str, name: str, current: Any, value: Any, base: Path) -> Any:
    """Turn a TOML value into the type of the dataclass field it sets."""
    if isinstance(current, Path) or name in ("vosk_model", "whisper_model", "model", "rules", "grammar", "db"):
        if value in ("", None):
            return None if name in ("vosk_model", "whisper_model", "model") else current
        if name == "db" and str(value).startswith(("postgresql://", "postgres://")):
            return str(value)
        path = Path(str(value)).expanduser()
        return path if path.is_absolute() or name == "db" else base / path
    if isinstance(current, frozenset):
        if not isinstance(value, list):
            raise SettingsError(f"[{section}] {name} must be a list")
        return frozenset(str(v) for v in value)
    if name == "device_rate":  # a rate, or 0/"" for the device's choice
        if value in (0, "", None):
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SettingsError(f"[{section}] {name} must be a sample rate in Hz (0: the device's choice)")
        return value
    if isinstance(current, bool):
        return bool(value)
    if isinstance(current, int) and not isinstance(value, bool):
        if not isinstance(value, int | float):
            raise SettingsError(f"[{section}] {name} must be a number")
        return type(current)(value)
    if isinstance(current, float):
        if not isinstance(value, int | float):
            raise SettingsError(f"[{section}] {name} must be a number")
        return float(value)
    if current is None or isinstance(current, str):
        return None if value == "" else str(value)
    return value


def _apply(settings: Settings, data: dict[str, Any], base: Path, origin: str) -> Settings:
    for section, values in data.items():
        if not hasattr(settings, section) or not isinstance(values, dict):
            raise SettingsError(f"{origin}: unknown section [{section}]")
        part = getattr(settings, section)
        known = {f.name for f in fields(part)}
        changes: dict[str, Any] = {}
        for name, value in values.items():
            if name not in known:
                raise SettingsError(f"{origin}: unknown setting [{section}] {name}")
            changes[name] = _coerce(section, name, getattr(part, name), value, base)
        settings = replace(settings, **{section: replace(part, **changes)})
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
