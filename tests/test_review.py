"""Speech the procedure cannot place is kept for review: in the record, the JSON report, the text and the HTML."""

from __future__ import annotations

import json
from pathlib import Path

from assistant.grammar import Grammar
from assistant.messages import HeardForReview, Output, Role, Severity
from assistant.procedure import Procedure, ProcedureSettings, RulePack, check_inputs
from assistant.report import render_html, render_json, render_text
from assistant.script import parse_script
from assistant.store import Journal, Store, occasion_record, rebuild_record

SESSION = """\
0:00 caller: good evening everybody
@game type=regular last_ball_required=yes
0:02 caller: last ball called is required
0:06 caller: B seven
0:09 caller: B seven
0:12 caller: whoa, hold on a second
0:18 caller?: hmm
0:20 caller: sorry, G fifty
0:23 caller: G fifty
0:30 player: what number was that
0:34 player: B thirty two
0:40 caller: this game is completed
0:44 floor: B thirty two
"""


def test_caller_speech_the_grammar_cannot_place_is_kept_not_dropped(grammar: Grammar, rules: RulePack) -> None:
    occasion, outputs = check_inputs(parse_script(SESSION, grammar), rules, grammar)
    kept = [o for o in outputs if isinstance(o, HeardForReview)]
    assert [(r.game, r.time, r.role, r.heard, r.reason, r.unsure) for r in kept] == [
        (
            None,
            0.0,
            Role.CALLER,
            "good evening everybody",
            "words the grammar cannot place: good evening everybody",
            False,
        ),
        (
            1,
            12.0,
            Role.CALLER,
            "whoa, hold on a second",
            "words the grammar cannot place: whoa hold on a second",
            False,
        ),
        (1, 18.0, Role.CALLER, "hmm", "words the grammar cannot place: hmm", True),
        (1, 20.0, Role.CALLER, "sorry, G fifty", "words the grammar cannot place: sorry", False),
        (None, 44.0, Role.FLOOR, "B thirty two", "'b thirty two' names no ball (32 is under N)", False),
    ]  # players' talk is not the staff's: not listed
    assert occasion.games[0].review == kept[1:4] and occasion.review == [kept[0], kept[4]]
    assert occasion.all_findings() == []  # for review, never a finding on its own
    assert [c.ball.number for c in occasion.games[0].calls] == [7, 50]  # the placed words still count


def test_the_reports_list_it(grammar: Grammar, rules: RulePack) -> None:
    occasion, _ = check_inputs(parse_script(SESSION, grammar), rules, grammar)
    report = json.loads(render_json(occasion))
    assert [r["heard"] for r in report["games"][0]["review"]] == ["whoa, hold on a second", "hmm", "sorry, G fifty"]
    assert report["games"][0]["review"][1] == {
        "time": 18.0,
        "role": "caller",
        "heard": "hmm",
        "reason": "words the grammar cannot place: hmm",
        "unsure": True,
    }
    assert [r["heard"] for r in report["occasion"]["review"]] == ["good evening everybody", "B thirty two"]
    text = render_text(occasion)
    assert '  00:12.0  for review caller: "whoa, hold on a second": words the grammar cannot place' in text
    assert "5 heard for review (speech the procedure could not place; not findings)." in text
    assert text.rstrip().endswith("Compliant: no findings.")


def test_the_record_keeps_it_and_rebuilds_it(grammar: Grammar, rules: RulePack, tmp_path: Path) -> None:
    db = tmp_path / "hall.db"
    with Store.open(db) as store:
        occasion_id = store.start_occasion(source="review")
        journal = Journal(store, occasion_id)
        outputs: list[Output] = []
        procedure = Procedure(rules, grammar, ProcedureSettings(), journal.forward(outputs.append))
        for item in parse_script(SESSION, grammar):
            journal.input(item)
            procedure.feed(item)
        rebuilt = rebuild_record(store, occasion_id)  # before closing: from the recorded outputs
        assert [r.heard for r in rebuilt.all_review()] == [r.heard for r in procedure.occasion.all_review()]
        store.close_occasion(occasion_id, record=procedure.occasion)
        final = occasion_record(store, occasion_id)
        assert final.all_review() == procedure.occasion.all_review()
        html = render_html(store, occasion_id)
    assert "<h2>Speech for review</h2>" in html and "whoa, hold on a second" in html and "heard unsure" in html
    assert all(f.severity is not Severity.VIOLATION for f in final.all_findings())
