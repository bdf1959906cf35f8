"""What `check`, `transcribe`, `verify`, `report` and `serve` take in, run as a user runs them (a subprocess):
recordings of every kind libsndfile reads, transcripts as editors save them, inputs that hold nothing or less than
they claim, records on read-only media, a console port in use."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from assistant.audio import read_wav
from assistant.settings import ROOT

FIXTURES = ROOT / "audio_fixtures"
SCENARIOS = ROOT / "tests" / "scenarios"
FIRST_CALLS = ["B7", "O61"]
"""The calls in the first 4.2 s of calls.wav (kept short: the recognizer is slow on a shared machine)."""


def run(*args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BINGO_VOSK_MODEL"}
    command = [sys.executable, "-m", "assistant", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("bingo-assistant: error: ")
    return lines[0]


def calls_heard(result: subprocess.CompletedProcess[str], role: str = "caller") -> list[str]:
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return [r["call"] for r in rows if r["role"] == role and r["call"]]


@pytest.fixture(scope="module")
def voice() -> np.ndarray:
    """Two calls said by the caller, as float samples (-1..1) at 16 kHz."""
    samples = read_wav(FIXTURES / "calls.wav").channels[0][: int(4.2 * 16000)]
    return samples.astype(np.float64) / 32768.0


# ------------------------------------------------------------------ recordings of every kind


@pytest.mark.parametrize(
    ("name", "rate", "fmt", "subtype"),
    [
        ("extensible-24bit.wav", 48000, "WAVEX", "PCM_24"),  # WAVE_FORMAT_EXTENSIBLE: "unknown format: 65534"
        ("float32.wav", 16000, "WAV", "FLOAT"),  # "unknown format: 3"
        ("eight-bit.wav", 22050, "WAV", "PCM_U8"),
        ("lossless.flac", 44100, "FLAC", "PCM_16"),
        ("compressed.ogg", 16000, "OGG", "VORBIS"),
        ("compressed.mp3", 16000, "MP3", "MPEG_LAYER_III"),
    ],
)
@pytest.mark.engine
def test_a_recording_of_any_kind_libsndfile_reads_is_heard(
    tmp_path: Path, voice: np.ndarray, name: str, rate: int, fmt: str, subtype: str
) -> None:
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(rate, 16000)
    samples = resample_poly(voice, rate // g, 16000 // g) if rate != 16000 else voice
    path = tmp_path / name
    sf.write(path, samples * 0.9, rate, format=fmt, subtype=subtype)
    assert calls_heard(run("transcribe", path, "--json")) == FIRST_CALLS


@pytest.mark.engine
def test_a_recording_is_told_from_a_transcript_by_what_it_holds(tmp_path: Path) -> None:
    """An MP3 is a recording whatever its name (it was "not a text file (not UTF-8)"); a file libsndfile cannot
    read is named by what it is; a transcript is a transcript whatever its name."""
    quiet = np.zeros(3 * 16000)
    for name in ("session.mp3", "session.txt", "session"):
        path = tmp_path / name
        sf.write(path, quiet, 16000, format="MP3")
        line = one_error_line(run("check", path, "--quiet"))
        assert "no speech heard in 0:00:03 of the caller's channel" in line, line
    m4a = tmp_path / "session.m4a"
    m4a.write_bytes(b"\x00\x00\x00\x20ftypM4A " + bytes(200))
    assert "MP4/M4A" in one_error_line(run("check", m4a))
    notes = tmp_path / "notes.wav"
    notes.write_text("0:04 caller: B seven\n", encoding="utf-8")
    assert "a text file" in one_error_line(run("check", notes))
    transcript = tmp_path / "tonight.log"
    transcript.write_text((SCENARIOS / "compliant-regular.txt").read_text(encoding="utf-8"), encoding="utf-8")
    assert run("check", transcript, "--quiet").returncode == 0


@pytest.mark.engine
def test_a_recording_of_more_than_two_channels_says_which_are_heard(tmp_path: Path, voice: np.ndarray) -> None:
    """Six channels were read as two without a word: now they are chosen (--channels CALLER[,FLOOR], from 1)."""
    six = np.zeros((len(voice), 6))
    six[:, 2] = voice  # the caller's microphone on the recorder's third track
    path = tmp_path / "six.wav"
    sf.write(path, six, 16000, subtype="PCM_16")
    line = one_error_line(run("transcribe", path, "--json"))
    assert "6 channels" in line and "--channels" in line
    assert calls_heard(run("transcribe", path, "--json", "--channels", "3")) == FIRST_CALLS
    assert "no channel 7" in one_error_line(run("transcribe", path, "--channels", "3,7"))
    stereo = tmp_path / "swapped.wav"
    sf.write(stereo, np.stack([np.zeros(len(voice)), voice], axis=1), 16000, subtype="PCM_16")
    assert calls_heard(run("transcribe", stereo, "--json", "--channels", "R,L")) == FIRST_CALLS
    assert "--channels is for recordings" in one_error_line(
        run("check", SCENARIOS / "compliant-regular.txt", "--channels", "1")
    )


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
@pytest.mark.engine
def test_a_transcript_saved_with_a_byte_order_mark_and_crlf_reads_as_the_plain_one(
    tmp_path: Path, encoding: str
) -> None:
    """Notepad's UTF-8 (a byte-order mark, which failed on '\\ufeff') and its "Unicode" (UTF-16), CRLF line ends."""
    plain = SCENARIOS / "a3-not-repeated.txt"
    windows = tmp_path / "notepad.txt"
    windows.write_bytes(plain.read_text(encoding="utf-8").replace("\n", "\r\n").encode(encoding))
    plan = tmp_path / "plan.txt"
    plan.write_bytes("@game type=regular\r\n".encode(encoding))
    as_saved, as_written = run("check", windows, "--json"), run("check", plain, "--json")
    assert as_saved.returncode == as_written.returncode == 1, as_saved.stderr
    assert json.loads(as_saved.stdout) == json.loads(as_written.stdout)
    quiet = tmp_path / "quiet.wav"
    sf.write(quiet, np.zeros(16000), 16000, subtype="PCM_16")
    # the plan is read (it failed on its mark): what stops the check is the silence of the recording it plans
    assert "no speech heard in 0:00:01" in one_error_line(run("check", quiet, "--plan", plan))
    latin = tmp_path / "latin.txt"
    latin.write_bytes("# caller: José\n0:04 caller: B seven\n".encode("cp1252"))
    assert "not a text file in UTF-8 or UTF-16" in one_error_line(run("check", latin))


