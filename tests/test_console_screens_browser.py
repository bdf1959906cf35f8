"""The hall's screens as a hall uses them, in headless Chromium against the real server, procedure and store: the
players' flashboard and the master board in each state of a game (calling, a claim being checked, a claim ruled not
valid, a claim ruled valid, the game completed) on a 16:9 screen (1920x1080), a 4:3 screen (1024x768) and a floor
tablet upright (768x1024), measured from the page's boxes: no number leaves its cell, no cells overlap, and every
visible text and link reads at WCAG AA contrast (4.5:1) against its effective background. The login page and the
records read at AA too, and an empty table says so.

Screenshots of each state and size go to the test's folder, and into docs/screenshots with BINGO_SCREENSHOTS=1.
Needs Debian `chromium` and the `playwright` package, as tests/test_console_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_desk import USERS, HallWithLogins, hall_with_logins
from rigs import browser_tests, chromium
from screens import SCREENS, low_contrast, overflowing, overlapping, screenshot, scrolls_sideways

from assistant.grammar import Grammar
from assistant.script import parse_script

GRAMMAR = Grammar.load()
WAIT_MS = 10_000

pytestmark = [browser_tests(), pytest.mark.browser]

GAME = """\
@game type=limited balls=50 last_ball_required=yes prize=300 pattern="Letter X"
1 caller: last ball called is required
3 caller: this is a fifty ball game
6 caller: B seven
12 caller: I twenty two
14 caller: I twenty two
16 caller: the kitchen is open
18 caller: N thirty three
20 caller: N thirty three
24 caller: G fifty
26 caller: G fifty
28 board: O72
30 caller: O seventy one
32 caller: O seventy one
"""
"""A game with findings of each weight: B seven said once (A(3) violation) with I twenty two called before its
repeat (A(2) warning) at 0:12, words the grammar cannot place (for review) at 0:16, and O72 keyed while the
caller calls O71 (A(5) violation) at 0:30."""

STATES = [
    ("calling", GAME, "calling", "Calling"),
    (
        "checking",
        """\
35 player: bingo
38 floor: manufacturer one four two serial number four seven two nine one
42 floor: B seven, I twenty two, N thirty three, G fifty, O seventy two
""",
        "checking",
        "BINGO - checking the card",
    ),
    ("not-valid", "45 caller: not a valid bingo\n", "not-valid", "Not a valid bingo - play continues"),
    (
        "valid",
        """\
48 caller: O seventy two
50 caller: O seventy two
55 player: bingo
57 floor: manufacturer one four two serial number four seven two nine one
60 floor: B seven, I twenty two, N thirty three, G fifty, O seventy two
63 caller: valid bingo
""",
        "valid",
        "Valid bingo",
    ),
    (
        "completed",
        "65 caller: are there any other bingos\n68 caller: this game is completed\n",
        "closed",
        "Game 1 completed",
    ),
]
"""Each state of the game: its name, the script that brings it about after the one before, and the status both
screens show (its phase, and its words)."""

FLASH_CELLS = "#flash-board td, #flash-board th"
FLASH_PARTS = "#flash-current, .flash-info, #flash-status, #flash-board, #flash-last li"
BOARD_CELLS = "#board td, #board th"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[HallWithLogins]:
    made = hall_with_logins(tmp_path / "hall.db", GRAMMAR)
    yield made
    made.close()


@pytest.fixture
def machine(browser: Any) -> Iterator[Any]:
    """A browser context of its own (its own cookies); its pages may raise nothing."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    errors: list[str] = []
    context.on("page", lambda page: page.on("pageerror", lambda exc: errors.append(str(exc))))
    yield context
    context.close()
    assert errors == [], f"a page raised: {errors}"


def play(hall: HallWithLogins, script: str) -> None:
    for item in parse_script(script, GRAMMAR):
        hall.hub.feed(item)


def text_is(page: Any, selector: str, expected: str) -> None:
    page.wait_for_function(
        "([s, e]) => document.querySelector(s) && document.querySelector(s).textContent.trim() === e",
        arg=[selector, expected],
        timeout=WAIT_MS,
    )


def settle(page: Any, hall: HallWithLogins) -> None:
    """Wait until the page shows the hub's state as it is now."""
    version = hall.hub.snapshot()["version"]
    page.wait_for_function("v => Number(document.body.dataset.version) >= v", arg=version, timeout=WAIT_MS)


