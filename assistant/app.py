"""The verbs of bingo-assistant, each wiring the ports for one job. The CLI (__main__) calls these."""

from __future__ import annotations

import argparse
import getpass
import ipaddress
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TextIO

from .audio import (
    RATE,
    AudioChunk,
    AudioError,
    Devices,
    FileSource,
    MicrophoneSource,
    channels_heard,
    is_audio,
    read_wav,
)
from .engines import EngineError
from .gate import SelfHearingGate
from .grammar import Grammar, GrammarError
from .messages import (
    Doubt,
    GameStart,
    Input,
    OccasionRecord,
    Output,
    Prompt,
    Role,
    SessionEnd,
    Tick,
    Utterance,
    end_of,
    time_of,
)
from .pipeline import (
    CHANNEL_ROLES,
    UNHEARD_END,
    EventPrinter,
    Listening,
    Session,
    Speech,
    plans_from,
)
from .procedure import RuleError, RulePack, write_diagram
from .progress import Progress, with_progress
from .report import ReportData, render_json, render_occasions, render_text, summarize
from .script import ScriptError, parse_plan, read_board, read_script
from .settings import ROOT, Settings
from .speaker import Speaker, SpeakerError, make_speaker
from .store import Journal, RecordLocation, Store, StoreError, check_user, is_server
from .store.postgres import ServerRecord
from .store.replica import Replica

FIXTURES = ROOT / "audio_fixtures"
DEMO_GAMES = {"compliant": "demo_game", "faulty": "demo_violation"}


class UsageError(Exception):
    """The command cannot run with what it was given."""


class IncompleteInput(Exception):
    """The input held less than a session (nothing heard on a channel, a truncated file): the report of what it
    held is printed and recorded, with what was missing; never compliant."""


def input_errors() -> tuple[type[Exception], ...]:
    """Errors that mean unusable input: the CLI prints their one line and exits 2."""
    return (
        AudioError,
        EngineError,
        GrammarError,
        IncompleteInput,
        RuleError,
        ScriptError,
        SpeakerError,
        StoreError,
        FileNotFoundError,
    )