# ------------------------------------------------------------------ nothing heard is never compliant


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("", "no speech heard"),
        ("\n\n", "no speech heard"),
        ("# tonight's session\n# (the recorder was off)\n", "no speech heard"),
        ("@game type=regular last_ball_required=no\n", "no speech heard"),
        ("0:01 floor: bingo\n0:05 floor: it's good\n", "no speech heard"),
        ("@game type=regular\n0:01 caller: good evening everyone\n0:09 caller: welcome\n", "no call heard"),
    ],
)
def test_a_transcript_that_holds_no_game_is_never_compliant(tmp_path: Path, text: str, missing: str) -> None:
    path = tmp_path / "session.txt"
    path.write_text(text, encoding="utf-8")
    result = run("check", path, "--db", tmp_path / "hall.db")
    assert missing in one_error_line(result)
    assert result.stdout == ""


@pytest.mark.engine
def test_a_recording_with_no_speech_is_never_compliant(tmp_path: Path) -> None:
    """Digital silence, and a quiet room's hiss, in a stereo recording: each channel's silence is named."""
    rng = np.random.default_rng(5)
    for name, samples in [
        ("digital-silence.wav", np.zeros((5 * 16000, 2))),
        ("hiss.flac", rng.normal(0, 0.0005, (5 * 16000, 2))),
    ]:
        path = tmp_path / name
        sf.write(path, samples, 16000, subtype="PCM_16")
        result = run("check", path, "--json")
        line = one_error_line(result)
        assert "no speech heard in 0:00:05 of the caller's channel" in line
        assert "no speech heard in 0:00:05 of the floor's channel" in line
        report = json.loads(result.stdout)
        assert report["occasion"]["incomplete"] == [
            "no speech heard in 0:00:05 of the caller's channel",
            "no speech heard in 0:00:05 of the floor's channel",
        ]