def shows(page: Any, selector: str, expected: str) -> list[str]:
    """The element's text is `expected`; else the problem, in words."""
    text = page.evaluate("s => { const e = document.querySelector(s); return e && e.textContent.trim(); }", selector)
    return [] if text == expected else [f"{selector} shows {text!r}, not {expected!r}"]


def log_in(context: Any, url: str, name: str, path: str = "/") -> Any:
    page = context.new_page()
    page.goto(url + "/login?next=" + path)
    page.fill("#login-name", name)
    page.fill("#login-password", USERS[name][1])
    page.click("#login-submit")
    page.wait_for_url(url + path, timeout=WAIT_MS)
    return page


def on_each_screen(page: Any, folder: Path, name: str, measure: Any) -> list[str]:
    """Measure the page at each screen size (and take its picture there): the problems, each named with its size."""
    problems: list[str] = []
    for size, (width, height) in SCREENS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        problems += [f"{size}: {p}" for p in measure(page)]
        screenshot(page, folder, f"{name}-{size}.png")
    return problems


def flashboard_problems(page: Any) -> list[str]:
    problems = overflowing(page, ".flash-screen *") + overlapping(page, FLASH_CELLS) + overlapping(page, FLASH_PARTS)
    problems += scrolls_sideways(page) + low_contrast(page)
    taller = page.evaluate("document.documentElement.scrollHeight - innerHeight")
    if taller > 0:
        problems.append(f"the flashboard is {taller} px taller than the screen")
    return problems


def master_board_problems(page: Any) -> list[str]:
    return overflowing(page, "body *") + overlapping(page, BOARD_CELLS) + scrolls_sideways(page) + low_contrast(page)


def test_the_flashboard_in_each_state_on_each_screen(hall: HallWithLogins, machine: Any, tmp_path: Path) -> None:
    flash = machine.new_page()
    flash.goto(hall.url + "/flashboard")
    settle(flash, hall)
    problems = shows(flash, "#flash-status", "Waiting for the first game")
    problems += on_each_screen(flash, tmp_path, "flashboard-waiting", flashboard_problems)
    for state, script, phase, status in STATES:
        play(hall, script)
        settle(flash, hall)
        problems += [f"{state}: {p}" for p in shows(flash, "#flash-status", status)]
        problems += [f"{state}: {p}" for p in shows(flash, f"#flash-status[data-phase={phase}]", status)]
        problems += [
            f"{state}: {p}" for p in on_each_screen(flash, tmp_path, f"flashboard-{state}", flashboard_problems)
        ]
        if state == "calling":  # the game as the players see it: number, pattern, prize, count, last five balls
            shown = {"#flash-current": "O71", "#flash-game": "Game 1", "#flash-pattern": "Letter X"}
            shown |= {"#flash-prize": "Prize $300", "#flash-count": "5", "#flash-last": "O71G50N33I22B7"}
            problems += [p for selector, text in shown.items() for p in shows(flash, selector, text)]
    assert problems == [], "\n".join(problems)
    assert flash.text_content("#flash-current") == "O72"  # the completed game's board stays up
    assert flash.text_content("#flash-count") == "6"
    # the players' screen is told that a card is checked and how it was ruled, never the card nor the findings
    public = flash.text_content("body") or ""
    assert "47291" not in public and "A(5)" not in public


def test_the_master_board_in_each_state_on_each_screen(hall: HallWithLogins, machine: Any, tmp_path: Path) -> None:
    page = log_in(machine, hall.url, "carol")
    page.wait_for_function("document.getElementById('connection').textContent === 'live'", timeout=WAIT_MS)
    settle(page, hall)
    problems = shows(page, "#game-status", "Waiting for the first game")
    problems += on_each_screen(page, tmp_path, "master-board-waiting", master_board_problems)
    for state, script, _, status in STATES:
        play(hall, script)
        settle(page, hall)
        # one source for the game's status: the header never says the game is over beside a step of play
        problems += [f"{state}: {p}" for p in shows(page, "#game-status", status) + shows(page, "#game-number", "1")]
        problems += [
            f"{state}: {p}" for p in on_each_screen(page, tmp_path, f"master-board-{state}", master_board_problems)
        ]
    assert problems == [], "\n".join(problems)


