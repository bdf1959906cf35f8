"""Settings: bundled defaults, a hall's file over them, flags over both."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pytest

from assistant.settings import ROOT, SettingsError, load_settings, override


def test_bundled_defaults_load() -> None:
    settings = load_settings()
    assert settings.recognizer.engine == "hall"
    assert settings.recognizer.vosk_model is None
    assert settings.recognizer.whisper_model is None
    assert settings.recognizer.model is None
    assert settings.procedure.rules == ROOT / "config" / "rules" / "nm-15.4.7.11.yaml"
    assert settings.procedure.prize_cap == 2500.0
    assert settings.voice.muted_kinds == frozenset()


def test_a_hall_file_overrides_and_flags_override_it(tmp_path: Path) -> None:
    hall = tmp_path / "hall.toml"
    hall.write_text(
        '[recognizer]\nengine = "vosk"\nvosk_model = "models/en"\n[voice]\nrate = 140\nmuted_kinds = ["reminder"]\n',
        encoding="utf-8",
    )
    settings = load_settings(hall)
    assert settings.recognizer.engine == "vosk"
    assert settings.recognizer.vosk_model == tmp_path / "models" / "en"
    assert settings.voice.rate == 140
    assert settings.voice.muted_kinds == frozenset({"reminder"})
    flagged = override(settings, "recognizer", engine="pocketsphinx", vosk_model=None)
    assert flagged.recognizer.engine == "pocketsphinx"
    assert flagged.recognizer.vosk_model == tmp_path / "models" / "en"
    hall.write_text('[recognizer]\nwhisper_model = "models/whisper"\n', encoding="utf-8")
    assert load_settings(hall).recognizer.whisper_model == tmp_path / "models" / "whisper"


@pytest.mark.engine
def test_a_quiet_hall_sets_how_far_speech_must_stand_above_the_background(tmp_path: Path) -> None:
    from assistant.engines.pocketsphinx_engine import PocketsphinxRecognizer
    from assistant.grammar import Grammar
    from assistant.pipeline import recognizer_from

    assert load_settings().recognizer.min_snr_db == 30.0
    hall = tmp_path / "hall.toml"
    hall.write_text('[recognizer]\nengine = "pocketsphinx"\nmin_snr_db = 18\n', encoding="utf-8")
    recognizer = recognizer_from(load_settings(hall), Grammar.load())
    assert isinstance(recognizer, PocketsphinxRecognizer) and recognizer.settings.min_snr_db == 18.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[nosuch]\nx = 1\n", "unknown section"),
        ("[voice]\nspeed = 1\n", "unknown setting"),
        ("[voice]\nrate = 'fast'\n", "must be a whole number"),
        ("[voice\n", "not valid TOML"),
        ("[whisper]\nwindw = 5\n", "unknown setting \\[whisper\\] windw"),
        ("[endpoint]\nhangover = 'long'\n", "\\[endpoint\\] hangover must be a number"),
        ("[endpoint]\nonset_frames = 2.5\n", "must be a whole number"),
        ("[whisper]\nhead_writes = 'no'\n", "must be true or false"),
        ("[whisper]\ndecision = true\n", "must be text"),
        ("[voice]\nmuted_kinds = 'reminder'\n", "must be a list of names"),
        ("[voice]\nrate = 10\n", "\\[voice\\] voice rate must be 50-500"),
        ("[audio]\ndevice_rate = 'fast'\n", "must be a sample rate"),
        ("[audio]\ndevice_rate = -8000\n", "must be a sample rate"),
    ],
)
def test_a_bad_hall_file_fails_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    hall = tmp_path / "hall.toml"
    hall.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match=message):
        load_settings(hall)


def test_a_missing_hall_file_fails_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read config"):
        load_settings(tmp_path / "nope.toml")


def test_a_hall_sets_the_devices_rate_and_how_far_listening_may_fall_behind(tmp_path: Path) -> None:
    assert load_settings().audio.device_rate is None  # 0 in the bundled file: the device's choice
    assert load_settings().audio.max_behind == 10.0
    hall = tmp_path / "hall.toml"
    hall.write_text("[audio]\ndevice_rate = 48000\nmax_behind = 4\n", encoding="utf-8")
    settings = load_settings(hall)
    assert settings.audio.device_rate == 48000 and settings.audio.max_behind == 4.0


def test_a_hall_file_sets_how_the_engine_listens_and_cuts(tmp_path: Path) -> None:
    """[whisper] and [endpoint] take every kind of value their fields hold (inf included), over the defaults."""
    from assistant.endpoint import HALL_CUTTING
    from assistant.engines.whisper_engine import WhisperSettings

    settings = load_settings()
    assert settings.whisper == WhisperSettings() and settings.endpoint == HALL_CUTTING
    hall = tmp_path / "hall.toml"
    hall.write_text(
        "[whisper]\nhead_alone = 0.8\nbeam = 3\nhead_writes = false\ndecision = 'fitted'\nwindow = 8\n"
        "[endpoint]\nhangover = 0.8\nbelow_peak_db = inf\nclose_smoothing = 10\n",
        encoding="utf-8",
    )
    settings = load_settings(hall)
    assert settings.whisper == WhisperSettings(head_alone=0.8, beam=3, head_writes=False, decision="fitted", window=8.0)
    assert isinstance(settings.whisper.window, float)
    assert settings.endpoint == replace(HALL_CUTTING, hangover=0.8, below_peak_db=float("inf"), close_smoothing=10)


@pytest.mark.engine
def test_pocketsphinx_and_vosk_cut_with_their_own_defaults_and_the_halls_changes(tmp_path: Path) -> None:
    from assistant.endpoint import EndpointSettings
    from assistant.grammar import Grammar
    from assistant.pipeline import recognizer_from

    def cutting(text: str) -> EndpointSettings:
        hall = tmp_path / "hall.toml"
        hall.write_text('[recognizer]\nengine = "pocketsphinx"\n' + text, encoding="utf-8")
        recognizer = recognizer_from(load_settings(hall), Grammar.load())
        return recognizer.endpoint_settings  # type: ignore[attr-defined,no-any-return]

    assert cutting("") == EndpointSettings()
    assert cutting("[endpoint]\nmin_speech = 0.3\nclose_smoothing = 5\n") == EndpointSettings(
        min_speech=0.3, close_smoothing=5
    )
    # a benchmark's --option replaces the section
    options = {"endpoint": EndpointSettings(hangover=0.5)}
    hall = tmp_path / "hall.toml"
    hall.write_text('[recognizer]\nengine = "pocketsphinx"\n[endpoint]\nmin_speech = 0.3\n', encoding="utf-8")
    recognizer = recognizer_from(load_settings(hall), Grammar.load(), options)
    assert recognizer.endpoint_settings == EndpointSettings(hangover=0.5)  # type: ignore[attr-defined]


def test_the_procedure_and_the_voice_take_their_sections_as_they_are() -> None:
    """One dataclass per setting: the procedure's and the speaker's settings are the sections themselves."""
    from assistant.procedure import ProcedureSettings
    from assistant.speaker import VoiceSettings

    settings = load_settings()
    assert isinstance(settings.procedure, ProcedureSettings) and isinstance(settings.voice, VoiceSettings)
    assert {f.name for f in fields(ProcedureSettings)} < {f.name for f in fields(settings.procedure)}
    assert {f.name for f in fields(VoiceSettings)} < {f.name for f in fields(settings.voice)}
