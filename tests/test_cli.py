"""The command line, run as a user runs it: a subprocess, real recognizer, real procedure, real SQLite."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import wave
from html import escape
from pathlib import Path

import numpy as np
import pytest

from assistant.audio import read_wav, write_wav
from assistant.messages import Ball
from assistant.settings import ROOT
from assistant.store import Store, StoreError, occasion_record

FIXTURES = ROOT / "audio_fixtures"
SCENARIOS = ROOT / "tests" / "scenarios"
DEMO = FIXTURES / "demo_game.wav"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a script runs it: no terminal on standard input."""
    env = {k: v for k, v in os.environ.items() if k != "BINGO_VOSK_MODEL"}
    return subprocess.run(
        [sys.executable, "-m", "assistant", *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd or ROOT,
        env=env,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("bingo-assistant: error: ")
    return lines[0]


def test_help_names_every_verb() -> None:
    result = run("--help")
    assert result.returncode == 0
    for verb in ("demo", "transcribe", "check", "listen", "diagram", "verify", "report", "prune", "winner", "models"):
        assert verb in result.stdout
        assert run(verb, "--help").returncode == 0


def test_check_a_compliant_script_exits_0() -> None:
    result = run("check", SCENARIOS / "compliant-regular.txt")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "call B7" in result.stdout or "call " in result.stdout
    assert "no findings" in result.stdout.lower()


def test_check_a_violating_script_exits_1_with_the_clause(tmp_path: Path) -> None:
    result = run("check", SCENARIOS / "a3-not-repeated.txt", "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    findings = [f for g in report["games"] for f in g["findings"]] + report["occasion"]["findings"]
    assert [(f["clause"], f["code"], f["severity"]) for f in findings] == [
        ("A(3)", "call-not-repeated", "violation"),
        ("A(2)", "next-ball-before-repeat", "warning"),
    ]
    finding = findings[0]
    assert set(finding) >= {"clause", "code", "severity", "time", "heard", "message"}
    assert finding["severity"] == "violation"
    game = report["games"][0]
    assert {"number", "type", "calls", "claims", "status", "findings"} <= set(game)
    assert all(set(c) >= {"ball", "time"} for c in game["calls"])
    assert "prizes_total" in report["occasion"]


def test_check_prompts_the_skipped_question_in_the_prompt_list(tmp_path: Path) -> None:
    """B(9): "this game is completed" with no "are there any other bingos?": the question is prompted then."""
    listed = tmp_path / "prompts.json"
    result = run("check", SCENARIOS / "b9-not-asked.txt", "--quiet", "--prompts-json", listed)
    assert result.returncode == 1, result.stderr
    rows = json.loads(listed.read_text(encoding="utf-8"))
    asked = [(r["time"], r["text"], r["clause"]) for r in rows if r["kind"] == "ask-other-bingos"]
    assert asked == [(94.0, "Ask: are there any other bingos?", "B(9)")]  # 1:34, "this game is completed"


def test_check_writes_a_record_that_verifies_and_reports(tmp_path: Path) -> None:
    db = tmp_path / "hall.db"
    assert run("check", SCENARIOS / "compliant-winner-take-all.txt", "--db", db, "--quiet").returncode == 0
    verified = run("verify", "--db", db)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    html = tmp_path / "report.html"
    assert run("report", "--db", db, "--format", "html", "-o", html).returncode == 0
    assert "15.4.7.11" in html.read_text(encoding="utf-8")
    as_json = run("report", "--db", db, "--format", "json")
    assert json.loads(as_json.stdout)["games"][0]["type"] == "winner-take-all"
    with sqlite3.connect(db) as con:
        (row,) = con.execute("SELECT min(id) FROM events WHERE payload LIKE '%\"B7\"%'").fetchone()
        con.execute("UPDATE events SET payload = replace(payload, '\"B7\"', '\"B8\"') WHERE id = ?", (row,))
    tampered = run("verify", "--db", db)
    assert tampered.returncode == 1
    assert str(row) in tampered.stdout


@pytest.mark.parametrize("name", ["demo_game", "demo_violation"])
@pytest.mark.engine
def test_a_recording_gives_the_same_report_as_its_transcript(tmp_path: Path, name: str) -> None:
    script = FIXTURES / f"{name}.txt"
    plan = tmp_path / "plan.txt"
    plan.write_text("\n".join(x for x in script.read_text().splitlines() if x.startswith("@game")) + "\n")
    from_audio = run("check", FIXTURES / f"{name}.wav", "--plan", plan, "--json")
    from_script = run("check", script, "--json")
    assert from_audio.returncode == from_script.returncode, from_audio.stdout + from_audio.stderr
    heard, typed = json.loads(from_audio.stdout), json.loads(from_script.stdout)
    assert [c["ball"] for c in heard["games"][0]["calls"]] == [c["ball"] for c in typed["games"][0]["calls"]]
    assert [(f["clause"], f["code"], f["severity"]) for f in heard["games"][0]["findings"]] == [
        (f["clause"], f["code"], f["severity"]) for f in typed["games"][0]["findings"]
    ]
    assert heard["games"][0]["status"] == typed["games"][0]["status"]


@pytest.mark.engine
def test_a_recording_with_the_board_log_checks_the_master_board(tmp_path: Path) -> None:
    script = FIXTURES / "demo_game.txt"
    plan = tmp_path / "plan.txt"
    plan.write_text("\n".join(x for x in script.read_text().splitlines() if x.startswith("@game")) + "\n")
    board = tmp_path / "board.txt"
    board.write_text("# the console's key log\n3.9 board: B7\n7.2 board: I23\n")
    result = run("check", DEMO, "--plan", plan, "--board", board, "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    findings = json.loads(result.stdout)["games"][0]["findings"]
    assert [(f["clause"], f["code"], f["severity"]) for f in findings] == [
        ("A(5)", "call-differs-from-board", "violation")
    ]
    assert "I23" in findings[0]["message"] and findings[0]["heard"] == "i twenty two"
    board.write_text("3.9 board: B7\n4.0 caller: B seven\n")
    assert "board.txt:2: a board log holds only 'TIME board: BALL' lines" in one_error_line(
        run("check", DEMO, "--board", board)
    )
    assert "--board is for recordings" in one_error_line(run("check", script, "--board", board))


@pytest.mark.engine
def test_transcribe_prints_json_lines_with_calls() -> None:
    result = run("transcribe", FIXTURES / "calls.wav", "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert all({"start", "end", "text", "call", "role", "confidence", "uncertain", "could_be"} <= set(r) for r in rows)
    assert [r["call"] for r in rows] == ["B7", "O61", "N33", "G52", "I19", "B12"]
    # the other balls a call's hearing left room for: balls, never the call itself
    assert all(isinstance(r["could_be"], list) and r["call"] not in r["could_be"] for r in rows)
    assert all(str(Ball.parse(b)) == b for r in rows for b in r["could_be"])
    assert rows[0]["start"] < rows[0]["end"] <= rows[1]["start"]


@pytest.mark.engine
def test_audio_of_any_rate_and_channels_is_converted(tmp_path: Path) -> None:
    source = read_wav(FIXTURES / "calls.wav").channels[0]
    from scipy.signal import resample_poly

    low = resample_poly(source.astype(np.float64), 1, 2).astype(np.int16)
    floor = np.random.default_rng(1).normal(0, 20, len(low)).astype(np.int16)
    stereo = np.stack([low, floor], axis=1)
    path = tmp_path / "eight_khz_stereo.wav"
    write_wav(path, stereo, 8000)
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels()) == (8000, 2)
    result = run("transcribe", path, "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [r["call"] for r in rows if r["role"] == "caller"]
    expected = ["B7", "O61", "N33", "G52", "I19", "B12"]
    # telephone-band audio is harder: most calls must still come through, in order
    assert sum(a == b for a, b in zip(calls, expected, strict=False)) >= 4, calls


@pytest.mark.engine
def test_a_halls_config_file_changes_how_the_engine_cuts_and_listens(tmp_path: Path) -> None:
    """[endpoint] and [whisper] of --config reach the hall engine (the calls it hears by default: the test above)."""
    hall = tmp_path / "hall.toml"
    hall.write_text("[endpoint]\nmin_speech = 30.0\n", encoding="utf-8")  # no call is that long: all are dropped
    result = run("--config", hall, "transcribe", FIXTURES / "calls.wav", "--json")
    assert (result.returncode, result.stderr, result.stdout) == (0, "", "")
    hall.write_text('[whisper]\ndecision = "guess"\n', encoding="utf-8")
    result = run("--config", hall, "transcribe", FIXTURES / "calls.wav", "--json")
    assert result.returncode == 2
    assert one_error_line(result).endswith("decision must be rules or fitted: 'guess'")


def test_an_unknown_setting_in_a_config_file_exits_2_naming_it(tmp_path: Path) -> None:
    hall = tmp_path / "hall.toml"
    hall.write_text("[endpoint]\nhangover = 0.8\n[whisper]\nwindw = 5\n", encoding="utf-8")
    result = run("--config", hall, "transcribe", FIXTURES / "calls.wav")
    assert result.returncode == 2
    assert one_error_line(result) == f"bingo-assistant: error: {hall}: unknown setting [whisper] windw"


@pytest.mark.parametrize("verb", ["check", "transcribe"])
def test_unusable_input_exits_2_with_one_line(tmp_path: Path, verb: str) -> None:
    text = tmp_path / "notes.wav"
    text.write_text("B seven, B seven\n", encoding="utf-8")
    assert "not audio libsndfile can read (a text file" in one_error_line(run(verb, text))
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    result = run(verb, empty)
    assert result.returncode == 2
    one_error_line(result)
    missing = run(verb, tmp_path / "nowhere.wav")
    assert missing.returncode == 2
    assert "nowhere.wav" in one_error_line(missing)
    silent = tmp_path / "zero.wav"
    write_wav(silent, np.zeros(0, dtype=np.int16), 16000)
    result = run(verb, silent)
    assert result.returncode == 2
    one_error_line(result)


def test_a_bad_script_line_exits_2_naming_the_line(tmp_path: Path) -> None:
    script = tmp_path / "session.txt"
    script.write_text("@game type=regular\n0:04 caler: B seven\n", encoding="utf-8")
    result = run("check", script)
    assert result.returncode == 2
    assert ":2:" in one_error_line(result)


def test_listen_without_an_input_device_exits_2_in_one_line(tmp_path: Path) -> None:
    result = run("listen", "--db", tmp_path / "live.db")
    assert result.returncode == 2
    assert "device" in one_error_line(result)


def test_vosk_without_a_model_exits_2_in_one_line(tmp_path: Path) -> None:
    result = run("transcribe", FIXTURES / "calls.wav", "--engine", "vosk", "--model", tmp_path / "no-model")
    assert result.returncode == 2
    assert "model" in one_error_line(result)


def test_diagram_is_drawn_from_the_rule_pack(tmp_path: Path) -> None:
    result = run("diagram", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "procedure.mmd").read_text().startswith("stateDiagram")
    assert "<svg" in (tmp_path / "procedure.svg").read_text()


@pytest.mark.parametrize(("game", "status"), [("compliant", 0), ("faulty", 1)])
@pytest.mark.engine
def test_demo_runs_the_whole_pipeline_and_leaves_a_record(tmp_path: Path, game: str, status: int) -> None:
    out = tmp_path / "demo"
    result = run("demo", "--out", out, "--game", game, "--voice", "wav")
    assert result.returncode == status, result.stdout + result.stderr
    assert "call B7" in result.stdout
    assert ("FINDING" in result.stdout) == (status == 1)
    assert run("verify", "--db", out / "demo.db").returncode == 0
    report = json.loads((out / "demo-report.json").read_text())
    assert report["games"][0]["calls"]
    assert "<html" in (out / "demo-report.html").read_text().lower()
    prompts = json.loads((out / "demo-prompts.json").read_text())
    voice = read_wav(out / "demo-voice.wav")
    assert prompts and voice.duration >= max(float(str(p["time"])) for p in prompts)


def occasion_with_a_winner_take_all_game(tmp_path: Path, prize: int = 700) -> Path:
    """A record of one occasion: game 1 winner-take-all for `prize` dollars (120 cards sold), game 2 regular."""
    words = {300: "three hundred", 700: "seven hundred"}[prize]
    wta = (SCENARIOS / "compliant-winner-take-all.txt").read_text(encoding="utf-8")
    regular = (
        "@game type=regular last_ball_required=no\n2:10 caller: last ball called is not required\n"
        "2:16 caller: B nine\n2:19 caller: B nine\n2:30 caller: this game is completed\n"
    )
    script = tmp_path / "occasion.txt"
    script.write_text(wta.replace("prize=300", f"prize={prize}").replace("three hundred", words) + regular)
    db = tmp_path / "hall.db"
    assert run("check", script, "--db", db, "--quiet").returncode == 0
    return db


def winners_in(db: Path) -> list[dict[str, object]]:
    report = json.loads(run("report", "--db", db, "--format", "json").stdout)
    [game] = [g for g in report["winner_take_all"] if g["game"] == 1]
    return list(game["winners"])


def test_a_winner_is_refused_for_a_game_that_is_not_winner_take_all(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    result = run(
        "winner", "--db", db, "--game", "2", "--name", "Ana Ortiz", "--contact", "505-555-0142", "--prize", "50"
    )
    assert result.returncode == 2
    assert "game 2 of occasion 1 is a regular game" in one_error_line(result)
    assert "winner-take-all games only" in result.stderr


def test_a_prize_of_600_or_more_needs_the_contact_and_the_tax_document(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    nothing = run("winner", "--db", db, "--game", "1", "--name", "Ana Ortiz", "--prize", "700")
    assert nothing.returncode == 2
    line = one_error_line(nothing)
    assert "contact information (E(2)(c))" in line and "tax document reference (E(2)(d))" in line
    no_tax = run(
        "winner", "--db", db, "--game", "1", "--name", "Ana Ortiz", "--contact", "505-555-0142", "--prize", "700"
    )
    assert no_tax.returncode == 2
    line = one_error_line(no_tax)
    assert "tax document reference (E(2)(d))" in line and "contact" not in line
    assert winners_in(db) == []
    entered = run(
        "winner", "--db", db, "--game", "1", "--name", "Ana Ortiz", "--contact", "505-555-0142", "--prize", "700",
        "--tax-document", "W-2G 0042",
    )  # fmt: skip
    assert entered.returncode == 0, entered.stderr
    assert "game 1's E(2) record: complete" in entered.stdout
    assert [w["name"] for w in winners_in(db)] == ["Ana Ortiz"]


def test_a_second_winner_beyond_the_prize_is_refused_and_a_correction_supersedes(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    ana = ("--game", "1", "--name", "Ana Ortiz", "--contact", "505-555-0142", "--tax-document", "W-2G 0042")
    first = run("winner", "--db", db, *ana, "--prize", "700")
    assert first.returncode == 0, first.stderr
    entry = first.stdout.split("(entry ")[1].split(")")[0]
    second = run("winner", "--db", db, "--game", "1", "--name", "Lee Chan", "--contact", "lee@example.org",
                 "--prize", "700", "--tax-document", "W-2G 0043")  # fmt: skip
    assert second.returncode == 2
    line = one_error_line(second)
    assert "game 1's prize is $700.00" in line and "makes $1,400.00" in line and "--corrects ID" in line
    again = run("winner", "--db", db, *ana, "--prize", "700")
    assert again.returncode == 2 and f"(--corrects {entry})" in one_error_line(again)
    assert [(w["name"], w["prize"]) for w in winners_in(db)] == [("Ana Ortiz", 700.0)]

    # the game was split: Ana's entry is corrected to her half, then Lee's half is entered
    half = run("winner", "--db", db, *ana, "--prize", "350", "--corrects", entry)
    assert half.returncode == 0, half.stderr
    assert f"correcting entry {entry}" in half.stdout
    assert "shares add up to $350.00 of the $700.00 prize" in half.stdout
    lee = run(
        "winner", "--db", db, "--game", "1", "--name", "Lee Chan", "--contact", "lee@example.org", "--prize", "350"
    )
    assert lee.returncode == 0, lee.stderr
    assert "complete" in lee.stdout
    assert [(w["name"], w["prize"]) for w in winners_in(db)] == [("Ana Ortiz", 350.0), ("Lee Chan", 350.0)]
    assert run("verify", "--db", db).returncode == 0
    with sqlite3.connect(db) as con:  # the journal keeps every entry, the corrected one too
        assert con.execute("SELECT count(*) FROM events WHERE kind = 'winner'").fetchone()[0] == 3
    stale = run("winner", "--db", db, *ana, "--prize", "350", "--corrects", entry)
    assert stale.returncode == 2 and f"no winner entry {entry} to correct" in one_error_line(stale)


def test_every_report_form_and_check_say_the_same_of_an_incomplete_winner_record(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    checked = run("check", tmp_path / "occasion.txt", "--quiet")
    assert checked.returncode == 0, checked.stderr  # the conduct has no finding: the record is what lacks
    verdict = checked.stdout.strip().splitlines()[-1]
    assert verdict.startswith("No findings; the E(2) record lacks 2 entries"), checked.stdout
    lacking = "winner contact information for a prize of $700.00"
    assert lacking in checked.stdout
    as_json = json.loads(run("check", tmp_path / "occasion.txt", "--json").stdout)
    assert as_json["summary"]["verdict"] == verdict
    assert as_json["summary"]["record_incomplete"][0]["missing"] == lacking

    def forms() -> dict[str, str]:
        return {form: run("report", "--db", db, "--format", form).stdout for form in ("text", "json", "csv", "html")}

    reports = forms()
    assert reports["text"].strip().splitlines()[-1] == verdict
    assert lacking in reports["text"]
    report = json.loads(reports["json"])
    assert report["summary"]["verdict"] == verdict
    assert report["winner_take_all"][0]["missing"][0] == f"{lacking} (E(2)(c))"
    rows = list(csv.DictReader(io.StringIO(reports["csv"])))
    assert [(r["occasion"], r["game"], r["clause"], r["severity"]) for r in rows] == [
        ("1", "1", "E(2)(c)", "incomplete"),
        ("1", "1", "E(2)(d)", "incomplete"),
    ]
    assert escape(verdict) in reports["html"] and lacking in reports["html"]

    won = run(
        "winner", "--db", db, "--game", "1", "--name", "Ana Ortiz", "--contact", "505-555-0142", "--prize", "700",
        "--tax-document", "W-2G 0042",
    )  # fmt: skip
    assert won.returncode == 0, won.stderr
    reports = forms()
    assert reports["text"].strip().splitlines()[-1] == "Compliant: no findings."
    assert json.loads(reports["json"])["summary"]["verdict"] == "Compliant: no findings."
    assert list(csv.DictReader(io.StringIO(reports["csv"]))) == []
    assert "Compliant: no findings." in reports["html"] and lacking not in reports["html"]


def test_the_csv_report_names_its_occasion(tmp_path: Path) -> None:
    db = tmp_path / "hall.db"
    assert run("check", SCENARIOS / "a3-not-repeated.txt", "--db", db, "--quiet").returncode == 1
    result = run("report", "--db", db, "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows and {r["occasion"] for r in rows} == {"1"}
    assert {r["clause"] for r in rows} >= {"A(3)"}


def test_report_lists_the_occasions_and_a_missing_one_says_which_exist(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    assert run("check", SCENARIOS / "a3-not-repeated.txt", "--db", db, "--quiet").returncode == 1
    listed = run("report", "--db", db, "--list")
    assert listed.returncode == 0, listed.stderr
    header, columns, *rows = listed.stdout.splitlines()
    assert header == f"{db}: 2 occasions"
    assert columns.split() == ["OCCASION", "DATE", "GAMES", "STATE", "SOURCE"]
    first, second = (row.split() for row in rows)
    today = run("report", "--db", db, "--format", "json").stdout
    date = json.loads(today)["started_at"][:4]
    assert first[0] == "1" and first[1].startswith(date) and "(1 winner-take-all, 1 regular)" in rows[0]
    assert rows[0].endswith("occasion.txt") and rows[1].endswith("a3-not-repeated.txt")
    assert "closed" in rows[0] and "1 (1 regular)" in rows[1]
    missing = run("report", "--db", db, "--occasion", "999")
    assert missing.returncode == 2
    assert one_error_line(missing).endswith(f"no occasion 999 in {db}: it holds occasions 1, {second[0]}")


def on_a_terminal(*args: str | Path, answer: str) -> tuple[int, str]:
    """The command with a terminal on standard input (a pseudo-terminal) that types `answer`: (exit status, output)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "assistant", *map(str, args)],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    os.close(follower)
    os.write(leader, answer.encode() + b"\n")
    out, _ = process.communicate(timeout=120)
    os.close(leader)
    return process.returncode, out.decode()


def test_prune_names_what_it_will_move_and_asks_unless_yes(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    archive = tmp_path / "arch1.db"
    date = json.loads(run("report", "--db", db, "--format", "json").stdout)["started_at"][:10]
    refused = run("prune", "--db", db, "--archive", archive, "--years", "0")  # today's occasion: asked too
    assert refused.returncode == 2
    line = one_error_line(refused)
    assert f"prune would move occasion 1 ({date}) to {archive}" in line and "confirm with --yes" in line
    assert not archive.exists() and "1 occasion" in run("report", "--db", db, "--list").stdout

    status, said = on_a_terminal("prune", "--db", db, "--archive", archive, "--years", "0", answer="n")
    assert status == 0 and f"prune will move occasion 1 ({date})" in said and "nothing moved" in said, said
    assert not archive.exists()
    status, said = on_a_terminal("prune", "--db", db, "--archive", archive, "--years", "0", answer="y")
    assert status == 0 and f"moved occasion 1 ({date}) to {archive} (" in said, said
    assert "holds no occasion" in run("report", "--db", db, "--list").stdout


def test_prune_moves_occasions_never_the_anchor_alone(tmp_path: Path) -> None:
    db = occasion_with_a_winner_take_all_game(tmp_path)
    assert run("check", SCENARIOS / "a3-not-repeated.txt", "--db", db, "--quiet").returncode == 1
    with sqlite3.connect(db) as con:
        second = con.execute("SELECT max(id) FROM occasions").fetchone()[0]
    archive = tmp_path / "arch1.db"
    moved = run("prune", "--db", db, "--archive", archive, "--years", "0", "--yes")
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith("moved occasions 1 (") and f" and {second} (" in moved.stdout
    with sqlite3.connect(archive) as con:
        archived = con.execute("SELECT count(*) FROM events").fetchone()[0]

    again = run("prune", "--db", db, "--archive", archive, "--years", "0", "--yes")
    assert (again.returncode, again.stdout.strip()) == (0, "nothing older to prune"), again.stdout + again.stderr
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT kind FROM events").fetchall() == [("anchor",)]
    with sqlite3.connect(archive) as con:
        assert con.execute("SELECT count(*) FROM events").fetchone()[0] == archived
    assert run("verify", "--db", db).returncode == 0 and run("verify", "--db", archive).returncode == 0


def serve_to_its_end(script: Path, db: Path) -> tuple[int, str]:
    """`serve --session SCRIPT --db DB` until the whole session is in the record, then Ctrl-C: (exit status, stdout)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "assistant", "serve", "--session", str(script), "--db", str(db), "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C as a caller's shell gives it
    )
    deadline = time.monotonic() + 120
    try:
        while True:  # the session's last words close its game in the record
            assert process.poll() is None and time.monotonic() < deadline, "serve ended or did not play the session"
            if db.exists():
                try:
                    with Store.open(db, readonly=True) as store:
                        occasion = store.latest_occasion()
                        games = occasion_record(store, occasion).games if occasion is not None else []
                except StoreError:  # serve is still making the record
                    games = []
                if games and games[-1].status == "completed":
                    break
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert "Traceback" not in err, err
    return process.returncode, out


@pytest.mark.parametrize(("scenario", "status"), [("a3-not-repeated", 1), ("compliant-regular", 0)])
def test_serve_exits_as_check_does_when_stopped(tmp_path: Path, scenario: str, status: int) -> None:
    script = SCENARIOS / f"{scenario}.txt"
    checked = run("check", script, "--quiet")
    assert checked.returncode == status
    served, said = serve_to_its_end(script, tmp_path / "hall.db")
    assert served == status, said
    assert said.strip().splitlines()[-1] == checked.stdout.strip().splitlines()[-1]