class _Run:
    """What one check/demo/listen run writes to: printer, store (through its journal), voice, prompt list."""

    def __init__(self, settings: Settings, grammar: Grammar, *, source: str, printer: bool) -> None:
        self.settings = settings
        self.grammar = grammar
        self.source = source
        self.stack = ExitStack()
        self.prompts: list[Prompt] = []
        self.printer = EventPrinter(sys.stdout, grammar) if printer else None
        self.store: Store | None = None
        self.journal: Journal | None = None
        self.occasion_id: int | None = None
        self.speaker: Speaker = make_speaker("silent", settings.voice, None)

    def open_store(
        self, db: RecordLocation | None, resume: bool, *, finished: bool = False, ship_to: str | None = None
    ) -> bool:
        """Open the record and the occasion to journal into; True when it continues one already recorded.

        --resume continues the last unfinished occasion of this source. A process killed before it stored
        anything (no file, an empty or half-created one, no occasion yet) left nothing to continue: the run
        starts afresh, silently, and the record ends as a clean run's. With `finished`, an occasion of this
        source closed already (killed after closing, before it exited) is replayed against its record, which
        must agree and is left as it is. `ship_to`: the file is also shipped to that hall's chain on a server.
        """
        if db is None:
            if resume:
                raise UsageError("--resume needs --db")
            if ship_to is not None:
                raise UsageError("--ship-to ships the record file: give --db FILE")
            return False
        self.store = Store.open(db)
        self.stack.callback(self.store.close)
        if ship_to is not None:
            self._ship(db, ship_to)
        occasion = self.store.latest_open_occasion(self.source) if resume else None
        if occasion is None and resume and finished:
            occasion = self.store.latest_occasion(self.source)
        resumed = occasion is not None
        self.occasion_id = occasion if occasion is not None else self.store.start_occasion(source=self.source)
        self.journal = Journal(self.store, self.occasion_id)
        return resumed

    def use_speaker(
        self,
        mode: str,
        out: Path | None,
        gate: SelfHearingGate | None = None,
        clock: Callable[[], float] | None = None,
    ) -> str:
        """Open the voice; "auto" is the sound device when there is one, otherwise the WAV file `out`."""
        voice = self.settings.voice
        if mode == "auto":
            try:
                self.speaker = make_speaker("live", voice, None, gate=gate, clock=clock)
                mode = "live"
            except SpeakerError:
                self.speaker = make_speaker("wav", voice, out, gate=gate)
                mode = "wav"
        else:
            self.speaker = make_speaker(mode, voice, out, gate=gate, clock=clock)
        self.stack.callback(self.speaker.close)
        return mode

    def session(self) -> Session:
        targets: list[Callable[[Output], None]] = [self._speak]
        if self.printer is not None:
            targets.append(self.printer)
        sinks = [self.journal.forward(*targets)] if self.journal is not None else targets
        session = Session.create(self.settings, self.grammar, sinks)
        session.on_input.append(self._record_input)
        return session

    def resume(self, session: Session) -> float | None:
        """Replay what the record holds; the journal passes on only what a crash cut off. Returns the stream time
        the record reached, or None when it holds nothing."""
        if self.journal is None:
            return None
        stored = self.journal.recorded_inputs()
        session.run(stored)
        return max((end_of(i) for i in stored), default=None)

    def _record_input(self, item: Input) -> None:
        new = self.journal.input(item) if self.journal is not None else True
        if new and isinstance(item, Utterance) and self.printer is not None:
            self.printer.heard(item)

    def microphone(self, role: Role, kind: str, at: float) -> None:
        """Tell the caller aloud that a microphone's sound is lost, or back (`MicrophoneSource`'s alert)."""
        lost = kind == "lost"
        text = f"{role.value.capitalize()} microphone {'lost' if lost else 'back'}"
        self._speak(Prompt(time=at, text=text, kind=f"microphone-{kind}", priority=3 if lost else 1))

    def record_name(self, db: RecordLocation | None) -> str:
        """The record in full with its occasion, for standard error; "" without a record."""
        if db is None:
            return ""
        return f"{db} (occasion {self.occasion_id})" if self.occasion_id is not None else str(db)

    def tell_record_kept(self, db: RecordLocation | None, at: float) -> str:
        """Where the record was kept, said aloud by its name on exit ("Record kept in hall.db"); returns it in full.
        At the start it is printed, not said: a voice then would be said over the caller's first words."""
        if db is None:
            return ""
        where = "the hall's record on the server" if is_server(db) else Path(db).name
        self._speak(Prompt(time=at, text=f"Record kept in {where}", kind="record-kept", priority=0))
        return self.record_name(db)

    def _speak(self, item: Output) -> None:
        if isinstance(item, Prompt):
            self.prompts.append(item)
            self.speaker.say(item)

    def _ship(self, db: RecordLocation, url: str) -> None:
        """Ship the record file to the server in the background; at the end, what is left is tried for a while."""
        if is_server(db):
            raise UsageError("--ship-to ships a record file: --db is the server already")
        if not is_server(url):
            raise UsageError(f"--ship-to takes a postgresql://HOST/DB?hall=NAME URL, not {url}")
        ServerRecord(url)  # a bad URL is told now, not as a server that is down

        def say(text: str) -> None:
            print(text, file=sys.stderr, flush=True)

        replica = Replica(Path(db), url, say=say)
        replica.start()

        def finish() -> None:
            if not replica.stop(flush_seconds=10.0) and replica.refused is None:
                say(f"record server unreachable: the rest of {db} is kept there; the next run with --ship-to ships it")
            replica.close()

        self.stack.callback(finish)

    def finish(self, session: Session, prompts_json: Path | None) -> None:
        if self.store is not None and self.occasion_id is not None:
            self.store.close_occasion(self.occasion_id, record=session.procedure.occasion)
        self.speaker.close()
        if prompts_json is not None:
            rows = self.speaker.prompts_json()
            prompts_json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def _script_inputs(path: Path, grammar: Grammar) -> list[Input]:
    items = read_script(path, grammar)
    if not items or not isinstance(items[-1], SessionEnd):
        last = max((end_of(i) for i in items), default=0.0)
        items.append(SessionEnd(last))
    return items


CALL_INTENTS = frozenset({"call", "bad-call"})
"""What makes a game heard: the caller calling a ball (a mis-call too), sure or unsure."""


def _calls_a_ball(item: Input) -> bool:
    return (
        isinstance(item, Utterance)
        and item.role is Role.CALLER
        and any(m.intent in CALL_INTENTS for m in item.meanings)
    )


