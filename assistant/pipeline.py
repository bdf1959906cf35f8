"""Wires the ports: audio source -> recognizer -> grammar -> procedure -> speaker, store, console, printer."""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TextIO

from .audio import AudioChunk, Recording, RecordingSource
from .endpoint import HALL_CUTTING, EndpointSettings
from .engines import WHISPER_ENGINES, make_recognizer
from .engines.base import Heard, Recognizer
from .grammar import Grammar
from .messages import (
    Ball,
    BoardKey,
    CallMade,
    CallWithdrawn,
    ClaimOpened,
    ClaimResolved,
    Doubt,
    Finding,
    GameClosed,
    GameOpened,
    GamePlan,
    GameStart,
    HeardForReview,
    Input,
    Output,
    Prompt,
    Role,
    SessionEnd,
    StepChanged,
    Tick,
    Utterance,
    time_of,
)
from .procedure import Procedure, RulePack
from .questions import answer
from .settings import Settings

QUESTION_INTENTS = ("ask-count", "ask-last", "ask-called", "ask-letter", "ask-not-called", "ask-repeat")
CHANNEL_ROLES = (Role.CALLER, Role.FLOOR)
"""Mono is the caller's microphone; stereo is left the caller, right the floor."""


def _fmt_time(t: float) -> str:
    minutes, seconds = divmod(t, 60)
    return f"{int(minutes):02d}:{seconds:04.1f}"


class EventPrinter:
    """Prints each call, claim, prompt and finding as it happens, one line each."""

    def __init__(self, out: TextIO = sys.stdout, grammar: Grammar | None = None) -> None:
        self.out = out
        self.grammar = grammar

    def heard(self, utterance: Utterance) -> None:
        flag = " (unsure)" if utterance.uncertain else ""
        self.out.write(f"{_fmt_time(utterance.start)}  {utterance.role.value:>6}: {utterance.text}{flag}\n")
        self.out.flush()

    def __call__(self, item: Output) -> None:
        line: str | None = None
        if isinstance(item, GameOpened):
            line = f"game {item.game}: {item.plan.type.value}"
        elif isinstance(item, CallMade):
            line = f"call {item.ball}"
        elif isinstance(item, CallWithdrawn):
            line = f"withdrawn {item.ball}"
        elif isinstance(item, ClaimOpened):
            held = f", holding {item.held_ball}" if item.held_ball else ""
            line = f"claim{held}"
        elif isinstance(item, ClaimResolved):
            verdict = "valid" if item.valid else "not valid"
            card = f" card {item.manufacturer or '?'}/{item.serial or '?'}"
            line = f"claim {verdict}{card}"
        elif isinstance(item, GameClosed):
            line = f"game {item.game} {item.status}"
        elif isinstance(item, Prompt):
            line = f'prompt: "{item.text}"'
        elif isinstance(item, Finding):
            line = f"FINDING {item.clause} {item.code} [{item.severity.value}]: {item.message} (heard: {item.heard!r})"
        elif isinstance(item, HeardForReview):
            line = f"for review: {item.role.value} {item.heard!r}: {item.reason}"
        if line is None:
            return
        time = getattr(item, "time", None)
        stamp = _fmt_time(time) if isinstance(time, float | int) else "     "
        self.out.write(f"{stamp}  {line}\n")
        self.out.flush()


@dataclass
class Session:
    """One occasion followed live or from a recording: every input goes through the procedure once."""

    procedure: Procedure
    grammar: Grammar
    sinks: list[Callable[[Output], None]] = field(default_factory=list)
    on_input: list[Callable[[Input], None]] = field(default_factory=list)
    last_prompt: Prompt | None = None

    @classmethod
    def create(cls, settings: Settings, grammar: Grammar, sinks: Sequence[Callable[[Output], None]] = ()) -> Session:
        session = cls(procedure=None, grammar=grammar, sinks=list(sinks))  # type: ignore[arg-type]
        session.procedure = Procedure(
            rules=RulePack.load(settings.procedure.rules),
            grammar=grammar,
            settings=settings.procedure,
            emit=session.emit,
        )
        return session

    def emit(self, item: Output) -> None:
        if isinstance(item, Prompt):
            self.last_prompt = item
        for sink in self.sinks:
            sink(item)

    def feed(self, item: Input) -> None:
        for hook in self.on_input:
            hook(item)
        self.procedure.feed(item)
        if isinstance(item, Utterance) and item.role is Role.CALLER and not item.uncertain:
            for meaning in item.meanings:
                if meaning.intent in QUESTION_INTENTS:
                    reply = answer(meaning, self.procedure.board, self.last_prompt, self.grammar, time=item.end)
                    if reply is not None:
                        self.emit(reply)

    def run(self, items: Iterable[Input]) -> None:
        for item in items:
            self.feed(item)


