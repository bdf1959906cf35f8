"""The procedure engine: transcripts in, outputs out (the real grammar, the real rule pack, the real machine)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from assistant.conduct import named_checks
from assistant.grammar import Grammar
from assistant.messages import (
    Ball,
    CallMade,
    CallWithdrawn,
    ClaimOpened,
    ClaimResolved,
    Finding,
    GameClosed,
    Input,
    Output,
    Prompt,
    Role,
    Severity,
    StepChanged,
    Tick,
    Utterance,
)
from assistant.procedure import (
    DEFAULT_RULES,
    Conduct,
    Procedure,
    ProcedureSettings,
    RuleError,
    RulePack,
    check_inputs,
    clause_table,
)
from assistant.script import parse_script, read_script

SCENARIOS = Path(__file__).parent / "scenarios"
ALL_SCENARIOS = sorted(SCENARIOS.glob("*.txt"))


def run(
    text: str, grammar: Grammar, rules: RulePack, settings: ProcedureSettings | None = None
) -> tuple[Any, list[Output]]:
    return check_inputs(parse_script(text, grammar), rules, grammar, settings or ProcedureSettings())


def scenario(name: str, grammar: Grammar) -> list[Input]:
    return read_script(SCENARIOS / f"{name}.txt", grammar)


def of(kind: type[Any], outputs: list[Output]) -> list[Any]:
    return [o for o in outputs if isinstance(o, kind)]


GAME = "@game type=regular last_ball_required=yes\n0 caller: last ball called is required\n"


@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=[p.stem for p in ALL_SCENARIOS])
def test_replay_gives_the_same_outputs(path: Path, grammar: Grammar, rules: RulePack) -> None:
    items = read_script(path, grammar)
    first = check_inputs(items, rules, grammar)
    second = check_inputs(items, rules, grammar)
    assert first[1] == second[1]
    assert json.dumps(first[0].to_json()) == json.dumps(second[0].to_json())


@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=[p.stem for p in ALL_SCENARIOS])
def test_live_ticks_change_nothing_but_when(path: Path, grammar: Grammar, rules: RulePack) -> None:
    """Live, the pipeline feeds a Tick every second so prompts come on time; the outputs are the same."""
    items = read_script(path, grammar)
    ticked: list[Input] = []
    clock = 0.5
    for item in items:
        time = item.start if isinstance(item, Utterance) else item.time
        while clock < time:
            ticked.append(Tick(clock))
            clock += 1.0
        ticked.append(item)
    assert len(ticked) > len(items)
    plain = check_inputs(items, rules, grammar)[1]
    live = check_inputs(ticked, rules, grammar)[1]
    assert [o for o in live if not isinstance(o, StepChanged)] == [o for o in plain if not isinstance(o, StepChanged)]
    assert of(StepChanged, live)[1:] == of(StepChanged, plain)[1:]  # the first one comes with the first input


def test_correction_withdraws_the_wrong_ball(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = check_inputs(scenario("compliant-correction", grammar), rules, grammar)
    assert [(w.ball, w.time) for w in of(CallWithdrawn, outputs)] == [(Ball(31), 31.0)]  # at the correct call
    game = occasion.to_json()["games"][0]
    assert [c["ball"] for c in game["calls"]] == ["B7", "N33", "G50", "I22", "O71"]
    assert game["withdrawn"] == [{"ball": "N31", "time": 18.0}]
    assert occasion.all_findings() == []


def test_mismatch_then_correction_keeps_the_right_ball(grammar: Grammar, rules: RulePack) -> None:
    outputs: list[Output] = []
    procedure = Procedure(rules, grammar, ProcedureSettings(), outputs.append)
    for item in scenario("compliant-mismatch-corrected", grammar)[:6]:
        procedure.feed(item)
    assert procedure.board.called == [Ball(8)]
    assert [p.text for p in of(Prompt, outputs)] == [
        "Say: an error has been made, I am reading the correct number, please correct your card"
    ]
    assert of(CallWithdrawn, outputs)[0].ball == Ball(7)


def test_b8_cross_check_names_the_numbers_not_called(grammar: Grammar, rules: RulePack) -> None:
    _, outputs = check_inputs(scenario("b8-valid-with-uncalled", grammar), rules, grammar)
    not_called = [p for p in of(Prompt, outputs) if p.kind == "not-called"]
    assert [(p.text, p.time, p.clause) for p in not_called] == [("Not called: G fifty two", 80.0, "B(8)")]
    resolved = of(ClaimResolved, outputs)[0]
    assert resolved.valid and resolved.not_called == (Ball(52),)
    assert (resolved.manufacturer, resolved.serial) == ("142", "47291")


def test_repeat_prompt_comes_from_a_tick_and_a_late_repeat_is_no_finding(grammar: Grammar, rules: RulePack) -> None:
    outputs: list[Output] = []
    procedure = Procedure(rules, grammar, ProcedureSettings(repeat_window=10.0), outputs.append)
    for item in parse_script(GAME + "6 caller: B seven\n", grammar):
        procedure.feed(item)
    procedure.feed(Tick(15.9))
    assert of(Prompt, outputs) == []
    procedure.feed(Tick(16.0))
    assert [(p.text, p.kind, p.time) for p in of(Prompt, outputs)] == [("Say it again: B seven", "repeat-call", 16.0)]
    procedure.feed(grammar.utterance(19.0, 20.0, Role.CALLER, "B seven"))
    assert procedure.occasion.all_findings() == []


def test_windows_come_from_settings(grammar: Grammar, rules: RulePack) -> None:
    text = GAME + "6 caller: B seven\n9 caller: B seven\n18 caller: N thirty three\n"
    _, default = run(text, grammar, rules)
    _, short = run(text, grammar, rules, ProcedureSettings(repeat_window=2.0))
    assert [p.kind for p in of(Prompt, default)] == []
    assert [(p.kind, p.time) for p in of(Prompt, short)] == [("repeat-call", 8.0)]
    assert of(Finding, short) == []  # N33: the recording ended inside its window
    _, cut = run(text + "30 end\n", grammar, rules, ProcedureSettings(repeat_window=2.0))
    assert [(f.clause, f.code, f.time) for f in of(Finding, cut)] == [("A(3)", "call-not-repeated", 30.0)]


def test_closing_prompts_when_the_caller_is_silent(grammar: Grammar, rules: RulePack) -> None:
    text = (
        GAME
        + "6 caller: B seven\n9 caller: B seven\n15 player: bingo\n"
        + "20 floor: manufacturer one four two serial four seven\n25 floor: B seven\n30 caller: valid bingo\n"
        + "50 tick\n52 caller: are there any other bingos?\n70 tick\n72 caller: this game is completed\n"
    )
    occasion, outputs = run(text, grammar, rules)
    prompts = [(p.time, p.text) for p in of(Prompt, outputs) if p.priority >= 2]
    assert prompts == [(45.0, "Ask: are there any other bingos?"), (67.0, "Announce: this game is completed")]
    assert occasion.all_findings() == []
    assert of(GameClosed, outputs)[0].status == "completed"


def test_completed_without_the_question_prompts_it_at_that_moment(grammar: Grammar, rules: RulePack) -> None:
    """B(9): the caller skips "are there any other bingos?": the assistant asks for it as the game is closed."""
    _, outputs = check_inputs(scenario("b9-not-asked", grammar), rules, grammar)
    closed = of(GameClosed, outputs)[0].time
    asked = [(p.time, p.text, p.clause) for p in of(Prompt, outputs) if p.kind == "ask-other-bingos"]
    assert asked == [(closed, "Ask: are there any other bingos?", "B(9)")]
    _, compliant = check_inputs(scenario("compliant-regular", grammar), rules, grammar)
    assert [p for p in of(Prompt, compliant) if p.kind == "ask-other-bingos"] == []


def test_limited_game_prompts_last_ball_when_it_is_due(grammar: Grammar, rules: RulePack) -> None:
    _, outputs = check_inputs(scenario("compliant-limited", grammar), rules, grammar)
    due = [(p.time, p.text) for p in of(Prompt, outputs) if p.kind == "announce-last-ball"]
    assert due == [(49.0, "Announce: last ball")]  # right after the fourth ball's second saying


def test_missing_announcements_are_prompted_before_the_first_ball(grammar: Grammar, rules: RulePack) -> None:
    text = "@game type=winner-take-all cards_sold=120 prize=300 last_ball_required=no\n0 caller: hello\n20 tick\n"
    _, outputs = run(text, grammar, rules)
    assert [p.text for p in of(Prompt, outputs)] == [
        "Announce: last ball called is not required",
        "Announce: cards sold and the prize",
    ]


def test_step_follows_the_game(grammar: Grammar, rules: RulePack) -> None:
    _, outputs = check_inputs(scenario("compliant-regular", grammar), rules, grammar)
    steps = of(StepChanged, outputs)
    assert [s.step for s in steps] == ["before-first-ball", "calling", "claim", "closing", "before-first-ball"]
    assert all(s.expects == grammar.step_intents(s.step) for s in steps)


def test_board_holds_the_game(grammar: Grammar, rules: RulePack) -> None:
    items = scenario("compliant-invalid-claim", grammar)
    procedure = Procedure(rules, grammar, ProcedureSettings(), lambda _: None)
    for item in items[:11]:  # up to the floor's reading of the false claim
        procedure.feed(item)
    assert procedure.state == "claim" and procedure.step == "claim"
    assert procedure.board.held_ball == Ball(50)
    assert procedure.board.called == [Ball(7), Ball(22)]
    assert procedure.board.last == Ball(22)
    assert procedure.board.game_number == 1
    assert procedure.board.plan is not None and procedure.board.plan.last_ball_required is True


def test_claims_are_recorded(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = check_inputs(scenario("compliant-invalid-claim", grammar), rules, grammar)
    assert [c.held_ball for c in of(ClaimOpened, outputs)] == [Ball(50), None]
    claims = occasion.to_json()["games"][0]["claims"]
    assert [(c["valid"], c["held_ball"], c["not_called"]) for c in claims] == [
        (False, "G50", ["N33"]),
        (True, None, []),
    ]
    prompts = [p.text for p in of(Prompt, outputs) if p.kind == "call-held-ball"]
    assert prompts == ["Call the held ball: G fifty"]


def test_power_outage_records_the_approval(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = check_inputs(scenario("compliant-outage", grammar), rules, grammar)
    assert occasion.to_json()["occasion"]["outages"] == [{"start": 28.0, "game": 1, "approved": 40.0, "restored": 70.0}]
    assert "Ask the players to approve a manual draw" in [p.text for p in of(Prompt, outputs)]


def test_no_game_line_is_one_regular_game_with_a_note(grammar: Grammar, rules: RulePack) -> None:
    occasion, _ = run("0 caller: last ball called is required\n5 caller: B seven\n8 caller: B seven\n", grammar, rules)
    assert len(occasion.games) == 1 and occasion.games[0].plan.type.value == "regular"
    assert occasion.notes == ["game 1: no @game line (hall program) before its first words; followed as a regular game"]
    assert occasion.all_findings() == []


def test_prize_total_of_the_occasion(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = check_inputs(scenario("e2f-cap-exceeded", grammar), rules, grammar)
    assert occasion.prizes_total == 2800.0
    assert [f.code for f in occasion.findings] == ["prize-cap-ahead", "prize-cap-exceeded"]
    assert [p.text for p in of(Prompt, outputs) if p.kind == "prize-cap"] == [
        "Prize limit: this game takes the occasion to 2,800 dollars"
    ]


def _unsure(items: list[Input]) -> list[Input]:
    return [dataclasses.replace(i, uncertain=True, confidence=0.4) if isinstance(i, Utterance) else i for i in items]


@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=[p.stem for p in ALL_SCENARIOS])
def test_unsure_speech_is_never_a_violation_on_its_own(path: Path, grammar: Grammar, rules: RulePack) -> None:
    occasion, _ = check_inputs(_unsure(read_script(path, grammar)), rules, grammar)
    violations = [f for f in occasion.all_findings() if f.severity is Severity.VIOLATION]
    assert violations == []


def test_unsure_first_saying_yields_to_a_sure_repeat(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = run(GAME + "6 caller?: B eight\n9 caller: B seven\n", grammar, rules)
    assert [(f.code, f.severity) for f in occasion.all_findings()] == [("repeat-mismatch", Severity.UNCERTAIN)]
    assert [c.ball for c in of(CallMade, outputs)] == [Ball(8), Ball(7)]
    assert [w.ball for w in of(CallWithdrawn, outputs)] == [Ball(8)]


def test_session_end_closes_what_is_open(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = run(GAME + "6 caller: B seven\n9 caller: B seven\n15 player: bingo\n", grammar, rules)
    assert [(f.clause, f.code, f.severity) for f in occasion.all_findings()] == [
        ("B(8)", "claim-not-resolved", Severity.WARNING)
    ]
    assert of(GameClosed, outputs)[0].status == "claim-unresolved"


def test_json_report_contract(grammar: Grammar, rules: RulePack) -> None:
    occasion, _ = check_inputs(scenario("a3-not-repeated", grammar), rules, grammar)
    report = json.loads(json.dumps(occasion.to_json()))
    game = report["games"][0]
    assert (game["number"], game["type"], game["status"]) == (1, "regular", "completed")
    assert game["calls"] == [{"ball": "B7", "time": 6.0}, {"ball": "N33", "time": 25.0}]
    assert game["findings"] == [
        {
            "clause": "A(3)",
            "code": "call-not-repeated",
            "severity": "violation",
            "time": 25.0,
            "heard": "B seven",
            "message": "B7 was said only once; each call is said twice",
            "doubts": [],
        },
        {
            "clause": "A(2)",
            "code": "next-ball-before-repeat",
            "severity": "warning",
            "time": 25.0,
            "heard": "B seven",
            "message": "N33 was called while B7 was still owed its second saying: was only one ball out at a time?",
            "doubts": [],
        },
    ]
    assert game["review"] == []
    assert report["occasion"]["prizes_total"] == 0
    assert report["occasion"]["review"] == []


def test_clause_table(grammar: Grammar, rules: RulePack) -> None:
    def table(name: str) -> dict[str, str]:
        occasion, _ = check_inputs(scenario(name, grammar), rules, grammar)
        return {row.clause: row.status for row in clause_table(occasion, rules)}

    regular = table("compliant-regular")
    assert regular["A(3)"] == "pass" and regular["B(9)"] == "pass"
    assert regular["A(4)"] == "not-observable" and regular["B(6)"] == "not-observable"
    assert regular["D"] == "not-applicable" and regular["F"] == "not-applicable"
    assert [r.clause for r in clause_table(check_inputs([], rules, grammar)[0], rules)] == [
        c.clause for c in rules.clauses
    ]
    assert table("compliant-board-keys")["A(4)"] == "pass"
    assert table("a3-not-repeated")["A(3)"] == "finding"
    assert table("uncertain-repeat")["A(3)"] == "uncertain"
    assert table("compliant-outage")["F"] == "pass"
    assert table("compliant-limited")["D"] == "pass"


def test_the_rule_pack_is_the_procedure(grammar: Grammar, tmp_path: Path) -> None:
    """Another jurisdiction is another file: drop the A(1) check from the data and the finding goes."""
    data = yaml.safe_load(DEFAULT_RULES.read_text(encoding="utf-8"))
    for t in data["machine"]["transitions"]:
        if t.get("before") == "check_before_first_ball":
            t["before"] = []
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(data), encoding="utf-8")
    items = scenario("a1-not-announced", grammar)
    assert [f.code for f in check_inputs(items, RulePack.load(), grammar)[0].all_findings()] == [
        "last-ball-status-not-announced"
    ]
    assert check_inputs(items, RulePack.load(other), grammar)[0].all_findings() == []


def _broken(tmp_path: Path, change: Any) -> Path:
    data = yaml.safe_load(DEFAULT_RULES.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_rule_pack_errors_are_one_line(grammar: Grammar, tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="cannot read rule pack"):
        RulePack.load(tmp_path / "missing.yaml")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("machine: [\n", encoding="utf-8")
    with pytest.raises(RuleError, match="not valid YAML") as info:
        RulePack.load(bad_yaml)
    assert "\n" not in str(info.value)
    with pytest.raises(RuleError, match="malformed rule pack"):
        RulePack.load(_broken(tmp_path, lambda d: d.pop("findings")))
    with pytest.raises(RuleError, match="states without a grammar step"):
        RulePack.load(_broken(tmp_path, lambda d: d["steps"].pop("claim")))
    with pytest.raises(RuleError, match="names unknown states"):
        RulePack.load(_broken(tmp_path, lambda d: d["machine"]["transitions"][0].update(dest="limbo")))
    renamed = RulePack.load(_broken(tmp_path, lambda d: d["machine"]["transitions"][0].update(after="open_gaem")))
    with pytest.raises(RuleError, match=r"names unknown checks \['open_gaem'\]"):
        Procedure(renamed, grammar, ProcedureSettings(), lambda _: None)
    with pytest.raises(RuleError, match=r"game-not-completed: owed by unknown roles \['board'\]"):
        RulePack.load(_broken(tmp_path, lambda d: d["findings"]["game-not-completed"].update(owed="board")))
    wrong_step = RulePack.load(_broken(tmp_path, lambda d: d["steps"].update(claim="verifying")))
    with pytest.raises(RuleError, match="unknown grammar step 'verifying'"):
        Procedure(wrong_step, grammar, ProcedureSettings(), lambda _: None)


def test_absence_findings_name_who_owed_the_words(rules: RulePack) -> None:
    owed = {code: spec.owed for code, spec in rules.findings.items() if spec.owed}
    assert owed["game-not-completed"] == ("caller",)
    assert owed["card-id-not-read"] == ("floor",)
    assert all(
        code.endswith(
            (
                "-not-announced",
                "-not-read",
                "-not-asked",
                "-not-completed",
                "-not-repeated",
                "-missing",
                "-not-corrected",
                "-not-resolved",
                "-before-repeat",
                "-uncalled-numbers",
                "-without-approval",
                "-incomplete",
                "-paraphrased",  # the rule's quoted words are what is missing
                "-after-valid-claim",  # a call, where the words closing the game or opening the next are missing
            )
        )
        for code in owed
    )
    assert "call-during-claim" not in owed and "ball-recalled" not in owed  # presences, not absences


def test_every_finding_cites_a_clause_of_the_rule(rules: RulePack) -> None:
    clauses = {"A(1)", "A(2)", "A(3)", "A(5)", "A(6)", "B(1)", "B(3)", "B(4)", "B(5)", "B(7)", "B(8)", "B(9)"}
    clauses |= {"C", "D", "E(1)", "E(2)(f)", "F"}
    assert {spec.clause for spec in rules.findings.values()} == clauses
    text = (Path(__file__).parent.parent / "config" / "rules" / "nm-15.4.7.11.yaml").read_text(encoding="utf-8")
    assert "N.M. Admin. Code § 15.4.7.11" in text


def test_low_confidence_counts_as_unsure(grammar: Grammar, rules: RulePack) -> None:
    """A(5) nuance: a differing repeat heard with low confidence is a mis-hearing, not a mis-call."""
    text = GAME + "6 caller: B seven\n9 caller(0.3): B eight\n18 caller: N thirty three\n21 caller: N thirty three\n"
    occasion, _ = run(text, grammar, rules)
    assert [(f.code, f.severity) for f in occasion.all_findings()] == [("repeat-mismatch", Severity.UNCERTAIN)]
    occasion, _ = run(text, grammar, rules, ProcedureSettings(min_confidence=0.2))
    assert [(f.code, f.severity) for f in occasion.all_findings()] == [("miscall-not-corrected", Severity.VIOLATION)]


def test_each_state_listens_for_what_can_move_it(grammar: Grammar, rules: RulePack) -> None:
    """Live, the recognizer hears only the state's grammar step: every intent a state reacts to must be in it."""
    missing = {}
    for spec in rules.transitions:
        if spec.trigger not in grammar.intents:
            continue
        for state in rules.states if spec.sources == ("*",) else spec.sources:
            if spec.trigger not in grammar.steps[rules.steps[state]]:
                missing.setdefault(state, set()).add(spec.trigger)
    assert missing == {}


