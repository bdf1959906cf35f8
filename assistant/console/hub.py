"""The console hub: one way into the procedure for speech and operator alike, fanned out to every open page.

Speech arrives on the recognizer's thread and operator actions on the web server's threads; the procedure and
the store (an SQLite connection) want one thread. So every input is fed on the hub's own "desk" thread, in the
order it arrived; the view the pages see is guarded by a lock, and pages get updates through asyncio queues
filled with `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol, TypeVar

from ..grammar import Grammar
from ..messages import Ball, BoardKey, GamePlan, GameStart, Input, Output, Role, Utterance
from .actions import ConsoleInputError
from .view import PRIZE_CAP, ConsoleView, WinnerEntry, event_json

T = TypeVar("T")
Emit = Callable[[Output], None]

KEYED = ", keyed on the master board"
VALID_WORDS = "valid bingo" + KEYED
NOT_VALID_WORDS = "not a valid bingo" + KEYED
"""The caller's verdict keyed on the console: the grammar's B(4) / B(5) phrases, marked as keyed in the record."""


class Feeds(Protocol):
    """The procedure as the console uses it (a Procedure, or the pipeline's session that records and answers)."""

    def feed(self, item: Input) -> object: ...


class Subscription:
    """One open page: updates queued for it on its own event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[dict[str, object]] = asyncio.Queue()

    def push(self, message: dict[str, object]) -> bool:
        """Queue a message from any thread; False when the page's loop is gone."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, message)
        except RuntimeError:
            return False
        return True

    async def get(self) -> dict[str, object]:
        return await self.queue.get()


class HubClosed(RuntimeError):
    """The hub's desk thread has stopped: nothing more can be fed or asked."""


class ConsoleHub:
    """The master board console's state and its single way into the procedure.

    Give `procedure_factory`: it is called on the desk thread with the hub's `publish` as the emit callback,
    so whatever it opens there (the procedure, the store's SQLite connection) lives on the thread that feeds it.
    Or give a ready `procedure` whose outputs already reach `hub.publish`. Either way `feed` is the one funnel
    for speech and operator actions: the input is shown, then fed on the desk thread. Do not also publish the
    inputs from the pipeline's input hooks: `feed` shows each one once.

    `clock` gives session seconds for operator actions (the live audio's clock; default: seconds since the hub
    was made), never earlier than the last input; `winner_sink` takes the E(2)(c) entries (`store_winners`).
    """

    def __init__(
        self,
        procedure: Feeds | None = None,
        *,
        procedure_factory: Callable[[Emit], Feeds] | None = None,
        grammar: Grammar | None = None,
        winner_sink: Callable[[WinnerEntry], object] | None = None,
        clock: Callable[[], float] | None = None,
        history: int = 50,
        prize_cap: float = PRIZE_CAP,
    ) -> None:
        if (procedure is None) == (procedure_factory is None):
            raise TypeError("ConsoleHub needs exactly one of procedure or procedure_factory")
        self._lock = threading.RLock()
        self._depth = 0
        self._pending: list[dict[str, object]] = []
        self._subscribers: list[Subscription] = []
        self.view = ConsoleView(history=history, prize_cap=prize_cap)
        self.winner_sink = winner_sink
        self.grammar = grammar or Grammar.load()
        started = time.monotonic()
        self._clock = clock or (lambda: time.monotonic() - started)
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], Future[object]] | None] = queue.SimpleQueue()
        self._desk = threading.Thread(target=self._work, name="console-desk", daemon=True)
        self._desk.start()
        self.procedure: Feeds
        if procedure_factory is not None:
            factory = procedure_factory
            try:
                self.procedure = self.on_desk(lambda: factory(self.publish))
            except BaseException:
                self.close()
                raise
        elif procedure is not None:
            self.procedure = procedure

    # ----- the desk thread ------------------------------------------------------------------------

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            call, future = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # handed back to the caller's thread
                    future.set_exception(exc)

    def on_desk(self, call: Callable[[], T]) -> T:
        """Run `call` on the desk thread and return its result (its exception is raised here)."""
        if threading.current_thread() is self._desk:
            return call()
        if not self._desk.is_alive():
            raise HubClosed("the console hub is closed")
        future: Future[object] = Future()
        self._jobs.put((call, future))
        return future.result()  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the desk thread once the inputs already handed in are fed."""
        if self._desk.is_alive():
            self._jobs.put(None)
            self._desk.join()

    # ----- the funnel ------------------------------------------------------------------------------

    def feed(self, item: Input) -> None:
        """Show an input and feed it to the procedure (on the desk thread); pages get one update once it settles."""
        self.on_desk(lambda: self._feed(item))

    def _feed(self, item: Input) -> None:
        self._depth += 1
        try:
            self.publish(item)
            self.procedure.feed(item)
        finally:
            self._depth -= 1
            self._flush()

    def publish(self, item: Input | Output) -> None:
        """Show an input fed or an output emitted (display only: nothing is recorded or fed)."""
        with self._lock:
            if self.view.apply(item):
                self._pending.append(event_json(item))
        self._flush()

    def submit(self, item: Input) -> None:
        """An operator action from the page: the same way into the procedure (and its store) as speech."""
        if self.view.session_ended:
            raise ConsoleInputError("the session has ended: nothing more can be keyed")
        self.feed(item)

    # ----- operator actions -----------------------------------------------------------------------

    def now(self) -> float:
        """Session time for an operator action: never before the last input the procedure saw."""
        with self._lock:
            return max(self._clock(), self.view.last_time)

    def key_ball(self, ball: Ball) -> BoardKey:
        """A drawn ball keyed on the master board (`board: B7`)."""

        def key() -> BoardKey:
            item = BoardKey(time=self.now(), ball=ball)
            self.submit(item)
            return item

        return self.on_desk(key)

    def start_game(self, plan: GamePlan) -> GameStart:
        def start() -> GameStart:
            item = GameStart(time=self.now(), plan=plan)
            self.submit(item)
            return item

        return self.on_desk(start)

    def claim_result(self, valid: bool) -> Utterance:
        """The caller's verdict confirmed on the master board (B(8)): the caller's B(4) / B(5) words, marked keyed."""

        def rule() -> Utterance:
            game = self.view.game
            if game is None or game.claim is None or game.claim.valid is not None:
                raise ConsoleInputError("no claim is open: there is nothing to rule valid or not valid")
            t = self.now()
            item = self.grammar.utterance(t, t, Role.CALLER, VALID_WORDS if valid else NOT_VALID_WORDS)
            self.submit(item)
            return item

        return self.on_desk(rule)

    def record_winner(self, name: str, contact: str, prize: float, tax_document: str | None = None) -> WinnerEntry:
        """A winner's contact information for the current game's record (E(2)(c)), through the winner sink."""

        def record() -> WinnerEntry:
            game = self.view.game
            if game is None:
                raise ConsoleInputError("no game has been played: a winner belongs to a game")
            entry = WinnerEntry(game.number, name=name, contact=contact, prize=prize, tax_document=tax_document)
            if self.winner_sink is not None:
                self.winner_sink(entry)
            with self._lock:
                self.view.add_winner(entry)
                self._pending.append({"kind": "winner", **entry.to_json()})
            self._flush()
            return entry

        return self.on_desk(record)

    # ----- the pages ------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, object]:
        """The whole state for a new page: board, calls, count, game, claim panel, findings, prompts."""
        with self._lock:
            return self.view.snapshot()

    def subscribe(self) -> tuple[Subscription, dict[str, object]]:
        """Open a page's feed (call on its event loop): the state now, and every update after it."""
        subscription = Subscription(asyncio.get_running_loop())
        with self._lock:
            self._subscribers.append(subscription)
            return subscription, self.view.snapshot()

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    def _flush(self) -> None:
        """Send what changed once the feed on the desk has settled, so the state sent is whole."""
        with self._lock:
            if (self._depth > 0 and threading.current_thread() is self._desk) or not self._pending:
                return
            message: dict[str, object] = {"type": "update", "events": self._pending, "state": self.view.snapshot()}
            self._pending = []
            self._subscribers = [s for s in self._subscribers if s.push(message)]