def heard_to_utterance(heard: Heard, role: Role, grammar: Grammar) -> Utterance:
    """What the recognizer heard, read by the grammar; words the grammar cannot place make it unsure."""
    utterance = grammar.utterance(
        heard.start,
        heard.end,
        role,
        heard.text,
        confidence=heard.confidence,
        uncertain=heard.uncertain,
        could_be=tuple(Ball(n) for n in heard.could_be),
    )
    if utterance.unknown and not utterance.uncertain:
        return replace(utterance, uncertain=True)
    return utterance


def role_intents(grammar: Grammar, role: Role) -> tuple[str, ...]:
    """The intents a channel can carry: the floor microphone hears the floor and the players."""
    roles = {role.value} | ({Role.PLAYER.value} if role is Role.FLOOR else set())
    return tuple(name for name, intent in grammar.intents.items() if roles & set(intent.roles))


def recognizer_from(settings: Settings, grammar: Grammar, options: dict[str, Any] | None = None) -> Recognizer:
    """The configured engine, with the hall's settings for it ([whisper], [endpoint]). `options`: keywords of
    `make_recognizer` that replace them (`settings`, `endpoint`: the benchmarks' --option)."""
    config = settings.recognizer
    options = dict(options or {})
    if config.engine in WHISPER_ENGINES:
        options.setdefault("settings", settings.whisper)
        options.setdefault("endpoint", settings.endpoint)
        return make_recognizer(config.engine, grammar, config.model, configured=config.whisper_model, **options)
    # pocketsphinx and vosk cut with the endpointer's own defaults: the hall's changes to the hall cutting apply.
    hall = settings.endpoint
    changed = {
        f.name: getattr(hall, f.name) for f in fields(hall) if getattr(hall, f.name) != getattr(HALL_CUTTING, f.name)
    }
    options.setdefault("endpoint", EndpointSettings(**changed))
    if config.engine == "pocketsphinx":
        from .engines.pocketsphinx_engine import PocketsphinxSettings

        options.setdefault("settings", PocketsphinxSettings(min_snr_db=config.min_snr_db))
        return make_recognizer(config.engine, grammar, config.model, **options)
    return make_recognizer(config.engine, grammar, config.model, configured=config.vosk_model, **options)


