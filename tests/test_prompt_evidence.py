"""Prompts under the rule of evidence, through `check --prompts-json`: a prompt that tells the caller something
went wrong is said only when all it rests on was heard for sure; otherwise it asks. Speech the grammar could not
place is speech: an absence said in any words is not a violation while such words stand in its window."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

from assistant.messages import Prompt
from assistant.rules import RulePack
from assistant.settings import ROOT
from lab.scenarios.scenarios import prompts_beyond

OPENING = """@game type=regular last_ball_required=no
0:00 caller: last ball called is not required
0:06 caller: B seven
"""


def check(
    tmp_path: Path, script: str, *flags: str, config: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, str]]]:
    session = tmp_path / "session.txt"
    session.write_text(script, encoding="utf-8")
    prompts = tmp_path / "prompts.json"
    configured = ["--config", str(config)] if config else []
    result = subprocess.run(
        [sys.executable, "-m", "assistant", *configured, "check", str(session), "--prompts-json", str(prompts), *flags],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode in (0, 1), result.stderr
    return result, [(row["kind"], row["text"]) for row in json.loads(prompts.read_text(encoding="utf-8"))]


CLAIM = """0:09 caller: B seven
{between}
0:30 caller: I twenty two
0:33 caller: I twenty two
0:40 player: bingo
0:44 floor: manufacturer one four two serial number five five one two
0:50 floor: B seven I twenty two O sixty four
"""


@pytest.mark.parametrize(
    ("between", "said"),
    [
        ("0:18 caller: good luck everyone", ("not-called", "Not called: O sixty four")),
        ("0:18 caller?: oh sixty", ("not-called-check", "Did you call O sixty four? Check the board")),
    ],
    ids=["all-heard-sure", "caller-heard-unsure"],
)
def test_a_winning_number_not_on_the_board_is_asserted_only_when_no_unsure_call_could_be_it(
    tmp_path: Path, between: str, said: tuple[str, str]
) -> None:
    _, prompts = check(tmp_path, OPENING + CLAIM.format(between=between))
    assert said in prompts
    assert {kind for kind, _ in prompts} & {"not-called", "not-called-check"} == {said[0]}


@pytest.mark.parametrize(
    ("second", "said"),
    [
        ("0:09 caller: good luck everyone", ("repeat-call", "Say it again: B seven")),
        ("0:09 caller?: b", ("repeat-call-check", "Did you say B seven twice?")),
    ],
    ids=["nothing-unsure", "unsure-speech-after-the-call"],
)
def test_say_it_again_is_asked_when_unsure_speech_may_have_been_the_second_saying(
    tmp_path: Path, second: str, said: tuple[str, str]
) -> None:
    _, prompts = check(tmp_path, OPENING + second + "\n0:30 caller: I twenty two\n0:33 caller: I twenty two\n")
    assert prompts[0] == said


@pytest.mark.parametrize(
    ("call", "said", "severity"),
    [
        ("0:06 caller: B seven", ("board-differs", "Board shows B nine"), "violation"),
        ("0:06 caller?: B seven", ("board-differs-check", "Board shows B nine. Did you call B seven?"), "uncertain"),
        (
            "0:06 caller: B seven (or B9)",
            ("board-differs-check", "Board shows B nine. Did you call B seven?"),
            "uncertain",
        ),
        ("0:06 caller: B seven (or B8)", ("board-differs", "Board shows B nine"), "violation"),
        (
            "0:05.5 caller: B seven (or B9)\n0:06 board: B9",
            ("board-differs-check", "Board shows B nine. Did you call B seven?"),
            "uncertain",
        ),
    ],
    ids=[
        "heard-sure",
        "heard-unsure",
        "sure-with-room-for-the-keyed-ball",
        "sure-with-room-for-another-ball",
        "keyed-while-being-called",
    ],
)
def test_the_board_differs_is_asserted_only_on_a_call_heard_sure(
    tmp_path: Path, call: str, said: tuple[str, str], severity: str
) -> None:
    """The keyed ball is a witness, not the answer: the call stays the ball heard, and a hearing that left room
    for the keyed ball makes the mismatch a doubt (asked, for review), never a violation."""
    keyed = call if "board" in call else f"0:05 board: B9\n{call}"  # keyed before the call, or while it is called
    script = (
        "@game type=regular last_ball_required=no\n0:00 caller: last ball called is not required\n"
        f"{keyed}\n0:09 caller: B seven\n"
    )
    result, prompts = check(tmp_path, script, "--json")
    assert said in prompts
    (game,) = json.loads(result.stdout)["games"]
    (finding,) = [f for f in game["findings"] if f["code"] == "call-differs-from-board"]
    assert finding["severity"] == severity
    assert [c["ball"] for c in game["calls"]] == ["B7"], "never turned into the keyed ball"


def test_an_approval_in_the_hall_s_own_words_leaves_the_manual_draw_for_review(tmp_path: Path) -> None:
    script = (
        OPENING
        + "0:09 caller: B seven\n0:18 caller: looks like we lost power\n"
        + "0:22 caller: {approval}\n0:26 caller: I twenty two\n0:29 caller: I twenty two\n"
        + "0:54 caller: this game is completed\n"
    )
    heard, _ = check(tmp_path, script.format(approval="that is well over half the room, the players approve"), "--json")
    (finding,) = [f for g in json.loads(heard.stdout)["games"] for f in g["findings"] if f["clause"] == "F"]
    assert finding["severity"] == "uncertain"
    assert [d["heard"] for d in finding["doubts"]] == ["that is well over half the room, the players approve"]
    assert heard.returncode == 0
    silent, _ = check(tmp_path, script.replace("0:22 caller: {approval}\n", ""), "--json")
    (finding,) = [f for g in json.loads(silent.stdout)["games"] for f in g["findings"] if f["clause"] == "F"]
    assert finding["severity"] == "violation"
    assert silent.returncode == 1


@pytest.mark.parametrize(
    ("later", "board"),
    [
        ("0:30 caller: I twenty two\n0:33 caller: I twenty two", ["B7", "I22", "N33"]),
        ("0:30 caller: O sixty four\n0:33 caller: O sixty four", ["B7", "I20", "O64", "N33"]),
    ],
    ids=["contradicted-after-the-prompt", "the-next-ball-of-another-column"],
)
def test_a_sure_saying_replaces_an_unsure_call_it_contradicts_even_after_say_it_again(
    tmp_path: Path, later: str, board: list[str]
) -> None:
    script = OPENING + f"0:09 caller: B seven\n0:18 caller?: I twenty\n{later}\n0:40 caller: N thirty three\n"
    script += "0:43 caller: N thirty three\n"
    result, prompts = check(tmp_path, script, "--json")
    assert ("repeat-call-check", "Did you say I twenty twice?") in prompts
    (game,) = json.loads(result.stdout)["games"]
    assert [c["ball"] for c in game["calls"] if not c.get("withdrawn")] == board
    assert all(f["severity"] == "uncertain" for f in game["findings"])


NO_CALL_YET = """@game type=regular last_ball_required=no
0:00 caller: last ball called is not required
"""
FOUR_CALLED = "".join(
    f"0:{t:02d} caller: {ball}\n0:{t + 3:02d} caller: {ball}\n"
    for t, ball in ((6, "B seven"), (12, "I twenty two"), (18, "N thirty three"), (24, "G fifty"))
)
CARD = "0:44 floor: manufacturer one four two serial number five five one two"
CALLS_ON = "0:33 caller: O seventy one\n0:36 caller: O seventy one"


@pytest.mark.parametrize(
    ("session", "asked"),
    [
        (NO_CALL_YET + FOUR_CALLED + "0:32 player?: bingo\n" + CALLS_ON, False),
        (NO_CALL_YET + FOUR_CALLED + "0:32 player?: bingo\n" + CARD, True),
        (NO_CALL_YET + FOUR_CALLED + "0:32 player(0.02): bingo\n" + CARD, False),
        (NO_CALL_YET + "0:08 player?: bingo\n" + CARD + "\n0:50 caller: B seven\n0:53 caller: B seven", False),
        (OPENING + "0:09 caller: B seven\n0:32 player?: bingo\n" + CARD, False),
        (NO_CALL_YET.replace("regular", "cover-all") + FOUR_CALLED + "0:32 player?: bingo\n" + CARD, False),
    ],
    ids=[
        "the-caller-calls-on",
        "nothing-sure-follows",
        "hardly-a-bingo",
        "no-ball-called-yet",
        "fewer-balls-than-a-line",
        "fewer-balls-than-a-cover-all",
    ],
)
def test_was_that_a_bingo_waits_for_what_follows_a_bingo_heard_unsure(
    tmp_path: Path, session: str, asked: bool
) -> None:
    """No card can have won before the game's smallest pattern can be complete (a line's four balls, a cover-all's
    24): a bingo heard unsure then is kept for review, never asked."""
    result, prompts = check(tmp_path, session + "\n", "--json")
    times = [p["time"] for p in json.loads((tmp_path / "prompts.json").read_text()) if p["kind"] == "bingo-unsure"]
    assert times == ([36.0] if asked else []), prompts
    findings = [f for g in json.loads(result.stdout)["games"] for f in g["findings"] if f["code"] == "bingo-unsure"]
    assert [f["severity"] for f in findings] == ["uncertain"], "the unsure bingo is kept for review either way"


@pytest.mark.slow  # a session played in real time
def test_serve_realtime_says_a_prompt_when_it_is_due_not_when_the_next_words_come(tmp_path: Path) -> None:
    session, db = tmp_path / "late.txt", tmp_path / "late.db"
    session.write_text(OPENING.replace("0:06", "0:01") + "0:13 caller: B seven\n", encoding="utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "assistant", "serve", "--session", session, "--realtime", "--db", db]
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen([*map(str, command), "--port", str(port)], cwd=ROOT, stdout=log, stderr=log)
    try:
        deadline, rows = time.monotonic() + 90, []
        while time.monotonic() < deadline and not any(r[1] == "Utterance" and '"start":13.0' in r[2] for r in rows):
            time.sleep(0.5)
            with suppress(sqlite3.OperationalError), sqlite3.connect(db) as record:  # until the record is made
                rows = record.execute("SELECT kind, type, payload, seq FROM events ORDER BY id").fetchall()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    inputs = {seq: kind for k, kind, _, seq in rows if k == "input"}
    (cause,) = [inputs[seq] for k, kind, payload, seq in rows if kind == "Prompt" and "repeat-call" in payload]
    assert cause == "Tick", "said at its deadline (11 s), not when the late second saying came (13 s)"


def test_a_violation_is_told_when_it_is_recorded_and_a_hall_may_mute_it(tmp_path: Path) -> None:
    script = OPENING + "0:15 caller: N thirty three\n0:18 caller: N thirty three\n"
    muted = tmp_path / "hall.toml"
    muted.write_text('[voice]\nmuted_kinds = ["violation-recorded"]\n', encoding="utf-8")
    for config, told in ((None, [("Recorded: A 3, call not repeated", "said")]), (muted, [])):
        check(tmp_path, script, "--voice-out", str(tmp_path / "voice.wav"), config=config)
        rows = json.loads((tmp_path / "prompts.json").read_text(encoding="utf-8"))
        assert [(r["text"], r["status"]) for r in rows if r["kind"] == "violation-recorded"] == told


def test_the_scenario_bench_counts_a_question_said_in_place_of_a_prompt_as_that_prompt(rules: RulePack) -> None:
    """ "Was that a bingo?" where the transcript has the player's bingo ("Floor: read the card") is the same matter,
    asked; the same question where nobody claimed is a prompt beyond the transcript's, and one that accuses."""
    heard = [
        Prompt(64.0, "Was that a bingo?", "bingo-unsure"),
        Prompt(70.0, "Did you say B seven twice?", "repeat-call-check"),
        Prompt(100.0, "Was that a bingo?", "bingo-unsure"),
    ]
    told = [Prompt(64.0, "Floor: read the card's manufacturer and serial number", "read-card")]
    told.append(Prompt(70.0, "Say it again: B seven", "repeat-call"))
    assert [(p.time, p.kind) for p in prompts_beyond(heard, told, rules)] == [(100.0, "bingo-unsure")]
    assert rules.prompts["bingo-unsure"].wrong and not rules.prompts["repeat-call-check"].wrong


