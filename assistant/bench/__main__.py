"""`python -m assistant.bench accuracy [...]`: run the recognition accuracy benchmark and print its table."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .accuracy import CONDITIONS, ENGINES, PROBES, BenchError, Plan, report, run


def _snrs(text: str) -> tuple[str, ...]:
    names = tuple(part.strip().removesuffix("dB").strip() for part in text.split(",") if part.strip())
    bad = [n for n in names if n not in CONDITIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"conditions are {', '.join(CONDITIONS)}; got {text!r}")
    return names


def _rates(text: str) -> tuple[int, ...]:
    try:
        rates = tuple(int(part) for part in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"rates are words per minute like 130,165,200; got {text!r}") from exc
    if not rates or any(not 80 <= r <= 450 for r in rates):
        raise argparse.ArgumentTypeError(f"rates must be 80..450 words per minute; got {text!r}")
    return rates


def _calls(text: str) -> int | None:
    if text == "all":
        return 0
    if not text.isdigit() or not 1 <= int(text) <= 75:
        raise argparse.ArgumentTypeError(f"calls is 'all' or 1..75; got {text!r}")
    return int(text)


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"an engine option is NAME=VALUE; got {text!r}")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, {"true": True, "false": False}.get(value.lower(), value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assistant.bench", description=__doc__)
    sub = parser.add_subparsers(dest="bench", required=True)
    acc = sub.add_parser("accuracy", help="recognition accuracy in babble, chatter and real speech")
    acc.add_argument(
        "--engine", choices=(*ENGINES, *PROBES, "all"), default="all", help="all: the product engines, not probes"
    )
    acc.add_argument("--voices", type=int, default=6, help="espeak-ng voices (1..10)")
    acc.add_argument("--rates", type=_rates, default=None, help="words per minute, e.g. 130,165,200")
    acc.add_argument("--snr", type=_snrs, default=None, help="conditions: clean,20,10,5")
    acc.add_argument(
        "--calls", type=_calls, default=None, help="balls per voice and rate: 'all' or N (default 25, rotating)"
    )
    acc.add_argument("--chatter", type=float, default=None, help="seconds of off-grammar chatter per condition")
    acc.add_argument("--no-real", action="store_true", help="skip the real human recordings")
    acc.add_argument(
        "--enhance",
        nargs="?",
        const="nonstationary",
        default=None,
        help="noisereduce each stream first: nonstationary (default) | stationary, optionally :STRENGTH",
    )
    acc.add_argument("--option", type=_option, action="append", default=[], help="engine option NAME=VALUE")
    acc.add_argument("--workers", type=int, default=2)
    acc.add_argument("--seed", type=int, default=7)
    acc.add_argument("--quick", action="store_true", help="2 voices, 1 rate, 25 calls, 60 s chatter")
    acc.add_argument("--workdir", type=Path, default=None, help="keep the generated audio here")
    acc.add_argument("--out", type=Path, default=None, help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)

    quick = args.quick
    plan = Plan(
        engines=ENGINES if args.engine == "all" else (args.engine,),
        voices=args.voices if not quick else min(args.voices, 2),
        rates=args.rates or ((165,) if quick else Plan.rates),
        conditions=args.snr or Plan.conditions,
        calls=Plan.calls if args.calls is None else (args.calls or None),
        chatter_seconds=args.chatter if args.chatter is not None else (60.0 if quick else Plan.chatter_seconds),
        real=not args.no_real,
        enhance=args.enhance,
        seed=args.seed,
        workers=max(1, args.workers),
        options=tuple(args.option),
    )
    try:
        if not 1 <= plan.voices <= 10:
            raise BenchError(f"--voices must be 1..10, got {plan.voices}")
        scores, notes = run(plan, args.workdir, log=lambda m: print(m, file=sys.stderr, flush=True))
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    command = "python -m assistant.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = report(plan, scores, notes, command)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