@dataclass
class _Heard:
    """What a recording's channels gave: whose channel spoke (any stretch of voice, understood or not), and whether
    the caller called a ball."""

    roles: set[Role] = field(default_factory=set)
    call: bool = False


def _speech_of(items: Speech, heard: _Heard) -> Speech:
    """The hearings as they come, noted in `heard`."""
    for item in items:
        if isinstance(item, Utterance):
            heard.roles.add(item.role)
            heard.call = heard.call or _calls_a_ball(item)
        yield item


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _nothing_heard(items: Sequence[Input], path: Path) -> None:
    """A transcript with no line of the caller's, or none calling a ball, holds no game: ScriptError, never a
    compliant session."""
    if not any(isinstance(i, Utterance) and i.role is Role.CALLER for i in items):
        raise ScriptError(f"no speech heard: {path} holds no line of the caller's (no game to check)")
    if not any(_calls_a_ball(i) for i in items):
        raise ScriptError(f"no call heard: {path} holds no call of a ball by the caller (no game to check)")


def check(args: argparse.Namespace, settings: Settings) -> int:
    """Check a recorded session. On --resume the whole session is fed again: the journal keeps what the
    record already holds (it must match) and records only what a crash cut off, whenever the crash came.

    Nothing heard is never compliant. A transcript with no line of the caller's, or no call, is refused before
    anything is recorded. A recording that held less than a session (no speech on a channel heard, no call on the
    caller's, a file cut short) is reported with what was missing, recorded so, and ends in IncompleteInput (exit
    2, its one line)."""
    grammar = Grammar.load(settings.recognizer.grammar)
    run = _Run(settings, grammar, source=str(args.session.resolve()), printer=not (args.json or args.quiet))
    with run.stack:
        # a recording (told by its content) is read block by block: steady memory on a four-hour occasion
        recorded = is_audio(args.session)
        source = FileSource(args.session, channels=channels_heard(args.session, args.channels)) if recorded else None
        if source is None and args.plan is not None:
            raise UsageError("--plan is for recordings: a transcript script carries its own @game lines")
        if source is None and args.board is not None:
            raise UsageError("--board is for recordings: a transcript script carries its own board lines")
        if source is None and args.channels is not None:
            raise UsageError("--channels is for recordings: a transcript names who speaks on each line")
        keys = read_board(args.board, grammar) if args.board is not None else []
        script = _script_inputs(args.session, grammar) if source is None else []
        if source is None:
            _nothing_heard(script, args.session)
        run.open_store(args.db, args.resume, finished=True, ship_to=args.ship_to)
        if args.voice_out is not None:
            run.use_speaker("wav", args.voice_out)
        session = run.session()
        missing: list[str] = []
        if source is not None:
            shown = not args.quiet and sys.stderr.isatty()
            chunks = with_progress(source, Progress(source.duration)) if shown else source.steps()
            roles = CHANNEL_ROLES[: source.channels]
            listening = Listening.of(source.channels, settings, grammar)
            listening.follow(session)
            heard = _Heard()

            def ended() -> float:  # a file cut short ends where it was read to
                return source.now() if source.shortfall() is not None else source.duration

            session.run(
                listening.inputs(
                    chunks, plans_from(args.plan), keys=keys, end=ended, heard=lambda speech: _speech_of(speech, heard)
                )
            )
            end = ended()
            shortfall = source.shortfall()
            if shortfall is not None:
                missing.append(shortfall)
            missing.extend(
                f"no speech heard in {_clock(end)} of the {r.value}'s channel" for r in roles if r not in heard.roles
            )
            if Role.CALLER in heard.roles and not heard.call:
                missing.append(f"no call heard in {_clock(end)} of the caller's channel")
            session.procedure.occasion.incomplete.extend(missing)
        else:
            session.run(script)
        run.finish(session, args.prompts_json)
        occasion = session.procedure.occasion
        status = _verdict(occasion, as_json=args.json)
        if missing:
            sys.stdout.flush()
            raise IncompleteInput("; ".join(missing))
        return status


def _verdict(occasion: OccasionRecord, *, as_json: bool = False) -> int:
    """Print the occasion's report (text, or the JSON contract) and return the exit status `check`, `listen` and
    `serve` share (`Summary.exit_status`: 1 when the occasion has findings)."""
    print(render_json(occasion) if as_json else render_text(occasion))
    return summarize(occasion).exit_status