@pytest.mark.engine
def test_a_long_silence_is_never_compliant_and_is_recorded_so(tmp_path: Path) -> None:
    path = tmp_path / "dead-microphone.wav"
    sf.write(path, np.zeros(150 * 8000, dtype=np.int16), 8000, subtype="PCM_16")  # 2.5 minutes, mono
    db = tmp_path / "hall.db"
    result = run("check", path, "--quiet", "--db", db)
    assert one_error_line(result).endswith("no speech heard in 0:02:30 of the caller's channel")
    assert "Not compliant: the input is incomplete" in result.stdout
    assert "Compliant: no findings" not in result.stdout
    kept = run("report", "--db", db, "--format", "text")
    assert kept.returncode == 0, kept.stderr
    assert "incomplete: no speech heard in 0:02:30 of the caller's channel" in kept.stdout
    assert "Compliant: no findings" not in kept.stdout
    page = run("report", "--db", db, "--format", "html")
    assert "Incomplete input: no speech heard" in page.stdout


@pytest.mark.engine
def test_a_recording_of_talk_without_a_call_is_never_compliant() -> None:
    """Chatter, no ball called: no game was heard."""
    result = run("check", FIXTURES / "chatter.wav", "--quiet")
    assert one_error_line(result).endswith("no call heard in 0:00:14 of the caller's channel")


@pytest.mark.engine
def test_a_channel_the_check_hears_must_hold_speech(tmp_path: Path, voice: np.ndarray) -> None:
    """The caller spoke, the floor's microphone was dead: said; `--channels 1` hears the caller alone."""
    path = tmp_path / "dead-floor.wav"
    sf.write(path, np.stack([voice, np.zeros(len(voice))], axis=1), 16000, subtype="PCM_16")
    result = run("check", path, "--quiet")
    assert one_error_line(result).endswith("no speech heard in 0:00:04 of the floor's channel")
    caller_alone = run("check", path, "--quiet", "--channels", "1")
    assert caller_alone.returncode in (0, 1), caller_alone.stderr
    assert caller_alone.stderr == ""


@pytest.mark.engine
def test_a_truncated_recording_is_checked_as_far_as_it_goes_and_says_so(tmp_path: Path, voice: np.ndarray) -> None:
    whole = tmp_path / "whole.wav"
    sf.write(whole, np.concatenate([voice, np.zeros(6 * 16000)]), 16000, subtype="PCM_16")  # 10.2 s
    cut = tmp_path / "cut.wav"
    data = whole.read_bytes()
    cut.write_bytes(data[: 44 + 2 * int(4.2 * 16000)])  # the header still claims 10.2 s
    result = run("check", cut, "--json")
    line = one_error_line(result)
    assert "cut.wav is truncated: it holds 0:00:04 of the 0:00:10 its header claims" in line
    report = json.loads(result.stdout)
    assert [c["ball"] for c in report["games"][0]["calls"]] == FIRST_CALLS  # read as far as it goes
    assert report["occasion"]["incomplete"] == [line.removeprefix("bingo-assistant: error: ")]


