"""The master board console's API: a scripted game through the real procedure and store, operator actions, live feed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_desk import Desk, desk_factory
from starlette.testclient import TestClient

from assistant.console import ConsoleHub, ConsoleInputError, HubClosed, create_app, store_winners
from assistant.console.actions import read_ball, read_plan, read_winner
from assistant.grammar import Grammar
from assistant.messages import Ball, BoardKey, GameType, Input, Output, Role, Utterance
from assistant.procedure import Procedure, ProcedureSettings, RulePack
from assistant.script import parse_script
from assistant.settings import ROOT
from assistant.store import Store, StoreError

RULES = ROOT / "config" / "rules" / "nm-15.4.7.11.yaml"
GRAMMAR = Grammar.load()

LIMITED_GAME = """\
@game type=limited balls=50 last_ball_required=yes prize=300 pattern="Letter X"
1 caller: last ball called is required
3 caller: this is a fifty ball game
6 caller: B seven
8 caller: B seven
12 caller: I twenty two
14 caller: I twenty two
18 caller: N thirty three
20 caller: N thirty three
"""

CLAIM = """\
24 caller: G fifty
26 caller: G fifty
30 caller: O seventy one
32 caller: O seventy one
35 player: bingo
38 floor: manufacturer one four two serial number four seven two nine one
42 floor: B seven, I twenty two, N thirty three, G fifty, O seventy two
"""


@pytest.fixture
def desk_hub(tmp_path: Path) -> Iterator[tuple[ConsoleHub, Desk, Path]]:
    made: list[Desk] = []
    db = tmp_path / "hall.db"
    hub = ConsoleHub(
        procedure_factory=desk_factory(db, made, GRAMMAR, "console-test"), grammar=GRAMMAR, clock=lambda: 0.0
    )
    desk = made[0]
    hub.winner_sink = store_winners(desk.journal.store, desk.journal.occasion)
    yield hub, desk, db
    hub.on_desk(desk.journal.store.close)
    hub.close()


def play(hub: ConsoleHub, script: str) -> list[Input]:
    items = parse_script(script, GRAMMAR)
    for item in items:
        hub.feed(item)
    return items


def recorded_inputs(db: Path) -> list[Input]:
    with Store.open(db, readonly=True) as store:
        occasion = store.latest_occasion()
        assert occasion is not None
        return store.inputs(occasion)


# ----- the operator's words, read into typed values ---------------------------------------------------


def test_a_keyed_ball_reads_like_the_script_format() -> None:
    assert read_ball({"ball": "b-7"}) == Ball(7)
    assert read_ball({"ball": "O75"}) == Ball(75)


@pytest.mark.parametrize(
    ("data", "message"),
    [({"ball": "B20"}, "20 is under I, not B"), ({"ball": "X3"}, "not a ball"), ({}, "key a ball like B7")],
)
def test_a_bad_keyed_ball_is_one_line(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConsoleInputError, match=message):
        read_ball(data)


def test_a_plan_reads_like_the_game_line() -> None:
    plan = read_plan({"type": "winner-take-all", "cards_sold": "120", "prize": "$1,200", "last_ball_required": "no"})
    assert plan.type is GameType.WINNER_TAKE_ALL
    assert (plan.cards_sold, plan.prize, plan.last_ball_required, plan.balls) == (120, 1200.0, False, None)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "bonanza"}, "game type must be one of"),
        ({"type": "limited"}, "needs its ball count"),
        ({"type": "limited", "balls": "90"}, "between 1 and 75"),
        ({"prize": "lots"}, "amount in dollars"),
        ({"prize": "-5"}, "positive amount"),
        ({"last_ball_required": "maybe"}, "yes or no"),
    ],
)
def test_a_bad_plan_is_one_line(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConsoleInputError, match=message):
        read_plan(data)


def test_a_winner_needs_name_contact_and_prize() -> None:
    with pytest.raises(ConsoleInputError, match="contact information is missing"):
        read_winner({"name": "Ann Lee", "prize": "700"})
    assert read_winner({"name": " Ann Lee ", "contact": "505-555-0101", "prize": 700}) == (
        "Ann Lee",
        "505-555-0101",
        700.0,
        None,
    )


# ----- a scripted game through the real procedure ----------------------------------------------------------


def test_the_state_follows_a_scripted_game(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, _ = desk_hub
    play(hub, LIMITED_GAME)
    client = TestClient(create_app(hub))
    state = client.get("/api/state").json()
    assert state["calls"] == [str(b) for b in desk.procedure.board.called] == ["B7", "I22", "N33"]
    assert (state["current"], state["previous"], state["count"], state["remaining"]) == ("N33", ["I22", "B7"], 3, 47)
    game = state["game"]
    assert (game["number"], game["type"], game["balls"], game["prize"]) == (1, "limited", 50, 300.0)
    assert game["pattern"] == "Letter X"
    assert game["last_ball_required"] is True
    assert state["step"] == desk.procedure.step == "calling"
    assert state["findings"] == []
    assert [h["text"] for h in state["heard"]][-1] == "N thirty three"


def test_the_pages_are_served(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    client = TestClient(create_app(desk_hub[0]))
    console = client.get("/")
    assert console.status_code == 200
    assert 'aria-live="polite"' in console.text and 'aria-live="assertive"' in console.text
    flash = client.get("/flashboard")
    assert flash.status_code == 200 and "flash-current" in flash.text
    assert client.get("/static/console.js").status_code == 200


def test_a_keyed_ball_goes_through_the_procedure_and_the_store(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, db = desk_hub
    play(hub, LIMITED_GAME)
    client = TestClient(create_app(hub))
    answer = client.post("/api/board", json={"ball": "N34"})  # the operator keys the drawn ball, then it is called
    assert answer.status_code == 200
    play(hub, "24 caller: N thirty four\n26 caller: N thirty four\n")
    state = client.get("/api/state").json()
    assert state["findings"] == [] and state["current"] == "N34"
    assert desk.procedure.occasion.games[-1].calls[-1].keyed  # A(4) confirmed by the board
    stored = recorded_inputs(db)
    assert stored[-3] == BoardKey(time=20.0 + 0.4 * 3, ball=Ball(34))
    assert len(stored) == len(parse_script(LIMITED_GAME, GRAMMAR)) + 3
    assert [h["kind"] for h in state["heard"][-3:]] == ["keyed", "heard", "heard"]


def test_a_keyed_ball_that_differs_from_the_call_is_a_finding(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, _ = desk_hub
    play(hub, LIMITED_GAME)
    client = TestClient(create_app(hub))
    client.post("/api/board", json={"ball": "N34"})
    play(hub, "24 caller: N thirty five\n")
    state = client.get("/api/state").json()
    assert [(f["clause"], f["code"], f["severity"]) for f in state["findings"]] == [
        ("A(5)", "call-differs-from-board", "violation")
    ]
    assert [f.to_json() for f in desk.procedure.occasion.all_findings()] == [
        {k: v for k, v in f.items() if k != "game"} for f in state["findings"]
    ]
    assert state["prompts"][-1]["text"] == "Board shows N thirty four"


def test_bad_operator_input_is_refused_in_one_line_and_loses_nothing(
    desk_hub: tuple[ConsoleHub, Desk, Path],
) -> None:
    hub, _, db = desk_hub
    play(hub, LIMITED_GAME)
    client = TestClient(create_app(hub))
    before = client.get("/api/state").json()
    for path, body in [("/api/board", {"ball": "B16"}), ("/api/game", {"type": "limited"}), ("/api/claim", {})]:
        answer = client.post(path, json=body)
        assert answer.status_code == 400
        assert "\n" not in answer.json()["error"] and answer.json()["error"]
    refused = client.post(
        "/api/board", content=b"ball=B7", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert refused.status_code == 415
    assert (
        client.post("/api/board", content=b"{not json", headers={"content-type": "application/json"}).status_code == 400
    )
    assert client.get("/api/state").json() == before
    assert len(recorded_inputs(db)) == len(parse_script(LIMITED_GAME, GRAMMAR))


def test_the_next_game_starts_from_the_page(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, _ = desk_hub
    play(hub, LIMITED_GAME)
    client = TestClient(create_app(hub))
    body = {"type": "winner-take-all", "cards_sold": "120", "prize": "700", "pattern": "Cover all"}
    state = client.post("/api/game", json=body).json()["state"]
    assert state["game"]["number"] == 2 == desk.procedure.board.game_number
    assert (state["game"]["type"], state["game"]["cards_sold"], state["game"]["prize"]) == ("winner-take-all", 120, 700)
    assert state["game"]["winner_record_required"] is True
    assert state["calls"] == [] and state["count"] == 0 and state["remaining"] is None
    assert state["prizes_offered"] == 1000.0


def test_the_claim_panel_marks_each_winning_number(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, _ = desk_hub
    play(hub, LIMITED_GAME + CLAIM)
    client = TestClient(create_app(hub))
    claim = client.get("/api/state").json()["claim"]
    assert (claim["manufacturer"], claim["serial"], claim["open"]) == ("142", "47291", True)
    assert [(w["ball"], w["called"]) for w in claim["winning"]] == [
        ("B7", True),
        ("I22", True),
        ("N33", True),
        ("G50", True),
        ("O72", False),
    ]
    assert claim["not_called"] == ["O72"]
    held = client.post("/api/board", json={"ball": "G49"}).json()["state"]["claim"]  # B(3): the ball in hand
    assert held["held_ball"] == "G49"
    assert desk.procedure.occasion.games[-1].claims[-1].held_ball == Ball(49)
    resolved = client.post("/api/claim", json={"valid": False}).json()["state"]["claim"]
    assert resolved["valid"] is False and resolved["open"] is False
    assert client.get("/api/state").json()["prompts"][-1]["text"] == "Call the held ball: G forty nine"
    record = desk.procedure.occasion.games[-1].claims[-1]
    assert record.valid is False
    assert [str(b) for b in record.not_called] == ["O72"]
    again = client.post("/api/claim", json={"valid": True})
    assert again.status_code == 400 and "no claim is open" in again.json()["error"]


def test_the_flashboard_tells_a_claim_and_its_ruling_but_never_the_card(
    desk_hub: tuple[ConsoleHub, Desk, Path],
) -> None:
    hub, _, _ = desk_hub
    client = TestClient(create_app(hub))
    play(hub, LIMITED_GAME + CLAIM)
    checking = client.get("/api/flashboard").json()
    assert checking["status"] == {"phase": "checking", "text": "BINGO - checking the card"}
    assert (checking["game"]["pattern"], checking["game"]["prize"]) == ("Letter X", 300.0)
    assert checking["last"] == ["O71", "G50", "N33", "I22", "B7"]
    assert "claim" not in checking and "47291" not in json.dumps(checking)
    client.post("/api/claim", json={"valid": False})
    assert client.get("/api/flashboard").json()["status"]["phase"] == "not-valid"
    play(hub, "48 caller: O seventy two\n50 caller: O seventy two\n")  # the next ball ends the ruling's news
    assert client.get("/api/flashboard").json()["status"] == {"phase": "calling", "text": "Calling"}
    # the master board shows the same status, from the same place
    assert client.get("/api/state").json()["status"] == client.get("/api/flashboard").json()["status"]


def test_a_winner_is_entered_into_the_store(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, _, db = desk_hub
    play(hub, "@game type=winner-take-all cards_sold=120 prize=700\n1 caller: one hundred twenty cards sold\n")
    client = TestClient(create_app(hub))
    missing = client.post("/api/winner", json={"name": "Ann Lee", "prize": "700"})
    assert missing.status_code == 400 and "E(2)(c)" in missing.json()["error"]
    body = {"name": "Ann Lee", "contact": "505-555-0101", "prize": "700", "tax_document": "W-2G 0042"}
    state = client.post("/api/winner", json=body).json()["state"]
    assert state["winners"] == [
        {"game": 1, "name": "Ann Lee", "contact": "505-555-0101", "prize": 700.0, "tax_document": "W-2G 0042"}
    ]
    with Store.open(db, readonly=True) as store:
        occasion = store.latest_occasion()
        assert occasion is not None
        winners = store.winners(occasion)
    assert [(w.game, w.name, w.contact, w.prize, w.tax_document) for w in winners] == [
        (1, "Ann Lee", "505-555-0101", 700.0, "W-2G 0042")
    ]


def test_the_live_feed_sends_the_state_then_each_update(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, _, _ = desk_hub
    play(hub, LIMITED_GAME)
    client = TestClient(create_app(hub))
    with client.websocket_connect("/api/live") as socket:
        first = socket.receive_json()
        assert first["state"]["calls"] == ["B7", "I22", "N33"] and first["events"] == []
        hub.feed(GRAMMAR.utterance(24.0, 25.0, Role.CALLER, "G fifty"))
        update = socket.receive_json()
        assert {"kind": "call", "game": 1, "ball": "G50", "time": 24.0} in update["events"]
        assert update["events"][0]["kind"] == "heard"
        assert update["state"]["current"] == "G50" and update["state"]["count"] == 4
        assert update["state"]["version"] > first["state"]["version"]


def test_speech_and_operator_from_two_threads_are_fed_once_each(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, db = desk_hub
    play(hub, "@game type=regular\n")
    calls = [Ball(n) for n in range(1, 61, 4)]

    def speech() -> None:
        for i, ball in enumerate(calls):
            t = 10.0 + 4 * i
            words = GRAMMAR.spoken(ball)
            hub.feed(GRAMMAR.utterance(t, t + 1, Role.CALLER, words))
            hub.feed(GRAMMAR.utterance(t + 2, t + 3, Role.CALLER, words))

    def operator() -> None:
        for ball in calls:
            hub.key_ball(ball)

    threads = [threading.Thread(target=speech), threading.Thread(target=operator)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert hub.snapshot()["calls"] == [str(b) for b in desk.procedure.board.called]
    assert sorted(desk.procedure.board.called) == calls
    stored = recorded_inputs(db)
    assert sum(isinstance(i, BoardKey) for i in stored) == len(calls)
    assert sum(isinstance(i, Utterance) for i in stored) == 2 * len(calls)


def test_a_correction_takes_the_wrong_ball_off_the_board(desk_hub: tuple[ConsoleHub, Desk, Path]) -> None:
    hub, desk, _ = desk_hub
    play(
        hub,
        LIMITED_GAME
        + "24 caller: an error has been made, I am reading the correct number, please correct your card\n"
        + "28 caller: N thirty four\n30 caller: N thirty four\n",
    )
    state = hub.snapshot()
    assert state["calls"] == [str(b) for b in desk.procedure.board.called] == ["B7", "I22", "N34"]
    assert (state["current"], state["count"], state["remaining"]) == ("N34", 3, 47)
    assert state["findings"] == []


def test_a_procedure_the_pipeline_built_shows_through_publish() -> None:
    hub: ConsoleHub | None = None

    def emit(output: Output) -> None:
        assert hub is not None
        hub.publish(output)

    procedure = Procedure(rules=RulePack.load(RULES), grammar=GRAMMAR, settings=ProcedureSettings(), emit=emit)
    hub = ConsoleHub(procedure, grammar=GRAMMAR)
    try:
        play(hub, LIMITED_GAME)
        state = hub.snapshot()
        assert state["calls"] == ["B7", "I22", "N33"] and state["step"] == procedure.step
        assert state["game"] is not None
    finally:
        hub.close()


def test_the_desk_hands_errors_back_and_refuses_work_once_closed() -> None:
    procedure = Procedure(rules=RulePack.load(RULES), grammar=GRAMMAR, settings=ProcedureSettings(), emit=[].append)
    hub = ConsoleHub(procedure, grammar=GRAMMAR)
    with pytest.raises(ZeroDivisionError):
        hub.on_desk(lambda: 1 // 0)
    assert hub.on_desk(lambda: threading.current_thread().name) == "console-desk"
    hub.close()
    with pytest.raises(HubClosed, match="closed"):
        hub.feed(GRAMMAR.utterance(1.0, 2.0, Role.CALLER, "B seven"))
    with pytest.raises(TypeError, match="exactly one"):
        ConsoleHub(grammar=GRAMMAR)
    desks = threading.active_count()
    with pytest.raises(StoreError):
        ConsoleHub(procedure_factory=lambda emit: Store.open(Path("/nonexistent/dir/hall.db")), grammar=GRAMMAR)
    assert threading.active_count() == desks