def demo(args: argparse.Namespace, settings: Settings) -> int:
    grammar = Grammar.load(settings.recognizer.grammar)
    name = DEMO_GAMES[args.game]
    wav, script = FIXTURES / f"{name}.wav", FIXTURES / f"{name}.txt"
    plan_lines = [line for line in script.read_text(encoding="utf-8").splitlines() if line.startswith("@game")]
    plans = parse_plan("\n".join(plan_lines))
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    db = out / "demo.db"
    for stale in (db, db.with_suffix(".db-wal"), db.with_suffix(".db-shm")):
        stale.unlink(missing_ok=True)
    voice_wav: Path = args.voice_out or out / "demo-voice.wav"
    run = _Run(settings, grammar, source=str(wav), printer=True)
    with run.stack:
        run.open_store(db, resume=False)
        mode = run.use_speaker(settings.voice.mode, voice_wav)
        print(f"demo: {wav.name} through {settings.recognizer.engine}, the NM 15.4.7.11 procedure, voice: {mode}")
        session = run.session()
        recording = read_wav(wav)
        listening = Listening.of(len(recording.channels), settings, grammar)
        listening.follow(session)
        session.run(listening.recording(recording, plans))
        run.finish(session, args.prompts_json or out / "demo-prompts.json")
    report_html, report_json = out / "demo-report.html", out / "demo-report.json"
    with Store.open(db, readonly=True) as store:
        data = ReportData.load(store, _latest(store, None))
    report_html.write_text(data.render("html"), encoding="utf-8")
    report_json.write_text(data.render("json"), encoding="utf-8")
    print(data.render("text"), end="")
    print(f"record: {db}\nreport: {report_html}\njson:   {report_json}")
    if mode == "wav":
        print(f"voice:  {voice_wav} (no sound device here: prompts were written to this file)")
    return data.summary.exit_status


def transcribe(args: argparse.Namespace, settings: Settings) -> int:
    grammar = Grammar.load(settings.recognizer.grammar)
    recording = read_wav(args.audio, channels=channels_heard(args.audio, args.channels))
    if recording.shortfall is not None:
        print(f"bingo-assistant: {recording.shortfall}", file=sys.stderr)
    listening = Listening.of(len(recording.channels), settings, grammar)
    if len(recording.channels) == 1:  # one voice on one channel: it may say what any role says
        listening.recognizers[0].set_step(tuple(grammar.intents))
    for utterance in listening.utterances(recording):
        call = next((str(m.ball) for m in utterance.meanings if m.intent == "call" and m.ball), None)
        if args.json:
            row: dict[str, object] = {
                "start": round(utterance.start, 2),
                "end": round(utterance.end, 2),
                "text": utterance.text,
                "call": call,
                "role": utterance.role.value,
                "confidence": round(utterance.confidence, 3),
                "uncertain": utterance.uncertain,
                "could_be": [str(b) for b in utterance.could_be],
            }
            print(json.dumps(row))
        else:
            print(utterance.text if utterance.text else "[not understood]")
    return 0