def test_the_master_boards_header_shows_the_status_and_the_announcement_as_heard(
    hall: HallWithLogins, machine: Any
) -> None:
    page = log_in(machine, hall.url, "carol")
    page.wait_for_function("document.getElementById('connection').textContent === 'live'", timeout=WAIT_MS)
    # no @game line: the caller's own words open the game, and the announcement is among them
    play(hall, "1 caller: last ball called is not required\n4 caller: B seven\n6 caller: B seven\n")
    text_is(page, "#game-status", "Calling")
    text_is(page, "#game-last-ball", "not required (announced)")
    play(hall, "9 caller: this game is completed\n")
    text_is(page, "#game-status", "Game 1 completed")
    assert page.text_content("#game-number") == "1"
    assert (page.text_content("header") or "").count("completed") == 1  # not "Game 1 (completed)" beside it
    # a program that says one thing and a caller who announces another: both shown, the caller's as heard
    play(hall, "@game type=regular last_ball_required=yes\n12 caller: last ball called is not required\n")
    text_is(page, "#game-number", "2")
    text_is(page, "#game-last-ball", "not required (announced; the program says required)")
    text_is(page, "#game-status", "Before the first ball")


def test_findings_are_listed_by_weight_then_time_and_the_key_field_looks_empty(
    hall: HallWithLogins, machine: Any
) -> None:
    page = log_in(machine, hall.url, "carol")
    page.wait_for_function("document.getElementById('connection').textContent === 'live'", timeout=WAIT_MS)
    assert page.text_content("#findings") == "No findings yet"
    key = page.locator("#key-ball")
    assert key.input_value() == "" and key.get_attribute("placeholder") in (None, "")
    hint = page.text_content("#key-hint") or ""
    assert page.is_visible("#key-hint") and "B7" in hint, hint  # the example is a hint beside it, not in it
    play(hall, GAME)
    page.wait_for_function("document.querySelectorAll('#findings li.finding').length === 4", timeout=WAIT_MS)
    listed = page.eval_on_selector_all("#findings li strong", "items => items.map(i => i.textContent)")
    assert listed == ["VIOLATION A(3)", "VIOLATION A(5)", "WARNING A(2)", "FOR REVIEW"]
    assert page.text_content("#finding-count") == "3"  # speech for review is listed, and is no finding


def test_the_login_page_and_the_records_read_in_aa_contrast(hall: HallWithLogins, machine: Any, tmp_path: Path) -> None:
    login = machine.new_page()
    login.goto(hall.url + "/login")
    problems = on_each_screen(login, tmp_path, "login", lambda p: low_contrast(p) + scrolls_sideways(p))
    login.fill("#login-name", "carol")  # a refused login: its message, and its row in the records (in red)
    login.fill("#login-password", "not-her-password")
    login.click("#login-submit")
    login.wait_for_function("document.getElementById('login-status').textContent !== ''", timeout=WAIT_MS)
    problems += [f"refused: {p}" for p in low_contrast(login)]
    records = log_in(machine, hall.url, "ines", "/records")
    records.wait_for_function("document.getElementById('verify').textContent.startsWith('chain intact')")
    records.wait_for_function("document.querySelectorAll('#access tr').length >= 1", timeout=WAIT_MS)
    records.wait_for_selector("#access tr.refused", timeout=WAIT_MS)
    problems += on_each_screen(records, tmp_path, "records", low_contrast)
    records.click("text=Master board")  # the inspector's master board: its link back to the records in the header
    records.wait_for_function("document.getElementById('connection').textContent === 'live'", timeout=WAIT_MS)
    records.wait_for_selector("#records-link", state="visible", timeout=WAIT_MS)
    problems += [f"the inspector's master board: {p}" for p in low_contrast(records)]
    assert problems == [], "\n".join(problems)


def test_an_empty_access_table_says_so(tmp_path: Path, machine: Any) -> None:
    hall = hall_with_logins(tmp_path / "hall.db", GRAMMAR, users=False, loopback=True)
    try:
        page = machine.new_page()
        page.goto(hall.url + "/records")
        page.wait_for_function("document.getElementById('verify').textContent.startsWith('chain intact')")
        text_is(page, "#access", "No entries yet")
        assert low_contrast(page) == []
    finally:
        hall.close()
