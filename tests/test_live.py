"""`listen` through real audio devices: a PulseAudio server of the test's own with null sinks as the
caller's and the floor's microphones and the hall's loudspeakers; recorded games are played into them in real
time, and `bingo-assistant listen` follows them through PortAudio as it would in a hall.

The server needs Debian's pulseaudio, pulseaudio-utils and libasound2-plugins (tools/setup.sh). Without them
the tests skip, unless BINGO_REQUIRE_LIVE is set (as CI does): then they fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from rigs import HISS, LATE_REPEAT, virtual_hall

from assistant.audio import read_wav, write_wav
from assistant.grammar import Grammar
from assistant.script import read_script
from assistant.settings import ROOT
from lab.scenarios.devices import Device, EchoPath, VirtualHall
from lab.scenarios.render import TUNING_VOICES, render

pytestmark = pytest.mark.live

FIXTURES = ROOT / "audio_fixtures"
DEVICES = [
    Device("caller_mic", 1, "caller microphone", HISS),
    Device("floor_mic", 1, "floor microphone", HISS),
    Device("desk", 2, "desk interface, caller left and floor right", HISS),
    Device("speakers", 1, "hall loudspeakers"),
]


@pytest.fixture(scope="module")
def hall(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtualHall]:
    yield from virtual_hall(tmp_path_factory.mktemp("hall"), DEVICES)


def plan_of(script: Path, folder: Path) -> Path:
    plan = folder / "plan.txt"
    plan.write_text("".join(line + "\n" for line in script.read_text().splitlines() if line.startswith("@game")))
    return plan


def cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def start_listen(
    hall: VirtualHall, args: list[object], config: Path | None = None
) -> tuple[subprocess.Popen[str], str]:
    """`listen ARGS` started on the hall's devices; returns once it says it listens, with what it said until
    then (that line, and any about the devices)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "assistant", *(["--config", str(config)] if config else []), "listen", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, **hall.env),
        # a shell without job control starts background commands with SIGINT ignored, and Python then never
        # turns Ctrl-C into KeyboardInterrupt: give listen the terminal's default, as a caller's shell would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stderr is not None
    lines: list[str] = []
    while not lines or not lines[-1].startswith("listening:"):
        line = process.stderr.readline()
        assert line.startswith(("listening:", "audio: ")), "".join(lines) + line + process.stderr.read()
        lines.append(line)
    return process, "".join(lines)


def listen(
    hall: VirtualHall, args: list[object], play: Callable[[], list[subprocess.Popen[bytes]]], after: float = 3.0
) -> subprocess.CompletedProcess[str]:
    """`listen ARGS` on the hall's devices: start it, play the game once it listens, let it hear the last words
    out (`after` seconds), then Ctrl-C, as a caller ends a session."""
    process, ready = start_listen(hall, args)
    for player in play():
        assert player.wait(timeout=300) == 0
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)  # its threads' stacks on stderr (faulthandler)
        time.sleep(2.0)
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"listen did not end on Ctrl-C:\n{out[-2000:]}\n{err[-6000:]}")
    return subprocess.CompletedProcess(process.args, process.returncode, out, ready + err)


TOLD_BESIDE = {"record-kept", "violation-recorded", "microphone-lost", "microphone-back"}
"""What the caller is told beside the procedure's prompts: where the record was kept, a violation recorded, a
microphone lost and back."""