WON = (
    "@game type=regular last_ball_required=yes\n0:00 caller: last ball called is required\n"
    + "".join(
        f"0:{t:02d} caller: {ball}\n0:{t + 3:02d} caller: {ball}\n"
        for t, ball in ((6, "B seven"), (12, "I twenty two"), (18, "N thirty three"), (24, "G fifty"))
    )
    + "0:30 player: bingo\n0:36 floor: manufacturer one four two serial number four seven two nine one\n"
    + "0:44 floor: B seven, I twenty two, N thirty three, G fifty\n0:50 caller: valid bingo\n"
    + "0:54 caller: are there any other bingos?\n"
)


@pytest.mark.parametrize(
    ("between", "severity"),
    [
        ("", "violation"),
        ("1:00 caller?: this game\n", "uncertain"),
        ("1:00 caller: okay folks next one\n", "uncertain"),
    ],
    ids=["nothing-said", "caller-heard-unsure", "caller-in-the-hall-s-own-words"],
)
def test_a_call_after_a_valid_bingo_is_a_violation_only_when_nothing_could_have_opened_the_next_game(
    tmp_path: Path, between: str, severity: str
) -> None:
    """B(4) rests on an absence too: the caller's words that would have closed the game or opened the next. Unsure
    or unplaced speech of the caller since the bingo was found valid may have been them (a next game's opening
    heard unsure made its calls false violations)."""
    result, _ = check(tmp_path, WON + between + "1:06 caller: B one\n1:09 caller: B one\n", "--json")
    found = [f for g in json.loads(result.stdout)["games"] for f in g["findings"] if f["clause"] == "B(4)"]
    assert [f["severity"] for f in found] == [severity, severity]