def test_first_ball_during_an_outage_is_still_checked(grammar: Grammar, rules: RulePack) -> None:
    text = (
        "@game type=limited balls=5 last_ball_required=yes\n"
        "0 caller: power outage\n8 caller: B seven\n11 caller: B seven\n"
    )
    occasion, _ = run(text, grammar, rules)
    assert [(f.clause, f.code) for f in occasion.all_findings()] == [
        ("F", "manual-draw-without-approval"),
        ("A(1)", "last-ball-status-not-announced"),
        ("D", "ball-count-not-announced"),
    ]


def test_each_check_of_the_rule_pack_lives_in_one_part_of_the_rule(grammar: Grammar, rules: RulePack) -> None:
    """The machine's callbacks and conditions are the parts' named checks, each given by exactly one part; every
    part of the rule is a component of its own module, composed by `Conduct` over one explicit state."""
    conduct = Conduct(rules, grammar, ProcedureSettings(), lambda _: None)
    parts = conduct.parts
    assert {type(part).__module__.rsplit(".", 1)[1] for part in parts} >= {
        "announcing",
        "calling",
        "correction",
        "outage",
        "claim",
        "closing",
        "occasion",
        "core",
    }
    assert all(part.state is conduct.state for part in parts)  # type: ignore[attr-defined]
    names = {n for spec in rules.transitions for n in spec.conditions + spec.callbacks}
    owners = {name: [type(p).__name__ for p in parts if name in named_checks(p)] for name in names}
    assert {name: found for name, found in owners.items() if len(found) != 1} == {}
    # every window a part opens is spoken for, when it closes, by the part that marks it `@expires`
    opened = {"announce", "repeat", "miscall", "correction-call", "bingo-unsure", "ask-other", "announce-completed"}
    assert set(conduct.windows.handlers) == opened


