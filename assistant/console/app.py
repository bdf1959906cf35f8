"""The console web app (Starlette): the pages, the state as JSON, live updates by WebSocket, operator actions."""

from __future__ import annotations

import errno
import hmac
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..report import render_html
from ..store import Store
from .access import OPEN, Access, Operator, RecordUsers, Refused
from .actions import ConsoleInputError, read_ball, read_plan, read_valid, read_winner
from .hub import ConsoleHub
from .view import flashboard_json, flashboard_message

STATIC = Path(__file__).resolve().parent / "static"

Action = Callable[[Mapping[str, object]], object]
T = TypeVar("T")
SESSION_ENDED = 4401
"""The live feed's close code when the page's session has ended (or there is none): the page goes to the login."""
RECHECK = 5.0
"""Seconds between checks of a live page's session: a user removed or logged out elsewhere loses the feed."""
COOKIE = "bingo_session"
SHOWN_ACCESS = 500
"""The inspector's page lists this many of the newest access records."""
_ACTION_FIELDS: dict[str, tuple[str, ...]] = {
    "board": ("ball",),
    "game": ("type", "balls", "cards_sold", "prize", "last_ball_required", "pattern"),
    "claim": ("valid",),
    "winner": ("name", "contact", "prize", "tax_document"),
}
"""What the journal keeps of each action's request: the fields the action reads."""


def _kept(action: str, data: Mapping[str, object]) -> dict[str, object]:
    kept: dict[str, object] = {}
    for name in _ACTION_FIELDS[action]:
        value = data.get(name)
        kept[name] = value if value is None or isinstance(value, bool) else str(value)[:200]
    return kept


def _address(connection: Request | WebSocket) -> str:
    return connection.client.host if connection.client is not None else "unknown"


def _same_origin(connection: Request | WebSocket) -> bool:
    """No Origin header (not a browser), or the page's own: a page of another site cannot act here."""
    origin = connection.headers.get("origin")
    if origin is None:
        return True
    scheme = "https" if connection.url.scheme in ("https", "wss") else "http"
    return origin == f"{scheme}://{connection.headers.get('host', '')}"