@pytest.mark.parametrize("kind", ["sizes-never-written", "ogg-cut-short", "flac-cut-short"])
@pytest.mark.engine
def test_a_recording_cut_short_another_way_is_read_as_far_as_it_goes(
    tmp_path: Path, voice: np.ndarray, kind: str
) -> None:
    """A recorder stopped before it wrote its header's sizes (they are 0: libsndfile finds no samples), an Ogg
    stream or a FLAC file cut off: each is read as far as it goes, and said to be short."""
    samples = np.concatenate([voice, np.zeros(6 * 16000)])
    if kind == "sizes-never-written":
        path = tmp_path / "recorder.wav"
        sf.write(path, samples, 16000, subtype="PCM_24")
        data = bytearray(path.read_bytes())
        at = data.index(b"data")
        data[4:8] = data[at + 4 : at + 8] = bytes(4)
        path.write_bytes(bytes(data))
        said = "recorder.wav's header was never finished"
    else:
        path = tmp_path / ("cut.ogg" if kind == "ogg-cut-short" else "cut.flac")
        sf.write(path, samples, 16000, format="OGG" if kind == "ogg-cut-short" else "FLAC")
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        said = "cut.ogg ends without its last page" if kind == "ogg-cut-short" else "cut.flac is truncated"
    result = run("check", path, "--json")
    line = one_error_line(result)
    assert said in line, line
    report = json.loads(result.stdout)
    assert [c["ball"] for c in report["games"][0]["calls"]][:1] == FIRST_CALLS[:1]  # what it holds is heard
    assert report["occasion"]["incomplete"] == [line.removeprefix("bingo-assistant: error: ")]


# ------------------------------------------------------------------ records on read-only media


def test_verify_and_report_open_the_record_read_only_and_leave_nothing_beside_it(tmp_path: Path) -> None:
    """The record's folder and file made read-only; verify and report read it and write nothing beside it (they
    left -wal/-shm behind). The tests run as root, whom permissions do not stop: the read-only folder itself (which
    failed with "cannot open database") is shown by the files left, not by a refusal."""
    folder = tmp_path / "usb-stick"
    folder.mkdir()
    db = folder / "hall.db"
    assert run("check", SCENARIOS / "compliant-winner-take-all.txt", "--db", db, "--quiet").returncode == 0
    before = sorted(p.name for p in folder.iterdir())
    assert before == ["hall.db"]
    db.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        verified = run("verify", "--db", db)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "chain intact" in verified.stdout
        assert sorted(p.name for p in folder.iterdir()) == before
        for form in ("json", "text", "html", "csv"):
            reported = run("report", "--db", db, "--format", form)
            assert reported.returncode == 0, reported.stderr
            assert sorted(p.name for p in folder.iterdir()) == before
    finally:
        folder.chmod(0o755)
        db.chmod(0o644)


def test_verify_reads_a_record_a_writer_has_open_with_its_latest_rows(tmp_path: Path) -> None:
    """A record `serve` or `listen` still writes (its -wal beside it) is read through the WAL, not as its file alone."""
    from assistant.store import Store

    db = tmp_path / "hall.db"
    assert run("check", SCENARIOS / "compliant-winner-take-all.txt", "--db", db, "--quiet").returncode == 0
    first = run("verify", "--db", db)
    with Store.open(db) as writer:  # a writer holds the record open and adds an occasion, still in its WAL
        writer.start_occasion(source="still being written")
        assert (tmp_path / "hall.db-wal").stat().st_size > 0
        second = run("verify", "--db", db)
        latest = run("report", "--db", db, "--format", "json")
    assert first.returncode == second.returncode == 0, second.stdout + second.stderr
    assert int(first.stdout.split()[2]) < int(second.stdout.split()[2])  # "chain intact: N records": new rows read
    assert json.loads(latest.stdout)["games"] == []  # the latest occasion: the one being written


# ------------------------------------------------------------------ the console's port


def test_serve_on_a_port_in_use_says_so_in_one_line_and_announces_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--port", port, "--db", tmp_path / "hall.db", timeout=60)
    line = one_error_line(result)
    assert f"127.0.0.1:{port}" in line and "in use" in line
    assert "console: http" not in result.stderr
    assert not (tmp_path / "hall.db").exists()  # refused before anything was recorded