def test_an_uncertain_finding_names_the_hearings_that_made_it_so(grammar: Grammar, rules: RulePack) -> None:
    """The rule of evidence, once for every clause: the doubts of a finding are the unsure hearings it rests on,
    or the unsure speech of whoever owed the missing words, inside the window where they were owed."""
    occasion, _ = run(
        GAME + "6 caller?: B seven\n9 caller: N thirty three\n12 caller: N thirty three\n", grammar, rules
    )
    rests = [f for f in occasion.all_findings() if f.code == "repeat-mismatch"]
    assert rests and all(f.severity is Severity.UNCERTAIN for f in rests)
    assert [(d.time, d.heard) for d in rests[0].doubts] == [(6.0, "B seven")]
    occasion, _ = run(GAME + "6 caller: B seven\n8 caller?: mumble\n20 caller: N thirty three\n", grammar, rules)
    absent = next(f for f in occasion.all_findings() if f.code == "call-not-repeated")
    assert absent.severity is Severity.UNCERTAIN
    assert [(d.time, d.role.value, d.why.startswith("the words owed")) for d in absent.doubts] == [
        (8.0, "caller", True)
    ]
    as_json = json.loads(json.dumps(absent.to_json()))
    assert as_json["doubts"][0]["time"] == 8.0 and as_json["doubts"][0]["role"] == "caller"