class _ChannelWorker:
    """One channel's recognizer on its own thread, fed one chunk at a time in lock-step with the others.

    The recognizer's `stream` pulls chunks; a chunk is handed over only when it asks for the next one,
    so once it asks, everything it heard up to the previous chunk is in `heard`. That keeps channels in
    time order and lets the procedure narrow the grammar before the next chunk is decoded.
    """

    def __init__(self, recognizer: Recognizer, role: Role) -> None:
        self.recognizer = recognizer
        self.role = role
        self.heard: queue.SimpleQueue[Heard] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self._chunk: AudioChunk | None = None
        self._have = threading.Semaphore(0)
        self._want = threading.Semaphore(0)
        self._ready = False
        """The recognizer asked for its next chunk and has not been given it yet."""
        self.fed_until = 0.0
        """End of the last chunk given."""
        self.origin: float | None = None
        """Stream time of the first chunk: the recognizer times what it hears from there (a resumed `listen`
        goes on from where its record stopped)."""
        self.gap_since: float | None = None
        """Start of the stretch the device has been away (chunks `missing`), while it lasts."""
        self.gaps: list[tuple[float, float]] = []
        """Stretches the device was away, not yet given out."""
        self._thread = threading.Thread(target=self._run, name=f"recognizer-{role.value}", daemon=True)
        self._thread.start()

    def _chunks(self) -> Iterator[AudioChunk]:
        while True:
            self._want.release()
            self._have.acquire()
            if self._chunk is None:
                return
            yield self._chunk

    def _run(self) -> None:
        try:
            for heard in self.recognizer.stream(self._chunks()):
                self.heard.put(heard)
        except BaseException as exc:  # handed to the main thread, which raises it
            self.error = exc
        finally:
            self._want.release()

    def wait_ready(self) -> None:
        if not self._ready:
            self._want.acquire()
            self._ready = True
        if self.error is not None:
            raise self.error

    def give(self, chunk: AudioChunk | None) -> None:
        self._ready = False
        self._chunk = chunk
        if chunk is not None:
            if self.origin is None:
                self.origin = chunk.start
            if chunk.missing and self.gap_since is None:
                self.gap_since = chunk.start
            elif not chunk.missing and self.gap_since is not None:
                self.gaps.append((self.gap_since, chunk.start))
                self.gap_since = None
            self.fed_until = chunk.end
        elif self.gap_since is not None:  # the stream ended while the device was away
            self.gaps.append((self.gap_since, self.fed_until))
            self.gap_since = None
        self._have.release()

    def quiet_until(self) -> float:
        """Stream time up to which this channel has given out everything it heard (call when ready)."""
        since = self.recognizer.pending_since
        origin = self.origin or 0.0
        pending = [t for t in (None if since is None else since + origin, self.gap_since) if t is not None]
        return min([*pending, self.fed_until])

    def unheard(self) -> list[Utterance]:
        """The device's gaps closed so far, each an unsure hearing of nothing: anything may have been said."""
        gaps, self.gaps = self.gaps, []
        return [Utterance(start, end, self.role, "", confidence=0.0, uncertain=True) for start, end in gaps]

    def finish(self) -> None:
        """End the stream, whatever happened: a recognizer that failed, or the other channel's, never hangs it."""
        with contextlib.suppress(BaseException):
            self.wait_ready()  # its error is raised below
        self.give(None)
        self._thread.join()
        if self.error is not None:
            raise self.error


def lockstep_inputs(
    channel_chunks: Iterable[Sequence[AudioChunk]],
    recognizers: Sequence[Recognizer],
    grammar: Grammar,
    due: Callable[[], float | None] | None = None,
    heard_until: dict[Role, float] | None = None,
) -> Generator[Utterance | Tick, None, None]:
    """Utterances of all channels in time order, while the audio streams (file or microphone), and time passing
    while nobody speaks: when `due()` (the procedure's next deadline) has come on the stream clock and every
    channel has given out all it heard before it, a `Tick`.
    Live, a prompt that is due ("Say it again") is said when it is due, not when the next words are heard.
    `heard_until`, when given, is kept at the stream time up to which each role's channel has given out all it
    heard: a session stopped before the stream ends (Ctrl-C) knows what it never heard."""
    workers = [_ChannelWorker(r, role) for r, role in zip(recognizers, CHANNEL_ROLES, strict=False)]

    def drain() -> list[Utterance]:
        found = []
        for worker in workers:
            while not worker.heard.empty():
                heard = worker.heard.get()
                if worker.origin:
                    heard = replace(heard, start=heard.start + worker.origin, end=heard.end + worker.origin)
                if heard.text or heard.uncertain:
                    found.append(heard_to_utterance(heard, worker.role, grammar))
            found += worker.unheard()
        return sorted(found, key=lambda u: (u.end, u.start))

    try:
        for step in channel_chunks:
            for worker in workers:
                worker.wait_ready()
                if heard_until is not None:
                    heard_until[worker.role] = worker.quiet_until()
            yield from drain()
            deadline = due() if due is not None else None
            if deadline is not None and workers:
                quiet = min(worker.quiet_until() for worker in workers)
                if quiet >= deadline:
                    yield Tick(quiet)
            for worker, chunk in zip(workers, step, strict=False):
                worker.give(chunk)
    finally:
        errors = []
        for worker in workers:
            try:
                worker.finish()
            except BaseException as exc:  # every channel is ended before the first failure is told
                errors.append(exc)
        if errors:
            raise errors[0]
    yield from drain()


