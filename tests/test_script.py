"""The transcript script format (a contract): lines to inputs, inputs back to lines, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.grammar import Grammar
from assistant.messages import Ball, BoardKey, GamePlan, GameStart, GameType, Role, SessionEnd, Tick, Utterance
from assistant.script import ScriptError, format_script, parse_plan, parse_script, read_script

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.txt"))


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


def test_lines_become_inputs_in_time_order(grammar: Grammar) -> None:
    items = parse_script(
        """# a comment
@game type=limited balls=50 last_ball_required=yes prize=$1,200
00:05 caller: this is a fifty ball game   # trailing comment
12.5 caller: B seven
1:02.5 floor: manufacturer one four two serial number four seven two nine one
63 board: b-7
64 player: Bingo!
""",
        grammar,
    )
    assert [type(i) for i in items] == [GameStart, Utterance, Utterance, Utterance, BoardKey, Utterance]
    start = items[0]
    assert isinstance(start, GameStart)
    assert start.time == 5.0  # a game begins with its first words
    assert start.plan == GamePlan(type=GameType.LIMITED, balls=50, prize=1200.0, last_ball_required=True)
    call = items[2]
    assert isinstance(call, Utterance)
    assert (call.start, call.role, call.text) == (12.5, Role.CALLER, "B seven")
    assert [(m.intent, m.ball) for m in call.meanings] == [("call", Ball(7))]
    card = items[3]
    assert isinstance(card, Utterance) and card.start == 62.5
    assert (card.meanings[0].manufacturer, card.meanings[0].serial) == ("142", "47291")
    assert items[4] == BoardKey(63.0, Ball(7))
    bingo = items[5]
    assert isinstance(bingo, Utterance) and bingo.meanings[0].intent == "bingo" and bingo.role is Role.PLAYER


def test_unsure_and_confidence_marks(grammar: Grammar) -> None:
    items = parse_script(
        "1 caller?: B seven\n2 caller(0.42)?: B eight\n3 floor(0.9): G fifty\n4 tick\n5 end\n", grammar
    )
    first, second, third = items[0], items[1], items[2]
    assert isinstance(first, Utterance) and first.uncertain and first.confidence == 0.5
    assert isinstance(second, Utterance) and second.uncertain and second.confidence == 0.42
    assert isinstance(third, Utterance) and not third.uncertain and third.confidence == 0.9
    assert items[3:] == [Tick(4.0), SessionEnd(5.0)]


def test_a_call_names_the_balls_its_hearing_left_room_for(grammar: Grammar) -> None:
    first, second = parse_script("1 caller: N forty one (or N31, O71)\n2 caller?: N forty one\n", grammar)
    assert isinstance(first, Utterance) and first.text == "N forty one" and first.could_be == (Ball(31), Ball(71))
    assert [m.ball for m in first.meanings] == [Ball(41)] and not first.unknown
    assert isinstance(second, Utterance) and second.could_be == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("12 flor: B seven", "s.txt:1: unknown role 'flor'"),
        ("# c\n\n5 caller: B seven\n3 caller: B eight", "s.txt:4: time goes backwards (3 after 5)"),
        ("abc caller: B seven", "s.txt:1: expected 'TIME ROLE: WORDS'"),
        ("1:75 caller: B seven", "s.txt:1: bad time: seconds must be under 60"),
        ("12 caller B seven", "s.txt:1: expected 'ROLE: WORDS' after the time"),
        ("12 caller:   ", "s.txt:1: no words after the role"),
        ("12 board: B 20", "s.txt:1: 'B 20': 20 is under I, not B"),
        ("12 board: X7", "s.txt:1: not a ball: 'X7'"),
        ("12 caller(high): B seven", "s.txt:1: confidence must be a number"),
        ("12 caller(1.5): B seven", "s.txt:1: confidence must be 0..1"),
        ("@gam type=regular", "s.txt:1: unknown directive '@gam'"),
        ("@game type=bonanza", "s.txt:1: @game: unknown type 'bonanza'"),
        ("@game balls=50", "s.txt:1: @game needs type="),
        ("@game type=limited balls=fifty", "s.txt:1: @game: balls must be a whole number"),
        ("@game type=limited balls=90", "s.txt:1: @game: balls must be 1-75"),
        ("@game type=regular colour=red", "s.txt:1: @game: unknown key 'colour'"),
        ("@game type=regular prize=lots", "s.txt:1: @game: prize must be dollars"),
        ("@game type=regular last_ball_required=maybe", "s.txt:1: @game: last_ball_required must be yes or no"),
        ("@game type=regular type=limited", "s.txt:1: @game: type given twice"),
        ("12 caller: B seven (or X9)", "s.txt:1: (or ...): not a ball: 'X9'"),
        ("12 caller: (or B9)", "s.txt:1: (or ...) names the balls"),
        ("12 caller: B seven (or )", "s.txt:1: (or ...) names the balls"),
        ("12 floor: B seven, I twenty (or B9)", "s.txt:1: (or ...) follows the words of one call"),
        ("12 caller: valid bingo (or B9)", "s.txt:1: (or ...) follows the words of one call"),
    ],
)
def test_bad_lines_give_one_line_errors(grammar: Grammar, text: str, message: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(text, grammar, name="s.txt")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_read_script_reports_unreadable_files(grammar: Grammar, tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read"):
        read_script(tmp_path / "missing.txt", grammar)
    binary = tmp_path / "noise.txt"
    binary.write_bytes(b"\x81\x00\xff\xfe")
    with pytest.raises(ScriptError, match="not a text file"):
        read_script(binary, grammar)
    binary.write_bytes(b"\xff\xfe\x00\x81")  # a UTF-16 byte-order mark: read as UTF-16, its one line is no script's
    with pytest.raises(ScriptError, match=r"noise\.txt:1: expected 'TIME ROLE: WORDS'"):
        read_script(binary, grammar)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_format_script_is_the_inverse(path: Path, grammar: Grammar) -> None:
    items = read_script(path, grammar)
    again = parse_script(format_script(items), grammar)
    assert again == items


def test_format_keeps_marks_and_plans(grammar: Grammar) -> None:
    text = (
        "@game type=winner-take-all cards_sold=120 prize=300.5 last_ball_required=no pattern='small picture frame'\n"
        "1 caller?: B seven\n2 caller(0.42)?: B eight\n3 floor(0.9): G fifty (or G56 G60)\n"
        "4 board: O75\n5 tick\n6 end\n"
    )
    items = parse_script(text, grammar)
    assert format_script(items) == text


def test_plan_file(grammar: Grammar) -> None:
    plans = parse_plan("# tonight\n@game type=regular last_ball_required=yes\n@game type=cover-all prize=500\n")
    assert plans == [
        GamePlan(type=GameType.REGULAR, last_ball_required=True),
        GamePlan(type=GameType.COVER_ALL, prize=500.0),
    ]
    with pytest.raises(ScriptError, match=r"plan.txt:2: a plan holds only '@game \.\.\.' lines"):
        parse_plan("@game type=regular\n12 caller: B seven\n", name="plan.txt")
    with pytest.raises(ScriptError, match="no @game line"):
        parse_plan("# nothing\n")
