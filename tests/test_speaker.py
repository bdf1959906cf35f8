"""The speaker port: real pyttsx3 rendering, the live queue with a fake output device, the WAV timeline."""

from __future__ import annotations

import threading
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from assistant.gate import SelfHearingGate
from assistant.messages import Prompt
from assistant.speaker import (
    LiveSpeaker,
    PromptPolicy,
    Pyttsx3Voice,
    SilentSpeaker,
    SoundDevicePlayback,
    SpeakerError,
    TimelineSpeaker,
    VoiceSettings,
    make_speaker,
    schedule,
)

WAIT = 30.0
"""Upper bound for waiting on the speaker thread: a hang fails the test instead of blocking CI."""

REMINDER = Prompt(1.0, "Floor: read the card's manufacturer and serial number", "read-card", 1, "B(7)")
VIOLATION = Prompt(1.5, "Not called: G fifty two", "not-called", 3, "B(8)")
DUE = Prompt(1.6, "Ask: are there any other bingos?", "ask-other-bingos", 2, "B(9)")


class HeldDevice:
    """A fake output device: a prompt 'plays' until the test lets it finish or the speaker stops it."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.finish = threading.Semaphore(0)
        self.playing = threading.Event()
        self.returned = threading.Event()

    def play(self, samples: np.ndarray, rate: int, stop: threading.Event) -> int:
        assert samples.dtype == np.int16 and rate > 8000
        self.started.append(len(samples))
        self.returned.clear()
        self.playing.set()
        try:
            while not stop.is_set():
                if self.finish.acquire(timeout=0.01):
                    return len(samples)
            return len(samples) // 3
        finally:
            self.playing.clear()
            self.returned.set()

    def wait_playing(self) -> None:
        assert self.playing.wait(WAIT), "the speaker never started playing"


def test_settings_refuse_bad_values_with_one_line() -> None:
    for bad in ({"rate": 5}, {"volume": 1.5}, {"repeat_suppress": -1.0}):
        with pytest.raises(SpeakerError) as err:
            VoiceSettings(**bad)
        assert "\n" not in str(err.value)


# ----- pyttsx3 rendering ---------------------------------------------------------------------


def test_pyttsx3_renders_speech_and_follows_rate_and_volume() -> None:
    normal_settings = VoiceSettings()
    voice = Pyttsx3Voice.for_settings(normal_settings)
    normal = voice.render("Say it again: B seven", normal_settings)
    assert normal.rate > 8000 and normal.samples.dtype == np.int16
    assert 0.5 < normal.duration < 5.0
    assert np.abs(normal.samples).max() > 3000  # speech, not silence
    slow = voice.render("Say it again: B seven", VoiceSettings(rate=90))
    quiet = voice.render("Say it again: B seven", VoiceSettings(volume=0.2))
    again = voice.render("Say it again: B seven", normal_settings)
    assert slow.duration > normal.duration * 1.4
    assert np.abs(quiet.samples).max() < np.abs(normal.samples).max() * 0.5
    assert again.duration == pytest.approx(normal.duration, abs=0.05)
    assert Pyttsx3Voice.for_settings(normal_settings) is voice  # one voice process per setting


def test_pyttsx3_prints_nothing_on_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    settings = VoiceSettings()
    Pyttsx3Voice.for_settings(settings).render("B seven", settings)
    assert capfd.readouterr().out == ""


def test_an_unknown_voice_is_a_one_line_error_and_a_known_one_works() -> None:
    with pytest.raises(SpeakerError, match="unknown voice 'no-such-voice'"):
        Pyttsx3Voice.for_settings(VoiceSettings(voice="no-such-voice"))
    with pytest.raises(SpeakerError, match="unknown voice"):
        TimelineSpeaker(VoiceSettings(voice="no-such-voice"))
    us = VoiceSettings(voice="en-us")
    assert Pyttsx3Voice.for_settings(us).render("B seven", us).duration > 0.3


def test_renders_from_many_threads_go_through_one_voice_in_turn() -> None:
    settings = VoiceSettings()
    voice = Pyttsx3Voice.for_settings(settings)
    texts = [f"B {w}" for w in ("one", "two", "three", "four", "five", "six", "seven", "eight")]
    with ThreadPoolExecutor(max_workers=4) as pool:
        rendered = list(pool.map(lambda t: voice.render(t, settings), texts))
    alone = [voice.render(t, settings) for t in texts]
    for threaded, single in zip(rendered, alone, strict=True):
        assert threaded.duration == pytest.approx(single.duration, abs=0.05)


# ----- what is said at all -------------------------------------------------------------------


def test_policy_mutes_kinds_and_suppresses_needless_repeats() -> None:
    policy = PromptPolicy(VoiceSettings(muted_kinds=frozenset({"read-card"}), repeat_suppress=20.0))
    assert policy.refuse(REMINDER) == "muted"
    first = Prompt(10.0, "Say it again: B seven", "repeat-call", 2)
    assert policy.refuse(first) is None
    assert policy.refuse(Prompt(25.0, "say it again:  b seven", "repeat-call", 2)) == "repeat"
    assert policy.refuse(Prompt(31.0, "Say it again: B seven", "repeat-call", 2)) is None
    asked = Prompt(32.0, "Say it again: B seven", "answer-ask-repeat", 0)
    assert policy.refuse(asked) is None  # the caller asked: never a needless repeat
    assert policy.refuse(Prompt(33.0, "  ", "x", 1)) == "empty"


# ----- the timeline --------------------------------------------------------------------------


def p(time: float, priority: int = 1, text: str = "x") -> Prompt:
    return Prompt(time, text, "k", priority)


def test_schedule_waits_for_the_voice_and_lets_urgent_prompts_cut_in() -> None:
    placed = schedule([(p(0.0), 2.0), (p(1.0), 2.0), (p(10.0), 1.0)])
    assert [(x.index, x.start, x.end, x.cut) for x in placed] == [
        (0, 0.0, 2.0, False),
        (1, 2.0, 4.0, False),
        (2, 10.0, 11.0, False),
    ]
    # a reminder plays, another waits; a violation cuts the one playing and goes before the waiting one
    placed = schedule([(p(0.0, 1), 3.0), (p(1.0, 1), 1.0), (p(2.0, 3), 1.0)])
    assert [(x.index, x.start, x.end, x.cut) for x in placed] == [
        (0, 0.0, 2.0, True),
        (2, 2.0, 3.0, False),
        (1, 3.0, 4.0, False),
    ]
    placed = schedule([(p(0.0, 1), 3.0), (p(2.0, 3), 1.0)], interrupt=False)
    assert [(x.start, x.end, x.cut) for x in placed] == [(0.0, 3.0, False), (3.0, 4.0, False)]
    # equal priority never cuts; waiting ones go by priority, then in order
    placed = schedule([(p(0.0, 2), 3.0), (p(1.0, 1), 1.0), (p(1.5, 2), 1.0), (p(2.0, 2), 1.0)])
    assert [x.index for x in placed] == [0, 2, 3, 1] and not any(x.cut for x in placed)


def test_timeline_places_prompts_at_their_time_and_writes_a_wav(tmp_path: Path) -> None:
    out = tmp_path / "voice-out.wav"
    gate = SelfHearingGate(margin_before=0.0, margin_after=0.0)
    speaker = TimelineSpeaker(VoiceSettings(), out, gate=gate)
    speaker.say(Prompt(3.0, "Say it again: B seven", "repeat-call", 2, "A(3)"))
    speaker.say(Prompt(3.5, "Board shows B eight", "board-differs", 2, "A(5)"))
    speaker.say(Prompt(9.0, "Ask: are there any other bingos?", "ask-other-bingos", 2, "B(9)"))
    speaker.say(Prompt(12.0, "Ask: are there any other bingos?", "ask-other-bingos", 2, "B(9)"))
    rows = speaker.prompts_json()
    assert [r["text"] for r in rows] == [
        "Say it again: B seven",
        "Board shows B eight",
        "Ask: are there any other bingos?",
    ]
    assert rows[0]["start"] == 3.0 and rows[0]["time"] == 3.0 and rows[0]["clause"] == "A(3)"
    assert rows[1]["time"] == 3.5 and rows[1]["start"] == rows[0]["end"]  # waited for the first
    assert rows[2]["start"] == 9.0 and rows[2]["priority"] == 2 and rows[2]["kind"] == "ask-other-bingos"
    assert [s.status for s in speaker.refused] == ["repeat"]
    assert gate.intervals() == speaker.intervals()
    speaker.close()
    speaker.close()
    with wave.open(str(out), "rb") as w:
        rate, n = w.getframerate(), w.getnframes()
        audio = np.frombuffer(w.readframes(n), dtype="<i2")
    assert n / rate == pytest.approx(float(rows[2]["end"]), abs=0.01)  # type: ignore[arg-type]
    assert not audio[: int(2.9 * rate)].any()  # silence before the first prompt
    assert np.abs(audio[int(3.0 * rate) : int(4.0 * rate)]).max() > 3000
    gap_start, gap_end = float(rows[1]["end"]) + 0.05, 8.95  # type: ignore[arg-type]
    assert not audio[int(gap_start * rate) : int(gap_end * rate)].any()


def test_timeline_file_that_cannot_be_written_is_a_one_line_error(tmp_path: Path) -> None:
    speaker = TimelineSpeaker(VoiceSettings(), tmp_path / "no-such-dir" / "voice.wav")
    speaker.say(Prompt(0.0, "B seven", "repeat-call"))
    with pytest.raises(SpeakerError, match="cannot write voice-out"):
        speaker.close()


# ----- live: the queue, with real rendering and a fake device --------------------------------


@pytest.fixture
def device() -> HeldDevice:
    return HeldDevice()


def live(device: HeldDevice, **settings: object) -> LiveSpeaker:
    clock = iter(float(i) for i in range(1000))
    return LiveSpeaker(VoiceSettings(**settings), device, gate=SelfHearingGate(0.0, 0.0), clock=lambda: next(clock))  # type: ignore[arg-type]


def test_say_returns_while_the_voice_is_still_playing(device: HeldDevice) -> None:
    speaker = live(device)
    speaker.say(REMINDER)  # returns although the device holds the prompt until released
    device.wait_playing()
    assert speaker.speaking()
    assert speaker.gate is not None and speaker.gate.overlaps(1e6, 1e6 + 1)  # gate open while playing
    device.finish.release()
    assert speaker.idle(WAIT)
    assert not speaker.speaking()
    assert [(s.prompt, s.status) for s in speaker.history] == [(REMINDER, "said")]
    assert device.started[0] > 10000  # the real rendered speech went to the device
    assert speaker.gate.intervals() == [(0.0, 1.0)]
    speaker.close()


def test_a_violation_interrupts_a_reminder_then_waiting_prompts_go_by_priority(device: HeldDevice) -> None:
    speaker = live(device)
    speaker.say(REMINDER)
    device.wait_playing()
    speaker.say(Prompt(1.2, "Call the held ball", "call-held-ball", 1, "B(5)"))  # waits, does not cut
    speaker.say(VIOLATION)  # cuts the reminder
    speaker.say(DUE)
    assert device.returned.wait(WAIT)
    for _ in range(3):
        device.finish.release()
    assert speaker.idle(WAIT)
    speaker.close()
    assert [(s.prompt.kind, s.status) for s in speaker.history] == [
        ("read-card", "cut"),
        ("not-called", "said"),
        ("ask-other-bingos", "said"),
        ("call-held-ball", "said"),
    ]
    cut = speaker.history[0]
    assert cut.audio is not None and 0 < len(cut.audio.samples) < device.started[0]
    assert speaker.policy.refuse(Prompt(5.0, REMINDER.text, REMINDER.kind, 1)) is None  # cut: not heard, may come again
    assert speaker.policy.refuse(Prompt(6.0, DUE.text, DUE.kind, 2)) == "repeat"  # said: a needless repeat


def test_live_mutes_and_suppresses_repeats(device: HeldDevice) -> None:
    speaker = live(device, muted_kinds=frozenset({"read-card"}))
    speaker.say(REMINDER)
    speaker.say(DUE)
    speaker.say(Prompt(5.0, DUE.text, DUE.kind, DUE.priority))
    device.finish.release()
    assert speaker.idle(WAIT)
    speaker.close()
    assert [s.status for s in speaker.history] == ["muted", "repeat", "said"]
    assert [r["status"] for r in speaker.prompts_json()] == ["muted", "repeat", "said"]


def test_a_notice_waits_for_a_quiet_caller_and_a_procedure_prompt_does_not(device: HeldDevice) -> None:
    gate = SelfHearingGate(0.0, 0.0)
    speaker = LiveSpeaker(VoiceSettings(notice_quiet=2.0), device, gate=gate, clock=lambda: 0.0)  # type: ignore[arg-type]
    rng = np.random.default_rng(3)
    hiss = (rng.normal(0, 30, 16000)).astype(np.int16)
    talk = (rng.normal(0, 3000, 16000)).astype(np.int16)
    gate.filter(hiss, 0.0, 16000)
    gate.filter(talk, 1.0, 16000)  # the caller is calling
    notice = Prompt(2.0, "Recorded: A 3, call not repeated", "violation-recorded", 0, None)
    speaker.say(notice)
    speaker.say(REMINDER)
    device.wait_playing()
    device.finish.release()
    assert device.returned.wait(WAIT)
    assert not device.playing.wait(0.5) and len(device.started) == 1  # the reminder went, the notice waits
    gate.filter(hiss, 2.0, 16000)  # 1 s quiet: not yet
    assert not device.playing.wait(0.5)
    gate.filter(hiss, 3.0, 16000)  # 2 s quiet
    device.wait_playing()
    device.finish.release()
    assert speaker.idle(WAIT)
    speaker.close()
    assert [(s.prompt.kind, s.status) for s in speaker.history] == [
        ("read-card", "said"),
        ("violation-recorded", "said"),
    ]
    assert gate.quiet() == pytest.approx(2.0, abs=0.05)


def test_a_waiting_notice_is_said_on_closing(device: HeldDevice) -> None:
    gate = SelfHearingGate(0.0, 0.0)
    speaker = LiveSpeaker(VoiceSettings(), device, gate=gate, clock=lambda: 0.0)  # type: ignore[arg-type]
    gate.filter(np.random.default_rng(4).normal(0, 3000, 16000).astype(np.int16), 0.0, 16000)  # talk to the end
    speaker.say(Prompt(1.0, "Record kept in hall.db", "record-kept", 0))
    assert not device.playing.wait(0.3)
    closing = threading.Thread(target=speaker.close)
    closing.start()
    device.wait_playing()
    device.finish.release()
    closing.join(WAIT)
    assert [(s.prompt.kind, s.status) for s in speaker.history] == [("record-kept", "said")]


def test_close_without_drain_drops_what_waits_and_stops_the_voice(device: HeldDevice, tmp_path: Path) -> None:
    out = tmp_path / "live.wav"
    speaker = LiveSpeaker(VoiceSettings(), device, out=out)
    speaker.say(REMINDER)
    device.wait_playing()
    speaker.say(Prompt(2.0, "Call the held ball", "call-held-ball", 1))
    speaker.close(drain=False)
    assert sorted(s.status for s in speaker.history) == ["cut", "dropped"]
    with pytest.raises(SpeakerError, match="closed"):
        speaker.say(DUE)
    with wave.open(str(out), "rb") as w:
        assert w.getnframes() > 0  # what was played before the stop is in the record


# ----- choosing a speaker ----------------------------------------------------------------------


def test_make_speaker_modes_and_their_errors(tmp_path: Path) -> None:
    with pytest.raises(SpeakerError) as err:
        make_speaker("live", VoiceSettings(), None)  # no sound card on this machine
    assert "no sound output" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(SpeakerError, match="needs an output file"):
        make_speaker("wav", VoiceSettings(), None)
    with pytest.raises(SpeakerError, match="unknown voice mode 'loud'"):
        make_speaker("loud", VoiceSettings(), None)
    assert isinstance(make_speaker("wav", VoiceSettings(), tmp_path / "v.wav"), TimelineSpeaker)
    silent = make_speaker("silent", VoiceSettings(), None)
    assert isinstance(silent, SilentSpeaker)
    silent.say(DUE)
    assert not silent.speaking() and silent.prompts_json()[0]["text"] == DUE.text


def test_a_named_output_device_that_does_not_exist_is_refused() -> None:
    with pytest.raises(SpeakerError, match="output device 'earpiece' is not available"):
        SoundDevicePlayback("earpiece")
