"""Roles and logins on the console, over HTTP against the real server (uvicorn on loopback), the real
procedure and the real SQLite record; `users` and `serve` through the real command line."""

from __future__ import annotations

import http.client
import io
import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from console_desk import USERS, HallWithLogins, hall_with_logins
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from assistant.__main__ import main
from assistant.console.access import LoginLimit, hash_password
from assistant.console.app import RECHECK, SESSION_ENDED
from assistant.grammar import Grammar
from assistant.messages import BoardKey
from assistant.script import parse_script
from assistant.settings import ROOT
from assistant.store import Store

GRAMMAR = Grammar.load()


class Browserless:
    """One visitor's HTTP: keeps the session cookie, never follows a redirect."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.cookie: str | None = None
        self.csrf = ""
        self.sent = 0

    def call(
        self, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        sent = dict(headers or {})
        if self.cookie:
            sent["Cookie"] = self.cookie
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        raw = response.read()
        got = {k.lower(): v for k, v in response.getheaders()}
        connection.close()
        if "set-cookie" in got:
            cookie = got["set-cookie"].split(";")[0]
            self.cookie = None if cookie.endswith('=""') or cookie.endswith("=") else cookie
        try:
            answer: Any = json.loads(raw)
        except ValueError:
            answer = raw.decode(errors="replace")
        return response.status, answer, got

    def login(self, name: str, password: str | None = None) -> int:
        status, answer, _ = self.call("POST", "/api/login", {"name": name, "password": password or USERS[name][1]})
        if status == 200:
            self.csrf = answer["csrf"]
        return status

    def act(self, path: str, body: object, *, csrf: str | None = None, action_id: str | None = None) -> tuple[int, Any]:
        self.sent += 1
        headers = {"X-CSRF-Token": self.csrf if csrf is None else csrf}
        headers["X-Action-Id"] = action_id or f"test-action-{self.sent:04d}-{time.monotonic_ns()}"
        status, answer, _ = self.call("POST", path, body, headers)
        return status, answer


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[HallWithLogins]:
    made = hall_with_logins(tmp_path / "hall.db", GRAMMAR)
    yield made
    made.close()


def keyed(db: Path) -> list[str]:
    with Store.open(db, readonly=True) as store:
        occasion = store.latest_occasion()
        assert occasion is not None
        return [str(item.ball) for item in store.inputs(occasion) if isinstance(item, BoardKey)]


# ----- users on the command line ----------------------------------------------------------------------------


def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch, stdin: str = "") -> int:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    return main(argv)


def add_user(db: str, name: str, role: str, password: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """`users add` on the command line, the password on standard input."""
    argv = ["users", "add", name, "--role", role, "--db", db, "--password-stdin"]
    return run_main(argv, monkeypatch, password + "\n")


def test_users_are_added_listed_and_removed_and_the_record_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "hall.db")
    assert add_user(db, "carol", "caller", "a long password", monkeypatch) == 0
    assert add_user(db, "ines", "inspector", "another password", monkeypatch) == 0
    capsys.readouterr()
    assert run_main(["users", "list", "--db", db], monkeypatch) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:2] for line in listed] == [["carol", "caller"], ["ines", "inspector"]]
    assert run_main(["users", "remove", "ines", "--db", db], monkeypatch) == 0
    with Store.open(Path(db), readonly=True) as store:
        users = store.users()
        assert [(u.name, u.role) for u in users] == [("carol", "caller")]
        assert users[0].password_hash.startswith("$argon2id$") and "a long password" not in users[0].password_hash
        log = [(r.what, r.detail["user"], r.detail["role"]) for r in store.access_log()]
        assert log == [
            ("UserAdded", "carol", "caller"),
            ("UserAdded", "ines", "inspector"),
            ("UserRemoved", "ines", "inspector"),
        ]
        assert store.verify().ok


@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (["users", "add", "bob", "--role", "floor", "--password-stdin"], "short\n", "at least 8 characters"),
        (["users", "add", "bob", "--role", "floor"], "", "no terminal to ask the password on"),
        (["users", "add", "bad name", "--role", "floor"], "", "a user name is 1 to 64 letters"),
        (["users", "add", "carol", "--role", "floor", "--password-stdin"], "long enough pw\n", "already exists"),
        (["users", "remove", "zed"], "", "no user zed in"),
    ],
)
def test_a_bad_users_command_is_one_line_and_changes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    stdin: str,
    message: str,
) -> None:
    db = str(tmp_path / "hall.db")
    assert add_user(db, "carol", "caller", "a long password", monkeypatch) == 0
    capsys.readouterr()
    assert run_main([*argv, "--db", db], monkeypatch, stdin) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err
    with Store.open(Path(db), readonly=True) as store:
        assert [u.name for u in store.users()] == ["carol"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_serving_beyond_loopback_without_a_user_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "hall.db"
    for extra in ([], ["--db", str(db)]):
        done = subprocess.run(
            [sys.executable, "-m", "assistant", "serve", "--host", "0.0.0.0", "--port", "0", *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "bingo-assistant: error: serving beyond loopback (--host 0.0.0.0) needs a console user: add one with "
            "`bingo-assistant users add NAME --role caller --db PATH` and serve with --db PATH"
        ]
    assert not db.exists()  # refused before anything was recorded


def test_serving_beyond_loopback_with_a_user_asks_for_a_login(tmp_path: Path) -> None:
    db = tmp_path / "hall.db"
    added = subprocess.run(
        [
            sys.executable,
            "-m",
            "assistant",
            "users",
            "add",
            "carol",
            "--role",
            "caller",
            "--db",
            str(db),
            "--password-stdin",
        ],
        cwd=ROOT,
        input="carol-calls-77\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    port = free_port()
    served = subprocess.Popen(
        [sys.executable, "-m", "assistant", "serve", "--host", "0.0.0.0", "--port", str(port), "--db", str(db)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        visitor = Browserless(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _, headers = visitor.call("GET", "/")
                break
            except OSError:
                assert served.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        assert (status, headers["location"]) == (303, "/login?next=/")
        assert visitor.act("/api/board", {"ball": "B7"})[0] == 401
        assert visitor.login("carol") == 200
        assert visitor.act("/api/board", {"ball": "B7"})[0] == 200
    finally:
        served.send_signal(signal.SIGINT)  # Ctrl-C: the console stops and closes its record
        _, err = served.communicate(timeout=30)
    assert "1 user(s) of" in err and "log in" in err
    with Store.open(db, readonly=True) as store:
        log = [(r.what, r.detail.get("user"), r.detail.get("reason")) for r in store.access_log()]
        assert log == [
            ("UserAdded", "carol", None),
            ("ActionRefused", None, "log in first"),
            ("Login", "carol", None),
            ("Action", "carol", None),
        ]
        assert store.verify().ok


# ----- logins --------------------------------------------------------------------------------------------


def test_a_login_and_each_refused_login_are_in_the_record(hall: HallWithLogins) -> None:
    visitor = Browserless(hall.url)
    assert visitor.login("carol", "not her password") == 401
    assert visitor.login("mallory", "any password") == 401
    assert visitor.cookie is None
    assert visitor.login("carol") == 200
    status, me, _ = visitor.call("GET", "/api/me")
    assert (status, me["user"], me["role"], me["may"]) == (200, "carol", "caller", ["board", "claim", "game", "winner"])
    log = [(r.what, r.detail["user"], r.detail.get("reason"), r.detail["address"]) for r in hall.access_log()[3:]]
    assert log == [
        ("LoginRefused", "carol", "wrong password", "127.0.0.1"),
        ("LoginRefused", "mallory", "unknown user", "127.0.0.1"),
        ("Login", "carol", None, "127.0.0.1"),
    ]
    with Store.open(hall.db, readonly=True) as store:
        assert store.verify().ok
        assert all("not her password" not in r.detail.values() for r in store.access_log())


def test_logins_are_rate_limited(tmp_path: Path) -> None:
    hall = hall_with_logins(tmp_path / "hall.db", GRAMMAR, limit=LoginLimit(failures=3, window=2.0))
    try:
        visitor = Browserless(hall.url)
        assert [visitor.login("fred", f"guess {n}") for n in range(3)] == [401, 401, 401]
        assert visitor.login("fred") == 429  # the right password, too soon
        status, answer, _ = visitor.call("POST", "/api/login", {"name": "fred", "password": "guess again"})
        assert status == 429 and answer["error"].startswith("too many refused logins: try again in")
        time.sleep(2.2)
        assert visitor.login("fred") == 200
        refused = [r.detail["reason"] for r in hall.access_log() if r.what == "LoginRefused"]
        assert refused[:3] == ["wrong password"] * 3
        assert refused[3].startswith("too many refused logins")
    finally:
        hall.close()


# ----- roles ---------------------------------------------------------------------------------------------


def test_each_role_may_do_only_its_part(hall: HallWithLogins) -> None:
    caller, floor, inspector = Browserless(hall.url), Browserless(hall.url), Browserless(hall.url)
    for visitor, name in ((caller, "carol"), (floor, "fred"), (inspector, "ines")):
        assert visitor.login(name) == 200
    assert caller.act("/api/board", {"ball": "B7"})[0] == 200
    assert floor.act("/api/board", {"ball": "I22"}) == (
        403,
        {"error": "a floor may not do that (board)", "login": False},
    )
    assert floor.act("/api/game", {"type": "regular"})[0] == 403
    assert inspector.act("/api/board", {"ball": "I22"})[0] == 403
    assert inspector.act("/api/claim", {"valid": True})[0] == 403
    # the floor rules on claims: past the gate, the procedure answers (no claim is open yet)
    assert floor.act("/api/claim", {"valid": True}) == (
        400,
        {"error": "no claim is open: there is nothing to rule valid or not valid"},
    )
    assert keyed(hall.db) == ["B7"]
    for visitor in (caller, floor):
        assert visitor.call("GET", "/api/verify")[0] == 403
        assert visitor.call("GET", "/records")[0] == 403
        assert visitor.call("GET", "/api/state")[0] == 200
    status, verified, _ = inspector.call("GET", "/api/verify")
    assert status == 200 and verified["ok"] and verified["text"].startswith("chain intact")
    status, report, _ = inspector.call("GET", "/records/report")
    assert status == 200 and "<html" in report.lower()
    status, logged, _ = inspector.call("GET", "/api/access")
    actions = [(r["what"], r["user"], r.get("action"), r.get("ok")) for r in logged["access"] if "Action" in r["what"]]
    assert actions == [
        ("Action", "carol", "board", True),
        ("ActionRefused", "fred", "board", None),
        ("ActionRefused", "fred", "game", None),
        ("ActionRefused", "ines", "board", None),
        ("ActionRefused", "ines", "claim", None),
        ("Action", "fred", "claim", False),
    ]


def test_the_flashboard_is_public_and_shows_only_the_board(hall: HallWithLogins) -> None:
    caller, player = Browserless(hall.url), Browserless(hall.url)
    assert caller.login("carol") == 200
    assert caller.act("/api/game", {"type": "winner-take-all", "prize": "700"})[0] == 200
    for item in parse_script("1 caller: B seven\n2 caller: B seven\n3 caller: I sixteen\n", GRAMMAR):
        hall.hub.feed(item)
    assert player.call("GET", "/api/state")[0] == 401
    assert player.call("GET", "/flashboard")[0] == 200
    status, board, _ = player.call("GET", "/api/flashboard")
    assert status == 200 and (board["current"], board["count"], board["game"]["type"]) == ("I16", 2, "winner-take-all")
    assert not {"findings", "for_review", "heard", "winners", "claim", "prompts", "prizes_offered"} & set(board)
    # the game's prize is the players' to see (halls show it); the cards sold and the winner's record are not
    assert board["game"]["prize"] == 700.0 and not {"cards_sold", "winner_record_required"} & set(board["game"])


# ----- sessions, forged and replayed actions -------------------------------------------------------------


def test_forged_and_replayed_actions_are_refused_and_recorded(hall: HallWithLogins) -> None:
    caller = Browserless(hall.url)
    assert caller.login("carol") == 200
    assert caller.act("/api/board", {"ball": "B7"}, action_id="once-only-action-0001")[0] == 200
    replayed = caller.act("/api/board", {"ball": "B7"}, action_id="once-only-action-0001")
    assert replayed == (409, {"error": "replayed action: this action was already taken", "login": False})
    assert caller.act("/api/board", {"ball": "I22"}, csrf="")[0] == 403
    assert caller.act("/api/board", {"ball": "I22"}, csrf="guessed-token")[0] == 403
    status, _, _ = caller.call(
        "POST",
        "/api/board",
        {"ball": "I22"},
        {"X-CSRF-Token": caller.csrf, "X-Action-Id": "from-another-site-01", "Origin": "http://evil.example"},
    )
    assert status == 403
    forger = Browserless(hall.url)
    forger.cookie = caller.cookie.replace("bingo_session=", "bingo_session=x") if caller.cookie else None
    assert forger.act("/api/board", {"ball": "I22"}, csrf=caller.csrf)[0] == 401
    assert keyed(hall.db) == ["B7"]
    refused = [(r.detail["user"], r.detail["reason"]) for r in hall.access_log() if r.what == "ActionRefused"]
    assert refused == [
        ("carol", "replayed action: this action was already taken"),
        ("carol", "forged action: the page's token is missing or wrong"),
        ("carol", "forged action: the page's token is missing or wrong"),
        ("carol", "forged action: sent from another site"),
        (None, "the session is not one this console signed: log in again"),
    ]


def test_an_expired_session_is_sent_to_the_login_page(tmp_path: Path) -> None:
    hall = hall_with_logins(tmp_path / "hall.db", GRAMMAR, session_seconds=1.5)
    try:
        caller = Browserless(hall.url)
        assert caller.login("carol") == 200
        assert caller.call("GET", "/")[0] == 200
        time.sleep(2.6)
        status, _, headers = caller.call("GET", "/")
        assert (status, headers["location"]) == (303, "/login?next=/")
        assert caller.act("/api/board", {"ball": "B7"}) == (
            401,
            {"error": "the session has expired: log in again", "login": True},
        )
        assert keyed(hall.db) == []
        assert caller.login("carol") == 200
        assert caller.act("/api/board", {"ball": "B7"})[0] == 200
    finally:
        hall.close()


def test_logging_out_or_removing_the_user_ends_the_session(hall: HallWithLogins) -> None:
    caller, floor = Browserless(hall.url), Browserless(hall.url)
    assert caller.login("carol") == 200 and floor.login("fred") == 200
    kept = caller.cookie
    assert caller.call("POST", "/api/logout", None, {"X-CSRF-Token": caller.csrf})[0] == 200
    caller.cookie = kept  # the old cookie, replayed after logging out
    assert caller.act("/api/board", {"ball": "B7"})[1]["error"] == "the session was logged out: log in again"
    with Store.open(hall.db) as store:
        store.remove_user("fred")
    assert floor.call("GET", "/api/state")[0] == 401
    assert [r.what for r in hall.access_log()][-3:] == ["Logout", "ActionRefused", "UserRemoved"]


def test_an_access_record_altered_in_the_file_breaks_the_chain(hall: HallWithLogins) -> None:
    caller = Browserless(hall.url)
    assert caller.login("carol", "wrong password!") == 401
    hall.close()
    con = sqlite3.connect(hall.db)
    con.execute(
        "UPDATE events SET payload = replace(payload, 'carol', 'fred') WHERE kind = 'access' AND type = 'LoginRefused'"
    )
    con.commit()
    con.close()
    with Store.open(hall.db, readonly=True) as store:
        result = store.verify()
    assert not result.ok and result.first_bad is not None and result.first_bad.reason == "altered"


def test_a_record_of_schema_v1_still_reads_and_has_no_users(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Store.open(db) as store:
        store.start_occasion(source="hall")
    con = sqlite3.connect(db)  # as a program without logins left it
    con.executescript("DROP VIEW access; DROP TABLE users; PRAGMA user_version = 1;")
    con.close()
    with Store.open(db, readonly=True) as store:
        assert store.users() == [] and store.verify().ok
    with Store.open(db) as store:  # opened writable, it is migrated
        assert store.users() == []
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 2
    con.close()


def test_on_loopback_without_users_the_console_is_open_and_its_actions_are_recorded(tmp_path: Path) -> None:
    hall = hall_with_logins(tmp_path / "hall.db", GRAMMAR, users=False, loopback=True)
    try:
        anyone = Browserless(hall.url)
        assert anyone.call("GET", "/")[0] == 200
        assert anyone.call("GET", "/login")[2]["location"] == "/"
        status, answer, _ = anyone.call("POST", "/api/board", {"ball": "B7"})  # no token, no id: as before logins
        assert status == 200 and answer["ok"]
        assert [(r.what, r.detail["user"], r.detail["role"]) for r in hall.access_log()] == [("Action", None, "open")]
        with Store.open(hall.db) as store:  # a user added while serving: logins from now on
            store.add_user("carol", "caller", hash_password(USERS["carol"][1]))
        assert anyone.call("GET", "/")[0] == 303
        assert anyone.call("POST", "/api/board", {"ball": "I22"})[0] == 401
        assert keyed(hall.db) == ["B7"]
    finally:
        hall.close()


def test_beyond_loopback_the_console_never_opens_even_with_every_user_removed(hall: HallWithLogins) -> None:
    with Store.open(hall.db) as store:
        for name in USERS:
            store.remove_user(name)
    anyone = Browserless(hall.url)
    assert anyone.call("GET", "/")[0] == 303
    assert anyone.call("GET", "/api/state")[0] == 401
    assert anyone.call("POST", "/api/board", {"ball": "B7"})[0] == 401
    assert keyed(hall.db) == []


def test_a_live_page_loses_its_feed_when_its_user_is_removed(hall: HallWithLogins) -> None:
    floor = Browserless(hall.url)
    assert floor.login("fred") == 200 and floor.cookie is not None
    address = hall.url.replace("http://", "ws://") + "/api/live"
    with connect(address) as stranger, pytest.raises(ConnectionClosed) as refused:
        stranger.recv(timeout=5)
    assert refused.value.rcvd is not None and refused.value.rcvd.code == SESSION_ENDED
    with connect(address, additional_headers={"Cookie": floor.cookie}) as page:
        assert json.loads(page.recv(timeout=5))["type"] == "update"
        with Store.open(hall.db) as store:
            store.remove_user("fred")
        started = time.monotonic()
        with pytest.raises(ConnectionClosed) as ended:
            while True:
                page.recv(timeout=RECHECK + 5)
    assert ended.value.rcvd is not None and ended.value.rcvd.code == SESSION_ENDED
    assert ended.value.rcvd.reason == "user fred was removed or changed: log in again"
    assert time.monotonic() - started <= RECHECK + 1