def listen(args: argparse.Namespace, settings: Settings) -> int:
    grammar = Grammar.load(settings.recognizer.grammar)
    gate = SelfHearingGate(margin_after=1.0)  # a hall's reverberation: double talk is kept (gate.filter)
    hall = _Microphones(settings, grammar, alert=lambda role, kind, at: run.microphone(role, kind, at))
    plans = plans_from(args.plan)
    run = _Run(settings, grammar, source="live", printer=True)
    with run.stack:
        run.open_store(args.db or settings.store.db, args.resume, ship_to=args.ship_to)
        run.use_speaker(settings.voice.mode, args.voice_out, gate=gate, clock=hall.now)
        record = run.record_name(args.db or settings.store.db)
        session = run.session()
        until = run.resume(session)
        at = 0.0 if until is None else until + RESUME_GAP
        if until is not None:  # nobody listened in between: anything may have been said
            for role in hall.roles:
                session.feed(Utterance(until, at, role, "", confidence=0.0, uncertain=True))
        # the recognizers listen for the step the record reached, if any, and follow the procedure from there
        hall.listening.follow(session, session.procedure.step if until is not None else None)
        games = session.procedure.occasion.games  # a resumed occasion goes on with its program
        sure_calls = len(games[-1].calls) if games else 0
        doubts = session.procedure.plan_doubts
        if until is not None and games:  # a game may have ended while nobody listened
            doubts = (*doubts, Doubt(until, Role.CALLER, "", UNHEARD_END))
        heard_until: dict[Role, float] = {}
        timings = (
            run.stack.enter_context(open(args.timings, "w", encoding="utf-8"))  # noqa: SIM115
            if args.timings is not None
            else None
        )

        def heard(speech: Speech) -> Speech:  # our own voice's echo made unsure; each verdict's time, if asked
            doubted: Speech = (gate.doubt(i) if isinstance(i, Utterance) else i for i in speech)
            return _timed(doubted, hall.now, timings) if timings is not None else doubted

        inputs = hall.listening.inputs(
            hall.start(gate, at),
            plans,
            due=lambda: session.procedure.next_due,
            heard_until=heard_until,
            heard=heard,
            begun=len(games),
            calls=sure_calls,
            doubts=doubts,
        )
        kept = f" in {record}" if record else ""
        print(f"listening: Ctrl-C ends the session (the record is kept{kept})", file=sys.stderr)
        try:
            with suppress(KeyboardInterrupt):
                session.run(inputs)
        finally:
            stopped = hall.now()  # what the devices had given when the session was stopped
            inputs.close()  # the recognizers' threads end
            hall.close()  # and the devices stop
        end = hall.now()
        for role, since in heard_until.items():
            if stopped - since < UNHEARD_TAIL:
                continue
            # stopped while listening lagged behind the devices, or in the middle of speech: what the hall said
            # after `since` was never heard, and anything may have been said in it (never a violation's absence)
            session.feed(Utterance(since, end, role, "", confidence=0.0, uncertain=True))
        session.feed(SessionEnd(end))
        if record:
            print(f"record: kept in {run.tell_record_kept(args.db or settings.store.db, end)}", file=sys.stderr)
        run.finish(session, args.prompts_json)
        return _verdict(session.procedure.occasion)


def _timed(items: Iterator[Utterance | Tick], now: Callable[[], float], out: TextIO) -> Iterator[Utterance | Tick]:
    """The items as they come; for each hearing, a JSON line with its end of speech and the device time its
    verdict is made at (the procedure takes it as soon as it is given out)."""
    for item in items:
        if isinstance(item, Utterance):
            row = {"role": item.role.value, "start": round(item.start, 3), "end": round(item.end, 3)}
            row |= {"verdict": round(now(), 3), "uncertain": item.uncertain, "text": item.text}
            out.write(json.dumps(row) + "\n")
            out.flush()
        yield item


RESUME_GAP = 1.0
"""Seconds of stream time put between what the record of a killed `listen` holds and what `--resume` hears: the
time it was down is not known, and it stands in the record as an unsure hearing of every channel."""
UNHEARD_TAIL = 1.0
"""Seconds of a channel's audio not yet heard when `listen` is stopped (listening behind the devices, or speech
under way) from which that stretch stands in the record as an unsure hearing of the channel's role (a word under
way moves it back to where the word began; a shorter tail is the devices' blocks in flight). Under load a
stopped `listen` had not heard the caller's last 8 s ("are there any other bingos?", "this game is completed") and
made two B(9) violations of their absence."""