def report(db: Path) -> dict[str, object]:
    result = cli("report", "--db", db, "--format", "json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def essence(report: dict[str, object]) -> list[dict[str, object]]:
    """What the record says happened, without times (a device's clock starts when it opens, not at 0:00)."""
    games = report["games"]
    assert isinstance(games, list)
    return [
        {
            "calls": [c["ball"] for c in g["calls"]],
            "claims": [(c["manufacturer"], c["serial"], c["winning"], c["valid"]) for c in g["claims"]],
            "status": g["status"],
            "findings": sorted((f["clause"], f["code"], f["severity"]) for f in g["findings"]),
        }
        for g in games
    ]


def checked(wav: Path, plan: Path, folder: Path, *flags: object) -> list[dict[str, object]]:
    """`check` on the same recording, from the file."""
    db = folder / "check.db"
    result = cli("check", wav, "--plan", plan, "--quiet", "--db", db, *flags)
    assert result.returncode in (0, 1), result.stderr
    return essence(report(db))


def verified(db: Path) -> None:
    result = cli("verify", "--db", db)
    assert result.returncode == 0, result.stdout + result.stderr


def test_listen_on_two_devices_records_what_check_finds_in_the_recording(hall: VirtualHall, tmp_path: Path) -> None:
    wav = FIXTURES / "demo_violation.wav"
    plan = plan_of(FIXTURES / "demo_violation.txt", tmp_path)
    game = read_wav(wav)
    db = tmp_path / "live.db"
    args: list[object] = ["--caller-device", "caller_mic", "--floor-device", "floor_mic", "--plan", plan]
    args += ["--db", db, "--voice", "live", "--voice-device", "speakers", "--prompts-json", tmp_path / "p.json"]

    result = listen(
        hall, args, lambda: [hall.play("caller_mic", game.channels[0]), hall.play("floor_mic", game.channels[1])]
    )

    assert result.returncode == 1, result.stderr  # findings: the planted A(3)
    live = essence(report(db))
    assert live == checked(wav, plan, tmp_path), result.stdout
    planted = [("A(2)", "next-ball-before-repeat", "warning"), ("A(3)", "call-not-repeated", "violation")]
    assert live[0]["findings"] == planted
    verified(db)
    told = json.loads((tmp_path / "p.json").read_text())
    prompts = [p for p in told if p["kind"] not in TOLD_BESIDE]
    assert [p["kind"] for p in prompts] == ["read-card"]
    assert prompts[0]["status"] == "said" and prompts[0]["end"] > prompts[0]["start"]  # said on the device
    # the violation, when it was recorded; where the record was kept, on exit
    besides = [p["text"] for p in told if p["kind"] in ("violation-recorded", "record-kept")]
    assert besides == ["Recorded: A 3, call not repeated", "Record kept in live.db"], told
    assert f"the record is kept in {db}" in result.stderr


@pytest.mark.parametrize("rate", [None, 48000])
def test_listen_on_one_stereo_device_hears_the_floor_on_the_right(
    hall: VirtualHall, tmp_path: Path, rate: int | None
) -> None:
    """With `--device-rate 48000`, as a USB interface that records only at 48 kHz: the device is recorded at
    its rate and converted as it streams, and heard as at 16 kHz."""
    wav = FIXTURES / "demo_game.wav"
    plan = plan_of(FIXTURES / "demo_game.txt", tmp_path)
    game = read_wav(wav)
    db = tmp_path / "live.db"
    args: list[object] = ["--caller-device", "desk", "--floor-device", "right", "--plan", plan, "--db", db]
    args += ["--timings", tmp_path / "timings.jsonl"]
    if rate is not None:
        args += ["--device-rate", rate]

    result = listen(hall, [*args, "--voice", "silent"], lambda: [hall.play("desk", np.stack(game.channels, axis=1))])

    assert result.returncode == 0, result.stdout + result.stderr
    told = [line for line in result.stderr.splitlines() if line.startswith("audio: ")]
    assert told == ([] if rate is None else [f"audio: desk records at {rate} Hz; converted to 16000 Hz as it streams"])
    timings = [json.loads(line) for line in (tmp_path / "timings.jsonl").read_text().splitlines()]
    heard = [line for line in result.stdout.splitlines() if " caller: " in line or " floor: " in line]
    assert len(timings) >= len(heard) >= 12, result.stdout  # every hearing given out has its verdict's time
    assert all(0.0 <= t["start"] < t["end"] <= t["verdict"] < t["end"] + 5.0 for t in timings), timings
    live = essence(report(db))
    assert live == checked(wav, plan, tmp_path), result.stdout
    assert live[0]["calls"] == ["B7", "I22", "N38", "G51", "O64", "B12"] and live[0]["status"] == "completed"
    assert live[0]["claims"] == [("142", "47291", ["B7", "I22", "N38", "G51", "O64"], True)]
    verified(db)


def test_the_assistants_voice_back_from_the_hall_speakers_is_never_the_caller(
    hall: VirtualHall, grammar: Grammar, tmp_path: Path
) -> None:
    """B seven said once; when its repeat is due the assistant says "Say it again: B seven" to the hall, whose
    speakers return it into the caller's microphone (80 ms later, 3 dB down, 0.8 s of reverberation, on top of
    the devices' own latency); the caller says it again after. Heard as the caller, the echo would be the repeat
    and the caller's own a third saying, or a "bingo" to ask about; without the Tick the prompt would come only
    with the next words heard."""
    script = tmp_path / "late-repeat.txt"
    script.write_text(LATE_REPEAT, encoding="utf-8")
    rendering = render(read_script(script, grammar), TUNING_VOICES, seed=3)
    wav = tmp_path / "game.wav"
    write_wav(wav, rendering.samples)
    plan = plan_of(script, tmp_path)
    db = tmp_path / "live.db"
    args: list[object] = ["--caller-device", "caller_mic", "--floor-device", "floor_mic", "--plan", plan, "--db", db]
    args += ["--voice", "live", "--voice-device", "speakers", "--prompts-json", tmp_path / "p.json"]
    stop = hall.route("speakers", "caller_mic", EchoPath(delay=0.08, gain_db=-3.0, rt60=0.8))
    try:
        result = listen(
            hall,
            args,
            lambda: [
                hall.play("caller_mic", rendering.samples[:, 0]),
                hall.play("floor_mic", rendering.samples[:, 1]),
            ],
        )
    finally:
        stop()

    prompts = [p for p in json.loads((tmp_path / "p.json").read_text()) if p["kind"] not in TOLD_BESIDE]
    said = [p for p in prompts if p["kind"] == "repeat-call"]
    assert [p["text"] for p in prompts] == ["Say it again: B seven"] and said[0]["status"] == "said", prompts
    assert said[0]["start"] - said[0]["time"] < 1.0  # said when due, on the device's clock
    assert result.returncode == 0, result.stdout + result.stderr
    live = essence(report(db))
    assert live == checked(wav, plan, tmp_path, "--channels", "1")  # the floor says nothing in this game
    assert live[0]["findings"] == [] and live[0]["calls"] == ["B7", "N33"]
    start, end = float(said[0]["start"]), float(said[0]["end"])
    heard = [line for line in result.stdout.splitlines() if " caller: b seven" in line]
    assert len(heard) == 2, result.stdout  # the caller's two sayings, not the echo
    assert all(not start - 0.1 <= _clock(line) <= end + 1.0 for line in heard), (start, end, heard)


def _clock(line: str) -> float:
    minutes, seconds = line.split()[0].split(":")
    return 60 * int(minutes) + float(seconds)


@pytest.mark.parametrize("fault", ["stops", "mutes"])
def test_a_microphone_that_stops_or_mutes_and_returns_leaves_an_unsure_gap_not_a_violation(
    hall: VirtualHall, tmp_path: Path, fault: str
) -> None:
    """The caller's microphone fails at 20.0 s of the compliant demo game and is back 3 s later: the second
    "O sixty four" (20.6 s) is never heard. It either stops delivering (a USB interface that hangs) or delivers
    exact zeros (a dropout, a muted input). `listen` says so in one line each way, keeps listening, and the gap
    is an unsure hearing of the caller: the repeat it may hold is not "said only once" (no violation, only an
    uncertain finding), and everything after the gap is heard as `check` hears it."""
    wav = FIXTURES / "demo_game.wav"
    plan = plan_of(FIXTURES / "demo_game.txt", tmp_path)
    game = read_wav(wav)
    db = tmp_path / "live.db"
    args: list[object] = ["--caller-device", "caller_mic", "--floor-device", "floor_mic", "--plan", plan, "--db", db]
    cut, back = round(20.0 * 16000), round(23.0 * 16000)

    def stop() -> list[subprocess.Popen[bytes]]:
        floor = hall.play("floor_mic", game.channels[1])
        first = hall.play("caller_mic", game.channels[0][:cut])
        assert first.wait(timeout=60) == 0
        hall.halt("caller_mic")
        time.sleep(3.0)
        hall.restore("caller_mic")
        return [floor, hall.play("caller_mic", game.channels[0][back:])]

    def mute() -> list[subprocess.Popen[bytes]]:
        players = [hall.play("floor_mic", game.channels[1]), hall.play("caller_mic", game.channels[0])]
        time.sleep(20.0)
        hall.mute("caller_mic")
        time.sleep(3.0)
        hall.mute("caller_mic", False)
        return players

    said = tmp_path / "p.json"
    result = listen(hall, [*args, "--voice", "silent", "--prompts-json", said], stop if fault == "stops" else mute)

    assert result.returncode == 0, result.stdout + result.stderr  # compliant: nothing but unsure findings
    told = [line for line in result.stderr.splitlines() if line.startswith("audio: ")]
    went, back_again = ("delivered nothing", "is back") if fault == "stops" else ("digital silence at", "sound again")
    assert len(told) == 2 and went in told[0] and back_again in told[1], result.stderr
    alerts = [(p["kind"], p["text"]) for p in json.loads(said.read_text()) if p["kind"].startswith("microphone")]
    assert alerts == [("microphone-lost", "Caller microphone lost"), ("microphone-back", "Caller microphone back")]
    live = essence(report(db))
    assert live[0]["calls"] == ["B7", "I22", "N38", "G51", "O64", "B12"] and live[0]["status"] == "completed"
    findings = live[0]["findings"]
    assert isinstance(findings, list) and findings and all(f[2] == "uncertain" for f in findings), findings
    assert any(f[0] == "A(3)" for f in findings)  # O64's repeat fell in the gap: for review, no violation
    verified(db)


def test_listening_that_falls_behind_drops_audio_marked_in_the_record(hall: VirtualHall, tmp_path: Path) -> None:
    """`listen` is frozen for 4 s (SIGSTOP: a machine too busy to listen) from 19.5 s of the compliant demo game,
    with `[audio] max_behind = 2.0`: when it runs again the devices hand it the 4 s at once; each time two seconds
    of it wait, what waits is dropped so that listening goes on from the present (the second "O sixty four" at
    20.6 s is lost). It says so in one line, and the dropped stretch is an unsure hearing: no violation. (Two
    seconds, not one: on a 2-core machine a decode of each channel's first call can keep a chunk waiting a second.)"""
    wav = FIXTURES / "demo_game.wav"
    plan = plan_of(FIXTURES / "demo_game.txt", tmp_path)
    game = read_wav(wav)
    db = tmp_path / "live.db"
    config = tmp_path / "hall.toml"
    config.write_text("[audio]\nmax_behind = 2.0\n", encoding="utf-8")
    args: list[object] = ["--caller-device", "caller_mic", "--floor-device", "floor_mic", "--plan", plan]
    process, _ = start_listen(hall, [*args, "--db", db, "--voice", "silent"], config)
    players = [hall.play("floor_mic", game.channels[1]), hall.play("caller_mic", game.channels[0])]
    time.sleep(19.5)
    process.send_signal(signal.SIGSTOP)
    time.sleep(4.0)
    process.send_signal(signal.SIGCONT)
    for player in players:
        assert player.wait(timeout=120) == 0
    time.sleep(3.0)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)

    assert process.returncode == 0, out + err
    told = [line for line in err.splitlines() if line.startswith("audio: ")]
    assert told and all("fell 2 s behind" in line for line in told), err
    live = essence(report(db))
    assert live[0]["calls"] == ["B7", "I22", "N38", "G51", "O64", "B12"] and live[0]["status"] == "completed"
    findings = live[0]["findings"]
    assert isinstance(findings, list) and findings and all(f[2] == "uncertain" for f in findings), findings
    assert any(f[0] == "A(3)" for f in findings)
    verified(db)


