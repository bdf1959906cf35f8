"""python -m lab.scenarios bench [--quick] | long [--minutes N] [--live]: the hall-audio benchmarks (print tables)."""

from __future__ import annotations

import argparse
import sys

from assistant.engines import ENGINES
from assistant.settings import load_settings
from lab.bench.accuracy import BenchError, add_option_flag, check_options
from lab.scenarios.scenarios import CONDITIONS, DEFAULT_CONDITIONS, QUICK, benchmark, scenario_paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.scenarios", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    bench = verbs.add_parser("bench", help="the scenario library as hall audio, checked from what is heard")
    bench.add_argument("--quick", action="store_true", help=f"only {len(QUICK)} scenarios (about 2 minutes)")
    bench.add_argument(
        "--scenario",
        action="append",
        default=[],
        help="only this scenario (repeatable; its audio is what the whole library's run gives it)",
    )
    bench.add_argument(
        "--condition",
        action="append",
        type=int,
        default=[],
        help="condition N (repeatable; default 0-4): " + ", ".join(f"{i}={c.name}" for i, c in enumerate(CONDITIONS)),
    )
    bench.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    bench.add_argument(
        "--seed", type=int, default=0, help="the audio's seed: scenario K of the library gets SEED + K (default 0)"
    )
    bench.add_argument("--details", action="store_true", help="show findings and hearings of sessions that differ")
    bench.add_argument("--engine", choices=ENGINES, default=None, help="recognizer (default from config)")
    add_option_flag(
        bench,
        "the recognizer's settings changed, as for `python -m lab.bench accuracy` "
        "(settings.NAME=VALUE, endpoint.NAME=VALUE; repeatable)",
    )
    long = verbs.add_parser("long", help="an occasion of several games, 30 minutes or more, checked from audio")
    long.add_argument("--minutes", type=float, default=30.0)
    long.add_argument("--seed", type=int, default=0)
    long.add_argument("--snr", type=float, default=20.0, help="babble level in dB (default 20)")
    long.add_argument("--clean", action="store_true", help="no babble (room noise only)")
    long.add_argument(
        "--live",
        action="store_true",
        help="play it in real time into a virtual hall's two microphones and follow it with `listen` "
        "(memory, CPU, latency on the device clock); takes as long as the occasion",
    )
    args = parser.parse_args(argv)
    if args.verb == "bench":
        names = list(QUICK) if args.quick and not args.scenario else args.scenario
        try:
            paths = scenario_paths(names)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        conditions = args.condition or list(DEFAULT_CONDITIONS)
        if any(not 0 <= c < len(CONDITIONS) for c in conditions):
            print(f"error: conditions are 0..{len(CONDITIONS) - 1}", file=sys.stderr)
            return 2
        try:
            check_options([args.engine or load_settings().recognizer.engine], args.option)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        benchmark(
            paths,
            conditions,
            jobs=args.jobs,
            seed=args.seed,
            details=args.details,
            engine=args.engine,
            options=tuple(args.option),
        )
        return 0
    from lab.scenarios.long import long_benchmark, long_live

    snr = None if args.clean else args.snr
    if args.live:
        long_live(minutes=args.minutes, seed=args.seed, snr_db=snr)
    else:
        long_benchmark(minutes=args.minutes, seed=args.seed, snr_db=snr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