class _Microphones:
    """The caller's microphone (and the floor's, when configured) with a recognizer each. Made before anything is
    recorded, so a missing device stops `listen` with nothing written."""

    def __init__(
        self, settings: Settings, grammar: Grammar, alert: Callable[[Role, str, float], None] | None = None
    ) -> None:
        """`alert`: told (role, "lost" or "back", stream time) when a microphone's sound is lost and when it is
        back (`MicrophoneSource`'s alert), to tell the caller aloud."""
        audio = settings.audio
        floor = audio.floor_device

        def device(name: str | None, roles: tuple[Role, ...]) -> MicrophoneSource:
            def told(kind: str, channel: int, at: float) -> None:
                if alert is not None:
                    alert(roles[channel], kind, at)

            return MicrophoneSource(name, len(roles), rate=audio.device_rate, max_behind=audio.max_behind, alert=told)

        if floor == "right":  # one device, two channels: left the caller, right the floor
            sources = [device(audio.caller_device, (Role.CALLER, Role.FLOOR))]
        else:
            sources = [device(audio.caller_device, (Role.CALLER,))]
            if floor:
                sources.append(device(floor, (Role.FLOOR,)))
        self.devices = Devices(sources)
        self.roles = (Role.CALLER, Role.FLOOR)[: self.devices.channels]
        self.listening = Listening.of(self.devices.channels, settings, grammar)

    def now(self) -> float:
        """The caller's device clock: seconds it has delivered (stream time)."""
        return self.devices.now()

    def close(self) -> None:
        """Stop the devices (the stream of `start` ends)."""
        self.devices.close()

    def start(self, gate: SelfHearingGate | None = None, at: float = 0.0) -> Iterator[tuple[AudioChunk, ...]]:
        """The devices started, delivering, on one clock from `at`. With a `gate`, what the gated channels pick up
        while our own voice plays (and its echo dies away) is silenced before it is heard, unless the caller talks
        over it: the hall's speakers are not the caller, and the caller's words after the echo stand alone."""
        steps = self.devices.steps(at)
        if gate is not None:
            steps = (
                tuple(
                    replace(c, samples=gate.filter(c.samples, c.start, RATE)) if role in gate.roles else c
                    for c, role in zip(step, self.roles, strict=False)
                )
                for step in steps
            )
        first = next(steps, None)  # the devices are open and delivering before anyone is told "listening"
        return itertools.chain([first] if first is not None else [], steps)


def diagram(args: argparse.Namespace, settings: Settings) -> int:
    rules = RulePack.load(args.rules or settings.procedure.rules)
    for path in write_diagram(rules, args.out):
        print(path)
    return 0


def verify(args: argparse.Namespace, settings: Settings) -> int:
    with Store.open(args.db, readonly=True) as store:
        result = store.verify(expected_head=args.head)
    print(result.describe())
    return 0 if result.ok else 1


def _latest(store: Store, occasion: int | None) -> int:
    if occasion is not None:
        return occasion
    latest = store.latest_occasion()
    if latest is None:
        raise UsageError("the record holds no occasion")
    return latest


def report(args: argparse.Namespace, settings: Settings) -> int:
    """An occasion's report in one of its forms; with --list, the occasions the record holds."""
    if args.list and args.occasion is not None:
        raise UsageError("report takes --list or --occasion, not both")
    with Store.open(args.db, readonly=True) as store:
        if args.list:
            text = render_occasions(store)
        else:
            text = ReportData.load(store, _latest(store, args.occasion)).render(args.format)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
        print(args.output)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def prune(args: argparse.Namespace, settings: Settings) -> int:
    """Archive, then remove, the closed occasions older than the retention period, once the operator agrees."""
    years = args.years if args.years is not None else settings.store.retention_years
    if years < 0:
        raise UsageError(f"--years is 0 or more, not {years}")
    cutoff = datetime.now() - timedelta(days=365 * years)
    with Store.open(args.db) as store:
        planned = store.prune_plan(cutoff)
        if not planned.moved:
            print(planned.describe())
            return 0
        what = f"{planned.listed()} to {args.archive} ({planned.events} records), removing them from {args.db}"
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(f"prune would move {what}: confirm with --yes (no terminal to ask on)")
            answer = input(f"prune will move {what}. Move? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing moved")
                return 0
        result = store.prune(cutoff, args.archive, expected=planned.occasions)
    print(result.describe())
    return 0


def winner(args: argparse.Namespace, settings: Settings) -> int:
    """One winner of a winner-take-all game into the E(2) record (share, contact, tax paper), or a correction."""
    with Store.open(args.db) as store:
        occasion_id = _latest(store, args.occasion)
        entry = store.record_winner(
            occasion_id,
            args.game,
            name=args.name,
            contact=args.contact,
            prize=args.prize,
            tax_document=args.tax_document,
            corrects=args.corrects,
        )
        record = next(r for r in store.winner_take_all_records(occasion_id) if r.game == args.game)
    corrected = f", correcting entry {entry.corrects}" if entry.corrects is not None else ""
    print(
        f"winner recorded: occasion {occasion_id}, game {args.game}, {entry.name} ${entry.prize:,.2f} "
        f"(entry {entry.id}{corrected})"
    )
    lacking = "; ".join(record.missing)
    print(f"game {args.game}'s E(2) record: {'complete' if not lacking else 'still lacks ' + lacking}")
    return 0