def create_app(hub: ConsoleHub, access: Access | None = None) -> Starlette:
    """The console for one hub: `/` the master board, `/flashboard` the players' view, `/login`, `/records` the
    inspector's, `/api/...` the rest. Without `access` the console is open (no users, as on loopback)."""
    gate = access or Access(RecordUsers(None))

    async def operator_of(connection: Request | WebSocket) -> Operator:
        return await run_in_threadpool(gate.session, connection.cookies.get(COOKIE))

    def to_login(request: Request) -> Response:
        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)

    async def console(request: Request) -> Response:
        try:
            await operator_of(request)
        except Refused:
            return to_login(request)
        return FileResponse(STATIC / "console.html")

    async def login_page(request: Request) -> Response:
        if await run_in_threadpool(gate.is_open):
            return RedirectResponse("/", status_code=303)
        return FileResponse(STATIC / "login.html")

    async def records_page(request: Request) -> Response:
        try:
            operator = await operator_of(request)
        except Refused:
            return to_login(request)
        if not operator.reads("records"):
            return PlainTextResponse(f"a {operator.role} does not read the records", status_code=403)
        return FileResponse(STATIC / "records.html")

    async def flashboard(request: Request) -> Response:
        return FileResponse(STATIC / "flashboard.html")

    def refused_json(refused: Refused) -> Response:
        return JSONResponse({"error": refused.reason, "login": refused.status == 401}, status_code=refused.status)

    async def me(request: Request) -> Response:
        try:
            return JSONResponse((await operator_of(request)).to_json())
        except Refused as refused:
            return refused_json(refused)

    async def read_json(request: Request) -> dict[str, object] | Response:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            # JSON only: a plain cross-site form post cannot act on the hall's console.
            return JSONResponse({"error": "send the action as application/json"}, status_code=415)
        try:
            data = await request.json()
        except ValueError:
            return JSONResponse({"error": "the action is not valid JSON"}, status_code=400)
        if not isinstance(data, dict):
            return JSONResponse({"error": "the action must be a JSON object"}, status_code=400)
        return data

    async def login(request: Request) -> Response:
        if not _same_origin(request):
            return JSONResponse({"error": "forged login: sent from another site"}, status_code=403)
        data = await read_json(request)
        if isinstance(data, Response):
            return data
        name, password = data.get("name"), data.get("password")
        if not isinstance(name, str) or not isinstance(password, str) or not name.strip() or not password:
            return JSONResponse({"error": "give a user name and a password"}, status_code=400)
        try:
            operator, token = await run_in_threadpool(gate.login, name, password, _address(request))
        except Refused as refused:
            return refused_json(refused)
        response = JSONResponse(operator.to_json())
        response.set_cookie(
            COOKIE, token, max_age=int(gate.session_seconds) + 1, httponly=True, samesite="strict", path="/"
        )
        return response

    async def logout(request: Request) -> Response:
        try:
            operator = await operator_of(request)
        except Refused as refused:
            return refused_json(refused)
        if not _same_origin(request) or not hmac.compare_digest(request.headers.get("x-csrf-token", ""), operator.csrf):
            return JSONResponse({"error": "forged logout"}, status_code=403)
        await run_in_threadpool(gate.logout, operator, _address(request))
        response = JSONResponse({"ok": True})
        response.delete_cookie(COOKIE, path="/")
        return response

    async def state(request: Request) -> Response:
        try:
            await operator_of(request)
        except Refused as refused:
            return refused_json(refused)
        return JSONResponse(await run_in_threadpool(hub.snapshot))

    async def flashboard_state(request: Request) -> Response:
        return JSONResponse(flashboard_json(await run_in_threadpool(hub.snapshot)))

    async def stream(websocket: WebSocket, operator: Operator | None) -> None:
        """The state, then every update, until the page goes away or (4401) the operator's session ends: it expires,
        is logged out or its user removed (checked every RECHECK seconds). No operator: the public flashboard."""
        subscription, snapshot = hub.subscribe()
        ended: list[str] = []

        def shaped(message: dict[str, object]) -> dict[str, object]:
            return flashboard_message(message) if operator is None else message

        async def send_updates() -> None:
            await websocket.send_json(shaped({"type": "update", "events": [], "state": snapshot}))
            while True:
                await websocket.send_json(shaped(await subscription.get()))

        async def until_closed(scope: anyio.CancelScope) -> None:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    scope.cancel()
                    return

        async def until_ended(scope: anyio.CancelScope, expires: float) -> None:
            while True:
                await anyio.sleep(min(RECHECK, max(0.0, expires - time.time())) if expires else RECHECK)
                try:
                    await operator_of(websocket)
                except Refused as refused:
                    ended.append(refused.reason)
                    scope.cancel()
                    return

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(until_closed, group.cancel_scope)
                if operator is not None and operator.role != OPEN:
                    group.start_soon(until_ended, group.cancel_scope, operator.expires)
                await send_updates()
            if ended:
                await websocket.close(code=SESSION_ENDED, reason=ended[0][:120])
        except (WebSocketDisconnect, RuntimeError):
            pass  # the page went away mid-send
        finally:
            hub.unsubscribe(subscription)

    async def live(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            if not _same_origin(websocket):
                raise Refused(403, "a page of another site")
            operator = await operator_of(websocket)
        except Refused as refused:
            await websocket.close(code=SESSION_ENDED, reason=refused.reason[:120])
            return
        await stream(websocket, operator)

    async def flashboard_live(websocket: WebSocket) -> None:
        await websocket.accept()
        await stream(websocket, None)

    async def inspector(request: Request) -> Operator | Response:
        try:
            operator = await operator_of(request)
        except Refused as refused:
            return refused_json(refused)
        if not operator.reads("records"):
            return JSONResponse({"error": f"a {operator.role} does not read the records"}, status_code=403)
        if gate.records is None:
            return JSONResponse({"error": "this console keeps no record (serve without --db)"}, status_code=404)
        return operator

    def with_record(read: Callable[[Store, int | None], T]) -> Callable[[], T]:
        def run() -> T:
            assert gate.records is not None
            with Store.open(gate.records, readonly=True) as store:
                return read(store, gate.occasion if gate.occasion is not None else store.latest_occasion())

        return run

    async def verify(request: Request) -> Response:
        if isinstance(allowed := await inspector(request), Response):
            return allowed
        result = await run_in_threadpool(with_record(lambda store, _: store.verify()))
        return JSONResponse({"ok": result.ok, "checked": result.checked, "head": result.head, "text": str(result)})

    async def access_log(request: Request) -> Response:
        if isinstance(allowed := await inspector(request), Response):
            return allowed
        log = await run_in_threadpool(with_record(lambda store, _: store.access_log()))
        rows = [
            {"id": r.id, "occasion": r.occasion, "what": r.what, "at": r.recorded_at.isoformat(), **r.detail}
            for r in log[-SHOWN_ACCESS:]
        ]
        return JSONResponse({"access": rows})

    async def report(request: Request) -> Response:
        if isinstance(allowed := await inspector(request), Response):
            return allowed

        def render(store: Store, occasion: int | None) -> str:
            if occasion is None:
                return "<!doctype html><title>Report</title><p>The record holds no occasion.</p>"
            return render_html(store, occasion)

        return HTMLResponse(await run_in_threadpool(with_record(render)))

    def action(name: str, take: Action) -> Callable[[Request], object]:
        async def endpoint(request: Request) -> Response:
            address = _address(request)
            try:
                operator = await run_in_threadpool(
                    gate.action,
                    request.cookies.get(COOKIE),
                    request.headers.get("x-csrf-token"),
                    request.headers.get("x-action-id"),
                    _same_origin(request),
                    name,
                    address,
                )
            except Refused as refused:
                return refused_json(refused)
            data = await read_json(request)
            if isinstance(data, Response):
                return data
            done = {**operator.who(), "action": name, "address": address, "data": _kept(name, data)}

            def take_and_record() -> None:
                try:
                    take(data)
                except ValueError as exc:
                    gate.record("Action", {**done, "ok": False, "error": str(exc).splitlines()[0][:200]})
                    raise
                gate.record("Action", {**done, "ok": True})

            try:
                await run_in_threadpool(hub.on_desk, take_and_record)
            except ValueError as exc:  # ConsoleInputError, or the procedure refusing the input
                return JSONResponse({"error": str(exc).splitlines()[0]}, status_code=400)
            return JSONResponse({"ok": True, "state": await run_in_threadpool(hub.snapshot)})

        return endpoint

    def key_ball(data: Mapping[str, object]) -> object:
        return hub.key_ball(read_ball(data))

    def start_game(data: Mapping[str, object]) -> object:
        return hub.start_game(read_plan(data))

    def claim_result(data: Mapping[str, object]) -> object:
        return hub.claim_result(read_valid(data))

    def winner(data: Mapping[str, object]) -> object:
        name, contact, prize, tax_document = read_winner(data)
        return hub.record_winner(name, contact, prize, tax_document)

    routes = [
        Route("/", console),
        Route("/login", login_page),
        Route("/records", records_page),
        Route("/records/report", report),
        Route("/flashboard", flashboard),
        Route("/api/me", me),
        Route("/api/login", login, methods=["POST"]),
        Route("/api/logout", logout, methods=["POST"]),
        Route("/api/state", state),
        Route("/api/flashboard", flashboard_state),
        Route("/api/verify", verify),
        Route("/api/access", access_log),
        WebSocketRoute("/api/live", live),
        WebSocketRoute("/api/flashboard/live", flashboard_live),
        Route("/api/board", action("board", key_ball), methods=["POST"]),
        Route("/api/game", action("game", start_game), methods=["POST"]),
        Route("/api/claim", action("claim", claim_result), methods=["POST"]),
        Route("/api/winner", action("winner", winner), methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes)


def make_server(
    hub: ConsoleHub, host: str = "127.0.0.1", port: int = 8765, access: Access | None = None
) -> uvicorn.Server:
    """The uvicorn server for the console (port 0 picks a free port; read it from `server.servers`)."""
    config = uvicorn.Config(
        create_app(hub, access),
        host=host,
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


class BindError(Exception):
    """The console cannot listen where it was asked (a port in use, an address not of this machine)."""


def bind(host: str, port: int) -> socket.socket:
    """The console's listening socket, bound now (before the address is announced, before anything is recorded):
    a port in use or an address not of this machine is BindError, in one line."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise BindError(f"cannot serve on {host}: {exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a port left in TIME_WAIT binds
        sock.bind(address)
    except OSError as exc:
        sock.close()
        in_use = exc.errno == errno.EADDRINUSE
        taken = " (another program is serving on it: stop it, or give another --port)" if in_use else ""
        raise BindError(f"cannot serve on {host}:{port}: {exc.strerror}{taken}") from None
    return sock


def serve(
    hub: ConsoleHub,
    host: str = "127.0.0.1",
    port: int = 8765,
    access: Access | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Run the console until interrupted (blocking); run the pipeline in a thread beside it. `sock`: the socket
    `bind` gave (bound here when None)."""
    listening = sock if sock is not None else bind(host, port)
    make_server(hub, host, port, access).run(sockets=[listening])


__all__ = ["BindError", "ConsoleInputError", "bind", "create_app", "make_server", "serve"]
