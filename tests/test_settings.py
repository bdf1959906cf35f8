"""Settings: bundled defaults, a hall's file over them, flags over both."""

from __future__ import annotations

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
        ("[voice]\nrate = 'fast'\n", "must be a number"),
        ("[voice\n", "not valid TOML"),
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