def models(args: argparse.Namespace, settings: Settings) -> int:
    from .engines.models import fetch_model

    if args.models_verb == "prepare":
        from .engines import find_whisper_model

        print(find_whisper_model(settings.recognizer.model, settings.recognizer.whisper_model))
        return 0
    path = fetch_model(name=args.name, url=args.url, sha256=args.sha256, dest=args.dest)
    print(path)
    return 0


def serve(args: argparse.Namespace, settings: Settings) -> int:
    """The master board console: a local web page fed by a recorded session, the microphone, or the desk alone."""
    from .console import BindError, ConsoleHub, HubClosed, bind
    from .console import serve as serve_console
    from .console.access import SESSION_SECONDS, Access, RecordUsers, users_in
    from .console.records import journal_access, store_winners

    if args.session is not None and args.live:
        raise UsageError("serve takes --session or --live, not both")
    loopback = _loopback(args.host)
    if not loopback and not users_in(args.db):
        raise UsageError(
            f"serving beyond loopback (--host {args.host}) needs a console user: add one with "
            "`bingo-assistant users add NAME --role caller --db PATH` and serve with --db PATH"
        )
    minutes = args.session_minutes
    if minutes is not None and not (0 < minutes < 10_000_000):
        raise UsageError(f"--session-minutes must be more than 0, not {minutes:g}")
    grammar = Grammar.load(settings.recognizer.grammar)
    try:  # the port is taken now: one in use is told before anything starts, and no address is announced
        bound = bind(args.host, args.port)
    except BindError as exc:
        raise UsageError(str(exc)) from None
    port = bound.getsockname()[1]  # --port 0: the one the system gave
    source = str(args.session.resolve()) if args.session is not None else "console"
    run = _Run(settings, grammar, source=source, printer=True)
    run.stack.callback(bound.close)
    sessions: list[Session] = []
    # the microphones started before anything is recorded (a missing device stops serve with nothing written),
    # and their clock the hub's: a ball keyed on the page and a call heard at that moment get one time
    hall = _Microphones(settings, grammar, alert=run.microphone) if args.live else None
    gate = SelfHearingGate(margin_after=1.0)  # as in `listen`: the voice's echo is not the caller
    if hall is not None:
        run.use_speaker(settings.voice.mode, None, gate=gate, clock=hall.now)
    steps = hall.start(gate) if hall is not None else None
    recording = (
        read_wav(args.session, channels=channels_heard(args.session, args.channels))
        if args.session is not None and is_audio(args.session)
        else None
    )
    if recording is not None and recording.shortfall is not None:
        print(f"bingo-assistant: {recording.shortfall}", file=sys.stderr)
    if recording is None and args.channels is not None:
        raise UsageError("--channels is for recordings (--session FILE)")
    listening = (
        hall.listening
        if hall is not None
        else Listening.of(len(recording.channels), settings, grammar)
        if recording is not None
        else None
    )

    def open_session(emit: Callable[[Output], None]) -> Session:
        run.open_store(args.db, resume=False, ship_to=args.ship_to)
        if hall is not None and args.db is not None:  # the caller at the desk hears where the record goes
            print(f"record: writing to {run.record_name(args.db)}", file=sys.stderr)
        session = run.session()
        session.sinks.append(emit)
        if listening is not None:  # the recognizers listen for what the procedure expects next, as in `listen`
            listening.follow(session)
        sessions.append(session)
        return session

    hub = ConsoleHub(
        procedure_factory=open_session,
        grammar=grammar,
        prize_cap=settings.procedure.prize_cap,
        clock=hall.now if hall is not None else None,
    )
    journal = None
    if run.store is not None and run.occasion_id is not None:
        hub.winner_sink = store_winners(run.store, run.occasion_id)
        journal = journal_access(hub, run.store, run.occasion_id)
    access = Access(
        RecordUsers(args.db),
        journal,
        open_allowed=loopback,
        session_seconds=minutes * 60.0 if minutes is not None else SESSION_SECONDS,
        records=args.db,
        occasion=run.occasion_id,
    )
    plans = plans_from(args.plan)

    stopping = threading.Event()  # set when the console shuts down: the speech thread feeds nothing more

    def speech() -> None:
        try:
            feed_speech()
        except HubClosed:
            if not stopping.is_set():
                raise

    def feed_speech() -> None:
        if args.session is not None:
            if recording is not None and listening is not None:
                items: Iterable[Input] = listening.recording(recording, plans)
            else:
                items = _script_inputs(args.session, grammar)
            started = time.monotonic()
            due = lambda: hub.on_desk(lambda: sessions[0].procedure.next_due if sessions else None)  # noqa: E731
            for item in items:
                if args.realtime:
                    for tick in _due_before(item, due):  # a prompt is said when due, as `listen` says it
                        time.sleep(max(0.0, tick.time - (time.monotonic() - started)))
                        if stopping.is_set():
                            return
                        hub.feed(tick)
                    time.sleep(max(0.0, time_of(item) - (time.monotonic() - started)))
                if stopping.is_set():
                    return
                hub.feed(item)
        elif hall is not None and steps is not None:
            due = lambda: hub.on_desk(lambda: sessions[0].procedure.next_due if sessions else None)  # noqa: E731
            for item in hall.listening.inputs(steps, plans, due=due):
                if stopping.is_set():
                    return
                hub.feed(gate.doubt(item) if isinstance(item, Utterance) else item)
        elif plans:
            hub.feed(GameStart(0.0, plans[0]))

    feeder = threading.Thread(target=speech, name="console-speech", daemon=True)
    feeder.start()
    logins = f"{users_in(args.db)} user(s) of {args.db} log in" if not access.is_open() else "no users: open"
    print(
        f"console: http://{args.host}:{port}/  (flashboard: /flashboard; {logins}); Ctrl-C stops",
        file=sys.stderr,
    )
    try:
        with suppress(KeyboardInterrupt):  # Ctrl-C stops the console (uvicorn raises it again once it has shut down)
            serve_console(hub, args.host, port, access, sock=bound)
    finally:
        stopping.set()  # a hearing the speech thread holds now is the last it may feed
        if sessions:
            if hall is not None and args.db is not None:
                print(f"record: kept in {run.tell_record_kept(args.db, hall.now())}", file=sys.stderr)
            hub.on_desk(lambda: run.finish(sessions[0], args.prompts_json))
        hub.on_desk(run.stack.close)
        hub.close()
    if not sessions:  # the procedure was never opened: no occasion was played
        return 0
    # as `listen` ends (the desk thread has stopped: the record is read here): the report, 1 when it has findings
    return _verdict(sessions[0].procedure.occasion)


