"""Roles and logins in headless Chromium: each role logs in on its own "machine" (a browser context of its own)
against the real server, sees and can do only its part; a public flashboard on another machine follows the game
live; an expired session goes back to the login page; a forged or replayed action is refused and recorded.

Needs Debian `chromium` and the `playwright` package, as tests/test_console_browser.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_desk import USERS, HallWithLogins, hall_with_logins
from rigs import browser_tests, chromium

from assistant.grammar import Grammar
from assistant.messages import BoardKey
from assistant.script import parse_script
from assistant.store import Store

GRAMMAR = Grammar.load()
WAIT_MS = 10_000

pytestmark = [browser_tests(), pytest.mark.browser]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[HallWithLogins]:
    made = hall_with_logins(tmp_path / "hall.db", GRAMMAR)
    yield made
    made.close()


@pytest.fixture
def machines(browser: Any) -> Iterator[list[Any]]:
    """Browser contexts, each a machine of its own (its own cookies); the pages may raise nothing."""
    made: list[Any] = []
    errors: list[str] = []

    def machine() -> Any:
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        context.on("page", lambda page: page.on("pageerror", lambda exc: errors.append(str(exc))))
        made.append(context)
        return context

    yield [machine() for _ in range(4)]
    for context in made:
        context.close()
    assert errors == [], f"a page raised: {errors}"


def log_in(context: Any, url: str, name: str) -> Any:
    """Open the master board, be sent to the login, log in with the form, and land on the live board."""
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_url(url + "/login?next=/", timeout=WAIT_MS)
    page.fill("#login-name", name)
    page.fill("#login-password", USERS[name][1])
    page.click("#login-submit")
    page.wait_for_url(url + "/", timeout=WAIT_MS)
    page.wait_for_function("document.getElementById('connection').textContent === 'live'", timeout=WAIT_MS)
    return page


def text_is(page: Any, selector: str, expected: str) -> None:
    page.wait_for_function(
        "([s, e]) => document.querySelector(s) && document.querySelector(s).textContent.trim() === e",
        arg=[selector, expected],
        timeout=WAIT_MS,
    )


def visible(page: Any, *ids: str) -> list[bool]:
    return [page.is_visible("#" + i) for i in ids]


PARTS = ("key-form", "game-form", "claim-actions", "winner-form", "records-link", "logout")


def post_from(page: Any, path: str, body: object, csrf: str | None = None, action_id: str | None = None) -> Any:
    """An action sent by script from inside the page, as a forger or a replayer would: [status, answer]."""
    return page.evaluate(
        """async ([path, body, csrf, id]) => {
            const me = await (await fetch("/api/me")).json();
            const response = await fetch(path, {
              method: "POST",
              headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf === null ? me.csrf : csrf,
                        "X-Action-Id": id === null ? Board.token() : id},
              body: JSON.stringify(body),
            });
            return [response.status, await response.json()];
        }""",
        [path, body, csrf, action_id],
    )


def keyed(db: Path) -> list[str]:
    with Store.open(db, readonly=True) as store:
        occasion = store.latest_occasion()
        assert occasion is not None
        return [str(item.ball) for item in store.inputs(occasion) if isinstance(item, BoardKey)]


def test_each_role_sees_and_can_do_only_its_part(hall: HallWithLogins, machines: list[Any]) -> None:
    caller = log_in(machines[0], hall.url, "carol")
    floor = log_in(machines[1], hall.url, "fred")
    inspector = log_in(machines[2], hall.url, "ines")
    assert visible(caller, *PARTS) == [True, True, False, True, False, True]  # claim actions: with a claim open
    assert caller.text_content("#who-name") == "carol (caller)"

    caller.fill("#key-ball", "B7")  # the caller keys a ball with the page ...
    caller.click("#key-submit")
    text_is(caller, "#operator-status", "Keyed B7")
    for page in (caller, floor, inspector):  # ... and every logged-in page shows it
        page.wait_for_function("document.querySelector('#heard').textContent.includes('board: B7')", timeout=WAIT_MS)

    # the floor sees the claim panel's actions and the winner form, not the key field nor the next game
    assert visible(floor, *PARTS) == [False, False, False, True, False, True]
    shows_claim_actions = "!document.getElementById('claim-actions').hidden"
    assert [page.evaluate(shows_claim_actions) for page in (caller, floor, inspector)] == [True, True, False]
    assert post_from(floor, "/api/board", {"ball": "I22"}) == [
        403,
        {"error": "a floor may not do that (board)", "login": False},
    ]
    # the inspector reads: no operator section at all, the records instead
    assert visible(inspector, "operator", "records-link") == [False, True]
    assert post_from(inspector, "/api/game", {"type": "regular"})[0] == 403
    assert keyed(hall.db) == ["B7"]

    inspector.click("#records-link")
    inspector.wait_for_url(hall.url + "/records", timeout=WAIT_MS)
    inspector.wait_for_function("document.getElementById('verify').textContent.startsWith('chain intact')")
    inspector.wait_for_function("document.querySelectorAll('#access tr').length >= 8", timeout=WAIT_MS)
    rows = inspector.eval_on_selector_all(
        "#access tr", "rows => rows.map(r => Array.from(r.cells).slice(1, 5).map(c => c.textContent))"
    )
    assert ["Action", "carol", "caller", 'board {"ball":"B7"}'] in rows
    assert ["ActionRefused", "fred", "floor", "board"] in rows
    assert ["Login", "ines", "inspector", ""] in rows
    # the caller may not read the records, not even by typing the address
    caller.goto(hall.url + "/records")
    assert "a caller does not read the records" in (caller.text_content("body") or "")


def test_a_flashboard_on_another_machine_follows_the_game_live(hall: HallWithLogins, machines: list[Any]) -> None:
    caller = log_in(machines[0], hall.url, "carol")
    flash = machines[3].new_page()  # the players' screen: no login
    flash.goto(hall.url + "/flashboard")
    flash.wait_for_function("document.body.dataset.version !== undefined", timeout=WAIT_MS)
    assert flash.url == hall.url + "/flashboard"
    caller.select_option("#game-form-type", "regular")
    caller.click("#game-submit")
    text_is(caller, "#operator-status", "Next game started")
    for ball, said in (("B7", "B seven"), ("I22", "I twenty two"), ("N33", "N thirty three")):
        for item in parse_script(f"0 caller: {said}\n0 caller: {said}\n", GRAMMAR):
            hall.hub.feed(item)
        text_is(flash, "#flash-current", ball)
        text_is(caller, "#current", ball)
    text_is(flash, "#flash-count", "3")
    lit = flash.eval_on_selector_all("#flash-board td.lit", "cells => cells.map(c => c.dataset.ball)")
    assert sorted(lit) == ["B7", "I22", "N33"]
    # the flashboard's feed carries the board only, never the console's state
    assert flash.evaluate("fetch('/api/state').then(r => r.status)") == 401


def test_an_expired_session_is_sent_to_the_login_page(tmp_path: Path, machines: list[Any]) -> None:
    hall = hall_with_logins(tmp_path / "hall.db", GRAMMAR, session_seconds=3.0)
    try:
        caller = log_in(machines[0], hall.url, "carol")
        started = time.monotonic()
        # nothing is touched: the live feed ends with the session and the page goes to the login on its own
        caller.wait_for_url(hall.url + "/login?next=%2F", timeout=WAIT_MS)
        assert time.monotonic() - started >= 1.0
        assert caller.is_visible("#login-form")
        caller.fill("#login-name", "carol")
        caller.fill("#login-password", USERS["carol"][1])
        caller.click("#login-submit")
        caller.wait_for_url(hall.url + "/", timeout=WAIT_MS)
    finally:
        hall.close()


def test_a_forged_or_replayed_action_is_refused_and_recorded(hall: HallWithLogins, machines: list[Any]) -> None:
    caller = log_in(machines[0], hall.url, "carol")
    assert post_from(caller, "/api/board", {"ball": "B7"}, action_id="captured-action-0001")[0] == 200
    replayed = post_from(caller, "/api/board", {"ball": "B7"}, action_id="captured-action-0001")
    assert replayed == [409, {"error": "replayed action: this action was already taken", "login": False}]
    forged = post_from(caller, "/api/board", {"ball": "O72"}, csrf="a-token-the-forger-guessed")
    assert forged == [403, {"error": "forged action: the page's token is missing or wrong", "login": False}]
    # a page of another machine that never logged in has no session to act with
    stranger = machines[1].new_page()
    stranger.goto(hall.url + "/flashboard")
    status = stranger.evaluate(
        """fetch("/api/board", {method: "POST", headers: {"Content-Type": "application/json",
            "X-CSRF-Token": "x", "X-Action-Id": "stranger-action-0001"}, body: '{"ball": "O72"}'})
           .then(r => r.status)"""
    )
    assert status == 401
    assert keyed(hall.db) == ["B7"]
    refused = [(r.detail["user"], r.detail["reason"]) for r in hall.access_log() if r.what == "ActionRefused"]
    assert refused == [
        ("carol", "replayed action: this action was already taken"),
        ("carol", "forged action: the page's token is missing or wrong"),
        (None, "log in first"),
    ]
    with Store.open(hall.db, readonly=True) as store:
        assert store.verify().ok
