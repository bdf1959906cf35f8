"""The console page in headless Chromium against the real server on loopback, the real procedure and store.

Needs Debian `chromium` and the `playwright` package (never `playwright install`: the browser is the system one).
Without them the tests skip with the reason shown; set BINGO_REQUIRE_BROWSER=1 (CI) to make that a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from console_desk import Desk, desk_factory, run_console
from rigs import browser_tests, chromium
from screens import contrasts, low_contrast, screenshot

from assistant.console import ConsoleHub, store_winners
from assistant.grammar import Grammar
from assistant.messages import Input, Role
from assistant.script import parse_script
from assistant.store import Store

GRAMMAR = Grammar.load()
WAIT_MS = 10_000


pytestmark = [browser_tests(), pytest.mark.browser]

GAME = """\
@game type=limited balls=50 last_ball_required=yes prize=300 pattern="Letter X"
1 caller: last ball called is required
3 caller: this is a fifty ball game
6 caller: B seven
8 caller: B seven
12 caller: I twenty two
14 caller: I twenty two
18 caller: N thirty three
20 caller: N thirty three
24 caller: G fifty
26 caller: G fifty
30 caller: O seventy one
32 caller: O seventy one
"""

CLAIM = """\
35 player: bingo
38 floor: manufacturer one four two serial number four seven two nine one
42 floor: B seven, I twenty two, N thirty three, G fifty, O seventy two
"""


@dataclass
class Hall:
    hub: ConsoleHub
    desk: Desk
    db: Path
    url: str


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[Hall]:
    made: list[Desk] = []
    db = tmp_path / "hall.db"

    hub = ConsoleHub(
        procedure_factory=desk_factory(db, made, GRAMMAR, "console-browser-test"), grammar=GRAMMAR, clock=lambda: 0.0
    )
    desk = made[0]
    hub.winner_sink = store_winners(desk.journal.store, desk.journal.occasion)
    running = run_console(hub)
    yield Hall(hub, desk, db, running.url)
    running.stop()
    hub.on_desk(desk.journal.store.close)
    hub.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert errors == [], f"the page raised: {errors}"


def open_live(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_function("document.getElementById('connection').textContent === 'live'", timeout=WAIT_MS)


def text_is(page: Any, selector: str, expected: str) -> None:
    page.wait_for_function(
        "([s, e]) => document.querySelector(s) && document.querySelector(s).textContent.trim() === e",
        arg=[selector, expected],
        timeout=WAIT_MS,
    )


def text_has(page: Any, selector: str, expected: str) -> None:
    page.wait_for_function(
        "([s, e]) => document.querySelector(s) && document.querySelector(s).textContent.includes(e)",
        arg=[selector, expected],
        timeout=WAIT_MS,
    )


def play(hall: Hall, script: str, each: Callable[[Input], None] | None = None) -> None:
    for item in parse_script(script, GRAMMAR):
        hall.hub.feed(item)
        if each is not None:
            each(item)


def test_a_scripted_game_advances_the_board(hall: Hall, page: Any, browser: Any) -> None:
    open_live(page, hall.url)
    flash = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        open_live_flash(flash, hall.url)
        seen: list[str] = []

        def after(item: Input) -> None:
            called = [str(b) for b in hall.desk.procedure.board.called]
            if called and called[-1] not in seen:
                seen.append(called[-1])
                text_is(page, "#current", called[-1])
                text_is(page, "#count", str(len(called)))
                text_is(flash, "#flash-current", called[-1])

        play(hall, GAME, after)
        assert seen == ["B7", "I22", "N33", "G50", "O71"]
        lit = page.eval_on_selector_all("#board td.lit", "cells => cells.map(c => c.dataset.ball)")
        assert sorted(lit) == sorted(seen)
        assert page.get_attribute("#ball-O71", "aria-label") == "O 71, called"
        assert page.get_attribute("#ball-O72", "aria-label") == "O 72, not called"
        assert page.text_content("#remaining") == "45"
        assert page.text_content("#game-type") == "Limited, 50 balls"
        assert page.text_content("#game-pattern") == "Letter X"
        assert page.text_content("#game-prize") == "$300"
        assert page.text_content("#game-last-ball") == "required (announced)"
        text_is(page, "#announce-calls", "O 71")
        assert page.text_content("#announce-alerts") == ""
        assert page.text_content("#finding-count") == "0"
        assert flash.eval_on_selector_all("#flash-board td.lit", "cs => cs.map(c => c.dataset.ball)") == lit
        screenshot(flash, hall.db.parent, "flashboard.png")
    finally:
        flash.close()


def open_live_flash(flash: Any, url: str) -> None:
    flash.goto(url + "/flashboard")
    flash.wait_for_function("document.body.dataset.version !== undefined", timeout=WAIT_MS)


def test_a_keyed_ball_that_differs_from_the_call_shows_the_finding(hall: Hall, page: Any) -> None:
    head, tail = GAME.split("30 caller: O seventy one\n", 1)
    play(hall, head)
    open_live(page, hall.url)
    text_is(page, "#current", "G50")
    page.keyboard.press("k")  # keyboard only: K jumps to the key field
    assert page.evaluate("document.activeElement.id") == "key-ball"
    page.keyboard.type("O72")  # the operator keys the drawn ball ...
    page.keyboard.press("Enter")
    text_is(page, "#operator-status", "Keyed O72")
    text_has(page, "#heard", "board: O72")
    play(hall, "30 caller: O seventy one\n" + tail)  # ... and the caller calls another
    page.wait_for_selector("#findings li.finding.violation", timeout=WAIT_MS)
    finding = page.text_content("#findings li.finding.violation") or ""
    assert "A(5)" in finding and "O72" in finding and "O seventy one" in finding
    text_has(page, "#announce-alerts", "Violation A(5)")
    assert page.get_attribute("#announce-alerts", "aria-live") == "assertive"
    assert page.get_attribute("#announce-calls", "aria-live") == "polite"
    findings = hall.desk.procedure.occasion.all_findings()
    assert [(f.clause, f.code) for f in findings] == [("A(5)", "call-differs-from-board")]
    assert page.text_content("#finding-count") == "1"


def test_the_claim_panel_and_the_verdict(hall: Hall, page: Any) -> None:
    head, tail = GAME.split("30 caller: O seventy one\n", 1)
    play(hall, head)
    open_live(page, hall.url)
    page.fill("#key-ball", "O72")  # the board shows O72 and the caller calls O71: A(5)
    page.click("#key-submit")
    text_is(page, "#operator-status", "Keyed O72")
    text_has(page, "#heard", "board: O72")
    play(hall, "30 caller: O seventy one\n" + tail + CLAIM)
    page.wait_for_selector("#findings li.finding.violation", timeout=WAIT_MS)
    text_is(page, "#claim-manufacturer", "142")
    text_is(page, "#claim-serial", "47291")
    text_is(page, "#game-status", "BINGO - checking the card")
    page.wait_for_function("document.querySelectorAll('#claim-winning li').length === 5", timeout=WAIT_MS)
    marks = page.eval_on_selector_all("#claim-winning li", "items => items.map(i => i.textContent)")
    assert marks == ["B7 ✓ called", "I22 ✓ called", "N33 ✓ called", "G50 ✓ called", "O72 ✗ NOT CALLED"]
    text_has(page, "#prompts", "Not called: O seventy two")
    screenshot(page, hall.db.parent, "console.png", full_page=True)
    page.focus("#claim-not-valid")
    page.keyboard.press("Enter")
    text_is(page, "#claim-result", "not a valid bingo")
    assert page.is_disabled("#claim-valid")
    claim = hall.desk.procedure.occasion.games[-1].claims[-1]
    assert claim.valid is False
    assert [str(b) for b in claim.not_called] == ["O72"]


def test_the_next_game_and_its_winner_from_the_forms(hall: Hall, page: Any) -> None:
    play(hall, GAME)
    open_live(page, hall.url)
    page.select_option("#game-form-type", "winner-take-all")
    page.fill("#game-form input[name=cards_sold]", "120")
    page.fill("#game-form input[name=prize]", "700")
    page.click("#game-submit")
    text_is(page, "#game-number", "2")
    text_is(page, "#current", "none")
    assert page.is_visible("#winner-required")
    hall.hub.feed(GRAMMAR.utterance(60, 61, Role.CALLER, "one hundred twenty cards sold"))
    page.fill("#winner-form input[name=name]", "Ann Lee")
    page.fill("#winner-form input[name=contact]", "505-555-0101")
    page.fill("#winner-form input[name=prize]", "700")
    page.fill("#winner-form input[name=tax_document]", "W-2G 0042")  # $600 or more: E(2)(d)
    page.click("#winner-submit")
    text_has(page, "#winners", "Ann Lee, 505-555-0101, $700")
    with Store.open(hall.db, readonly=True) as store:
        occasion = store.latest_occasion()
        assert occasion is not None
        assert [(w.game, w.name) for w in store.winners(occasion)] == [(2, "Ann Lee")]
    page.fill("#key-ball", "Q9")
    page.click("#key-submit")
    text_has(page, "#operator-status", "not a ball")


def test_the_page_reads_in_high_contrast_and_large_type(hall: Hall, page: Any) -> None:
    head = GAME.split("30 caller: O seventy one\n", 1)[0]
    play(hall, head)
    open_live(page, hall.url)
    page.fill("#key-ball", "O72")
    page.click("#key-submit")
    text_is(page, "#operator-status", "Keyed O72")
    play(hall, "30 caller: O seventy one\n")
    page.wait_for_selector("#findings li.finding.violation", timeout=WAIT_MS)
    aaa = "#current, #ball-B7, #game-type, #findings li.violation, #count"
    assert len(contrasts(page, aaa)) == 5
    assert low_contrast(page, 7.0, aaa) == []  # WCAG AAA
    assert low_contrast(page) == []  # WCAG AA for all the rest, the quieter text too (tests/screens.py)
    size = page.eval_on_selector("body", "el => parseFloat(getComputedStyle(el).fontSize)")
    current = page.eval_on_selector("#current", "el => parseFloat(getComputedStyle(el).fontSize)")
    assert size >= 20 and current >= 80