def _loopback(host: str) -> bool:
    """True when the console listens on this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it names, it may be on the hall network


MIN_PASSWORD = 8


def _new_password(name: str, from_stdin: bool) -> str:
    """The password for `users add`: asked for twice on the terminal, or standard input's first line."""
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        if not sys.stdin.isatty():
            raise UsageError("no terminal to ask the password on: give it on standard input with --password-stdin")
        password = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("the same again: ") != password:
            raise UsageError("the two passwords differ: nothing was changed")
    if len(password) < MIN_PASSWORD:
        raise UsageError(f"a password needs at least {MIN_PASSWORD} characters")
    return password


def users(args: argparse.Namespace, settings: Settings) -> int:
    """The console's users in the record: add (password hashed with argon2), remove, list."""
    if args.users_verb == "list":
        with Store.open(args.db, readonly=True) as store:
            listed = store.users()
        if not listed:
            print("no users: the console is open on loopback only and refuses to serve beyond it")
        for user in listed:
            print(f"{user.name}\t{user.role}\tadded {user.added_at.strftime('%Y-%m-%d %H:%M')} UTC")
        return 0
    if args.users_verb == "remove":
        with Store.open(args.db) as store:
            store.remove_user(args.name)
        print(f"user {args.name} removed")
        return 0
    from .console.access import hash_password

    check_user(args.name, args.role)
    with Store.open(args.db) as store:
        if store.user(args.name) is not None:
            raise UsageError(f"user {args.name} already exists in {args.db}")
        password = _new_password(args.name, args.password_stdin)
        store.add_user(args.name, args.role, hash_password(password))
    print(f"user {args.name} added: {args.role}")
    return 0


def _due_before(item: Input, due: Callable[[], float | None]) -> Iterator[Tick]:
    """Time passing before `item` in a session played in real time: a `Tick` at each deadline of the procedure
    (`due()`, asked again after each tick is fed) that comes before the item's speech begins, as the lock-step
    gives them live. A deadline inside the item's speech waits for it: the words may be what was owed."""
    begins = item.start if isinstance(item, Utterance) else time_of(item)
    last = None
    while (deadline := due()) is not None and deadline < begins and deadline != last:
        last = deadline
        yield Tick(deadline)