def test_listen_killed_mid_game_and_resumed_keeps_every_recorded_word(hall: VirtualHall, tmp_path: Path) -> None:
    """SIGKILL while listening, 25.5 s into the compliant demo game (every call said twice by then); `listen
    --resume` goes on with the same record for the rest of it: nothing recorded is lost or doubled, later times
    go on after the record's, and the occasion ends as `check` sees the whole recording."""
    wav = FIXTURES / "demo_game.wav"
    plan = plan_of(FIXTURES / "demo_game.txt", tmp_path)
    game = read_wav(wav)
    db = tmp_path / "live.db"
    args: list[object] = ["--caller-device", "caller_mic", "--floor-device", "floor_mic", "--plan", plan, "--db", db]
    args += ["--voice", "silent"]
    cut = round(25.5 * 16000)
    first, _ = start_listen(hall, args)
    for player in (hall.play("caller_mic", game.channels[0][:cut]), hall.play("floor_mic", game.channels[1][:cut])):
        assert player.wait(timeout=120) == 0
    time.sleep(2.0)  # the last repeat decoded and recorded
    first.kill()
    first.communicate(timeout=60)
    before = essence(report(db))
    assert before[0]["calls"] == ["B7", "I22", "N38", "G51", "O64", "B12"], before

    result = listen(
        hall,
        [*args, "--resume"],
        lambda: [hall.play("caller_mic", game.channels[0][cut:]), hall.play("floor_mic", game.channels[1][cut:])],
    )

    assert result.returncode == 0, result.stdout + result.stderr
    record = report(db)
    assert essence(record) == checked(wav, plan, tmp_path), result.stdout
    games = record["games"]
    assert isinstance(games, list) and len(games) == 1  # the same occasion, the same game
    times = [c["time"] for c in games[0]["calls"]]
    assert times == sorted(times) and games[0]["claims"][0]["time"] > times[-1]
    verified(db)