def recording_chunks(recording: Recording, chunk_seconds: float = 0.1) -> Iterator[tuple[AudioChunk, ...]]:
    return RecordingSource(recording, chunk_seconds).steps()


Speech = Iterator[Utterance | Tick]
"""What the channels heard, in time order: the hearings, and time passing while nobody speaks."""


class Listening:
    """How every run hears a hall: one recognizer per channel (the caller's, then the floor's), each narrowed to
    what the procedure expects next, turning the hall's audio (a recording in memory, a file read block by block,
    the microphones) into the procedure's inputs in time order: the program's games as the speech shows them, the
    speech, the board's keys, time passing while nobody speaks, the session's end. `check`, `demo`, `serve`,
    `listen` and the lab's benchmarks all hear through it."""

    def __init__(self, recognizers: Sequence[Recognizer], grammar: Grammar) -> None:
        self.recognizers = list(recognizers)
        self.grammar = grammar
        for recognizer, role in zip(self.recognizers, CHANNEL_ROLES, strict=False):
            recognizer.set_step(role_intents(grammar, role))

    @classmethod
    def of(
        cls, channels: int, settings: Settings, grammar: Grammar, options: dict[str, Any] | None = None
    ) -> Listening:
        """The configured engine on each of `channels` channels (`options`: the benchmarks' --option)."""
        return cls([recognizer_from(settings, grammar, options) for _ in CHANNEL_ROLES[:channels]], grammar)

    def follow(self, session: Session, step: str | None = None) -> None:
        """The recognizers listen for the step the session's procedure is in, from `step` (where a record that
        was resumed left it) and as it changes."""
        follower = step_follower(self.recognizers, self.grammar)
        session.sinks.append(follower)
        if step is not None:
            follower(StepChanged(0.0, step, ()))

    def inputs(
        self,
        chunks: Iterable[Sequence[AudioChunk]],
        plans: Sequence[GamePlan] = (),
        *,
        keys: Sequence[BoardKey] = (),
        end: Callable[[], float] | float | None = None,
        due: Callable[[], float | None] | None = None,
        heard_until: dict[Role, float] | None = None,
        heard: Callable[[Speech], Speech] | None = None,
        begun: int = 0,
        calls: int = 0,
        doubts: tuple[Doubt, ...] = (),
    ) -> Generator[Input, None, None]:
        """The inputs of the audio `chunks` (one chunk per channel at a time). `plans`: the hall's program, whose
        games start as the speech shows them (`begun` of them, `calls` sure calls in the last, `doubts` carried
        from a resumed record); `keys`: the board's keys slotted in by time; `end`: the session's end (a time, or
        asked for when the audio is over); `due`, `heard_until`: as `lockstep_inputs`; `heard`: a look at (or a
        change of) what was heard before the program reads it."""
        channels = lockstep_inputs(chunks, self.recognizers, self.grammar, due=due, heard_until=heard_until)
        speech: Speech = heard(channels) if heard is not None else channels
        items = _ended(program_games(speech, plans, begun=begun, calls=calls, doubts=doubts), end)
        try:
            yield from merge_keys(items, keys) if keys else items
        finally:  # stopped early (Ctrl-C, a console closed): the channels' threads end now
            channels.close()

    def recording(
        self, recording: Recording, plans: Sequence[GamePlan] = (), **kwargs: Any
    ) -> Generator[Input, None, None]:
        """`inputs` of a recording in memory; it ends the session at its end."""
        return self.inputs(recording_chunks(recording), plans, end=recording.duration, **kwargs)

    def utterances(self, recording: Recording) -> Iterator[Utterance]:
        """What each channel of a recording heard, in time order (`transcribe`)."""
        return (item for item in self.inputs(recording_chunks(recording)) if isinstance(item, Utterance))


def _ended(items: Iterable[Input], end: Callable[[], float] | float | None) -> Iterator[Input]:
    yield from items
    if end is not None:
        yield SessionEnd(end() if callable(end) else end)


