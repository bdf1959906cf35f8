"""The console web app (Starlette): the pages, the state as JSON, live updates by WebSocket, operator actions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from .actions import ConsoleInputError, read_ball, read_plan, read_valid, read_winner
from .hub import ConsoleHub

STATIC = Path(__file__).resolve().parent / "static"

Action = Callable[[Mapping[str, object]], object]


def create_app(hub: ConsoleHub) -> Starlette:
    """The console for one hub: `/` the master board, `/flashboard` the players' view, `/api/...` the rest."""

    async def console(request: Request) -> Response:
        return FileResponse(STATIC / "console.html")

    async def flashboard(request: Request) -> Response:
        return FileResponse(STATIC / "flashboard.html")

    async def state(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(hub.snapshot))

    async def live(websocket: WebSocket) -> None:
        await websocket.accept()
        subscription, snapshot = hub.subscribe()

        async def send_updates() -> None:
            await websocket.send_json({"type": "update", "events": [], "state": snapshot})
            while True:
                await websocket.send_json(await subscription.get())

        async def until_closed(scope: anyio.CancelScope) -> None:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    scope.cancel()
                    return

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(until_closed, group.cancel_scope)
                await send_updates()
        except (WebSocketDisconnect, RuntimeError):
            pass  # the page went away mid-send
        finally:
            hub.unsubscribe(subscription)

    def action(take: Action) -> Callable[[Request], object]:
        async def endpoint(request: Request) -> Response:
            # JSON only: a plain cross-site form post cannot key a ball on the hall's console.
            if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
                return JSONResponse({"error": "send the action as application/json"}, status_code=415)
            try:
                data = await request.json()
            except ValueError:
                return JSONResponse({"error": "the action is not valid JSON"}, status_code=400)
            if not isinstance(data, dict):
                return JSONResponse({"error": "the action must be a JSON object"}, status_code=400)
            try:
                await run_in_threadpool(take, data)
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
        Route("/flashboard", flashboard),
        Route("/api/state", state),
        WebSocketRoute("/api/live", live),
        Route("/api/board", action(key_ball), methods=["POST"]),
        Route("/api/game", action(start_game), methods=["POST"]),
        Route("/api/claim", action(claim_result), methods=["POST"]),
        Route("/api/winner", action(winner), methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes)


def make_server(hub: ConsoleHub, host: str = "127.0.0.1", port: int = 8765) -> uvicorn.Server:
    """The uvicorn server for the console (port 0 picks a free port; read it from `server.servers`)."""
    config = uvicorn.Config(
        create_app(hub),
        host=host,
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


def serve(hub: ConsoleHub, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the console until interrupted (blocking); run the pipeline in a thread beside it."""
    make_server(hub, host, port).run()


__all__ = ["ConsoleInputError", "create_app", "make_server", "serve"]