def test_a_correct_call_of_a_ball_on_the_board_only_by_a_guess_is_no_ball_recalled(
    grammar: Grammar, rules: RulePack
) -> None:
    """Hall audio at 10 dB: "G fifty" said twice, its first saying heard unsure as "g fifty five"; the
    correction's "G fifty five", heard sure, is no ball returned to the blower (A(6)): G 55 was on the board only by
    that guess. The guess leaves the board, the correct call takes its place and is said twice: compliant. Heard
    sure the first time, the same call again is A(6)."""
    said = (
        "6 caller: B seven\n9 caller: B seven\n18 caller?: G fifty five\n21 caller?: G fifty\n30 caller: N thirty"
        " three\n33 caller: N thirty three\n38 caller: an error has been made, I am reading the correct number,"
        " please correct your card\n44 caller: G fifty five\n47 caller: G fifty five\n57 caller: O seventy one\n"
        "60 caller: O seventy one\n"
    )
    occasion, outputs = run(GAME + said, grammar, rules)
    sure = [f for f in occasion.all_findings() if f.severity is not Severity.UNCERTAIN]
    assert sure == []
    assert Ball(55) in {w.ball for w in of(CallWithdrawn, outputs)}
    occasion, _ = run(GAME + said.replace("18 caller?:", "18 caller:"), grammar, rules)
    assert ("ball-recalled", Severity.VIOLATION) in [(f.code, f.severity) for f in occasion.all_findings()]