OPENING_INTENTS = frozenset({"last-ball-required", "last-ball-not-required", "ball-count", "cards-sold", "prize"})
"""What a caller says before the first ball of a game: heard after a game has had calls, the next game began."""
UNHEARD_END = "a game may have ended here unheard: this game's plan may be another's"
KEPT_PLAN_DOUBTS = 3
"""A game's plan doubts name the latest few such hearings, of it and the games before it."""


def program_games(
    utterances: Iterable[Utterance | Tick],
    plans: Sequence[GamePlan],
    begun: int = 0,
    calls: int = 0,
    doubts: tuple[Doubt, ...] = (),
) -> Iterator[Input]:
    """Start the games of the hall's program as the speech shows them: after a sure "this game is completed",
    or, when that was missed, at a sure opening announcement once the current game has had sure calls. A game's
    boundary is never a guess: every finding of the games after it would rest on it (an unsure "g forty eight"
    heard in the caller's greeting made the last-ball announcement after it open the next game).

    Which game of the program a boundary opens is known only as well as the boundaries before it: the caller's
    unsure speech since the last one may have ended a game unheard, and then the plan is another game's. Such
    a game starts with that hearing as its doubt (`GameStart.doubts`), and so do the games after it.

    `begun`, `calls`, `doubts`: for an occasion resumed from its record, the games of the program it had started,
    the sure calls of the last one and what makes its place unsure (with the stretch nobody listened); a fresh
    occasion (begun 0) starts the first game at once. Ticks pass through."""
    if plans and not begun:
        yield GameStart(0.0, plans[0])
    next_plan, calls_in_game = max(begun, 1), calls
    unsure: Utterance | None = None  # the caller's latest unsure hearing since the last boundary

    def start(at: float) -> GameStart:
        nonlocal next_plan, calls_in_game, doubts, unsure
        if unsure is not None:
            doubts = (*doubts[-(KEPT_PLAN_DOUBTS - 1) :], Doubt(unsure.start, unsure.role, unsure.text, UNHEARD_END))
        item = GameStart(at, plans[next_plan], doubts)
        next_plan, calls_in_game, unsure = next_plan + 1, 0, None
        return item

    for utterance in utterances:
        if isinstance(utterance, Tick):
            yield utterance
            continue
        intents = {m.intent for m in utterance.meanings}
        sure = not utterance.uncertain
        opens = bool(intents & OPENING_INTENTS) and sure and calls_in_game > 0
        if opens and next_plan < len(plans):
            yield start(utterance.start)
        yield utterance
        calls_in_game += "call" in intents and utterance.role is Role.CALLER and sure
        if "game-completed" in intents and sure and next_plan < len(plans):
            yield start(utterance.end)
        elif utterance.role is Role.CALLER and not sure:
            unsure = utterance


def merge_keys(inputs: Iterable[Input], keys: Sequence[BoardKey]) -> Iterator[Input]:
    """Board keys slotted into the audio's inputs by time: a key goes before the first utterance that starts
    after it (and before the session end)."""
    pending = sorted(keys, key=lambda k: k.time)
    i = 0
    for item in inputs:
        if isinstance(item, Utterance | SessionEnd):
            at = time_of(item)
            while i < len(pending) and (pending[i].time <= at or isinstance(item, SessionEnd)):
                yield pending[i]
                i += 1
        yield item
    yield from pending[i:]


def step_follower(recognizers: Sequence[Recognizer], grammar: Grammar) -> Callable[[Output], None]:
    """Narrow each recognizer to what the procedure expects next (per-step grammars)."""

    def follow(item: Output) -> None:
        if isinstance(item, StepChanged):
            for recognizer, role in zip(recognizers, CHANNEL_ROLES, strict=False):
                allowed = set(role_intents(grammar, role))
                recognizer.set_step([i for i in grammar.step_intents(item.step) if i in allowed])

    return follow


def plans_from(path: Path | None) -> list[GamePlan]:
    if path is None:
        return []
    from .script import parse_plan, read_text

    return parse_plan(read_text(path))  # as editors save it: a byte-order mark, UTF-16, CRLF
