"""`python -m lab.bench accuracy [...]`: run the recognition accuracy benchmark and print its table."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from assistant.engines import ENGINES
from assistant.settings import override
from lab.bench.accuracy import (
    BABBLES,
    SNRS,
    BenchError,
    Plan,
    add_option_flag,
    check_options,
    engine_options,
    report,
    run,
)
from lab.bench.real import BABBLE_PARTS


def _snrs(text: str) -> tuple[str, ...]:
    names = tuple(part.strip().removesuffix("dB").strip() for part in text.split(",") if part.strip())
    bad = [n for n in names if n not in SNRS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"conditions are {', '.join(SNRS)}; got {text!r}")
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
    """'all' is None (every ball); otherwise 1..75 balls."""
    if text == "all":
        return None
    if not text.isdigit() or not 1 <= int(text) <= 75:
        raise argparse.ArgumentTypeError(f"calls is 'all' or 1..75; got {text!r}")
    return int(text)


def _real_calls(text: str) -> int | None:
    return 0 if text == "0" else _calls(text)


def _babble(text: str) -> tuple[str, ...]:
    if text == "both":
        return BABBLES
    if text not in BABBLES:
        raise argparse.ArgumentTypeError(f"babble is {'|'.join(BABBLES)}|both; got {text!r}")
    return (text,)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.bench", description=__doc__)
    sub = parser.add_subparsers(dest="bench", required=True)
    acc = sub.add_parser("accuracy", help="recognition accuracy in babble, chatter and real speech")
    acc.add_argument(
        "--engine",
        choices=(*ENGINES, "all"),
        default="all",
        help="all: hall, whisper and pocketsphinx side by side (and vosk when BINGO_VOSK_MODEL is set)",
    )
    acc.add_argument("--voices", type=int, default=6, help="espeak-ng voices (1..10)")
    acc.add_argument("--rates", type=_rates, default=None, help="words per minute, e.g. 130,165,200")
    acc.add_argument("--snr", type=_snrs, default=None, help="conditions: clean,20,10,5")
    acc.add_argument(
        "--babble",
        type=_babble,
        default=Plan.babble,
        help="crowd under the 20/10/5 dB conditions: real (human recordings, the default), espeak, or both",
    )
    acc.add_argument(
        "--calls", type=_calls, default=25, help="balls per espeak voice and rate: 'all' or N (default 25, rotating)"
    )
    acc.add_argument(
        "--real-calls",
        type=_real_calls,
        default=argparse.SUPPRESS,
        help="real calls: balls per FSDD speaker, 'all', N or 0 for none (default 25, rotating; --quick 5)",
    )
    acc.add_argument("--real-speakers", type=int, default=None, help="FSDD speakers saying real calls (1..6)")
    acc.add_argument("--no-real-sets", action="store_true", help="skip the one-step real sets (digits, yes/no)")
    acc.add_argument("--no-real", action="store_true", help="skip every real recording: real calls and real sets")
    acc.add_argument("--chatter", type=float, default=None, help="seconds of off-grammar chatter per condition")
    acc.add_argument(
        "--enhance",
        nargs="?",
        const="nonstationary",
        default=None,
        help="noisereduce each stream first: nonstationary (default) | stationary, optionally :STRENGTH",
    )
    add_option_flag(
        acc, "[ENGINE:]settings.NAME=VALUE or [ENGINE:]endpoint.NAME=VALUE: a field of the engine's settings"
    )
    acc.add_argument("--workers", type=int, default=2)
    acc.add_argument("--seed", type=int, default=7)
    acc.add_argument(
        "--quick", action="store_true", help="2 voices, 1 rate, 25 calls, 5 real calls a speaker, 60 s chatter, no sets"
    )
    acc.add_argument("--workdir", type=Path, default=None, help="keep the generated audio here")
    acc.add_argument("--out", type=Path, default=None, help="also write the table (markdown) to this file")
    acc.add_argument("--dump", type=Path, default=None, help="write every hearing with its truth here (JSONL)")
    hall = sub.add_parser("hall", help="the hall set: paused calls over a PA in continuous babble vs babble around")
    hall.add_argument(
        "--sets",
        default="held-out",
        help="voice sets: held-out (flite), held-out-neural (piper joe, hibari heart), tuning (espeak), real, "
        "head-validation (the hall engine's thresholds), "
        "neural-validation (Kokoro voices the head never trained on), train, train-wider, human-held-out (real "
        "people never fitted on), human-fit (real people for fitting the hearing decision); comma-separated",
    )
    hall.add_argument("--snr", type=_snrs, default=("clean", "20", "10", "5"), help="conditions: clean,20,10,5")
    hall.add_argument("--calls", type=int, default=25, help="balls per voice, each said twice")
    hall.add_argument("--engine", choices=ENGINES, default="hall")
    hall.add_argument(
        "--babble",
        choices=BABBLE_PARTS,
        default="all",
        help="the real speakers of the crowd: all, train or test (test: the half the hall model never trained in)",
    )
    add_option_flag(hall, "as for accuracy")
    hall.add_argument("--seed", type=int, default=7)
    hall.add_argument("--out", type=Path, default=None, help="also write the table (markdown) to this file")
    hall.add_argument("--dump", type=Path, default=None, help="append every hearing, its features and truth (JSONL)")
    hall.add_argument(
        "--continuous-only",
        action="store_true",
        help="only the continuous babble layout (no 'babble around each call' row, no patter): a dump in half the time",
    )
    cuts = sub.add_parser(
        "cuts", help="the cutting alone: how each saying of the hall set is cut, candidates side by side"
    )
    cuts.add_argument("--sets", default="head-validation", help="voice sets, as for hall (default: head-validation)")
    cuts.add_argument("--snr", type=_snrs, default=("clean", "20", "10", "5"), help="conditions: clean,20,10,5")
    cuts.add_argument("--calls", type=int, default=15, help="balls per voice, each said twice")
    cuts.add_argument("--babble", choices=BABBLE_PARTS, default="train", help="as for hall (default: train)")
    add_option_flag(cuts, "endpoint.NAME=VALUE: a third row, the hall cutting with these changes")
    cuts.add_argument("--seed", type=int, default=7)
    cuts.add_argument(
        "--vad", action="store_true", help="also silero-vad and WebRTC's VAD as candidates (pip install -e '.[bench]')"
    )
    rulings = sub.add_parser(
        "rulings", help="phrases a word from another meaning (valid or not, yes or no), said alone in babble"
    )
    rulings.add_argument("--sets", choices=("held-out", "tuning"), default="held-out", help="voices (default held-out)")
    rulings.add_argument("--snr", type=_snrs, default=("clean", "20", "10"), help="conditions: clean,20,10,5")
    rulings.add_argument("--per-intent", type=int, default=4, help="sentences of each intent (default 4)")
    rulings.add_argument("--engine", choices=ENGINES, default="hall")
    rulings.add_argument("--babble", choices=BABBLE_PARTS, default="test", help="as for hall (default: test)")
    add_option_flag(rulings, "as for accuracy (settings.near_meanings=false: no choice between near meanings)")
    rulings.add_argument(
        "--intents",
        type=lambda v: tuple(v.split(",")),
        default=(),
        help="intents said (default: those with a near meaning)",
    )
    rulings.add_argument(
        "--step",
        default=None,
        help="the grammar's step to decode in (default: the first that hears the intent's near ones)",
    )
    rulings.add_argument("--patter", action="store_true", help="also the hall set's patter in the step (sure is false)")
    rulings.add_argument("--seed", type=int, default=7)
    load = sub.add_parser(
        "store-load", help="halls keying and hearing at once on one PostgreSQL server; the server killed mid-game"
    )
    load.add_argument("--halls", type=int, default=8, help="halls writing at once (default 8)")
    load.add_argument("--minutes", type=float, default=10.0, help="how long they write straight to the server")
    load.add_argument(
        "--db",
        default=None,
        help="a PostgreSQL database to load (postgresql://USER@HOST:PORT/DB, no hall); default a throwaway cluster",
    )
    load.add_argument(
        "--fault-seconds", type=float, default=60.0, help="the fault run: halls shipping their files (default 60)"
    )
    load.add_argument("--down-seconds", type=float, default=10.0, help="how long the server stays killed (default 10)")
    args = parser.parse_args(argv)
    if args.bench == "store-load":
        return _store_load(args, argv)
    if args.bench == "hall":
        return _hall(args, argv)
    if args.bench == "cuts":
        return _cuts(args, argv)
    if args.bench == "rulings":
        return _rulings(args, argv)

    quick = args.quick
    engines = ENGINES if args.engine == "all" else (args.engine,)
    plan = Plan(
        engines=engines,
        voices=args.voices if not quick else min(args.voices, 2),
        rates=args.rates or ((165,) if quick else Plan.rates),
        snrs=args.snr or Plan.snrs,
        babble=args.babble,
        calls=args.calls,
        chatter_seconds=args.chatter if args.chatter is not None else (60.0 if quick else Plan.chatter_seconds),
        real_calls=0 if args.no_real else getattr(args, "real_calls", 5 if quick else Plan.real_calls),
        real_speakers=args.real_speakers,
        real_sets=not (args.no_real or args.no_real_sets or quick),
        enhance=args.enhance,
        seed=args.seed,
        workers=max(1, args.workers),
        options=tuple(args.option),
    )
    try:
        if not 1 <= plan.voices <= 10:
            raise BenchError(f"--voices must be 1..10, got {plan.voices}")
        if plan.real_speakers is not None and not 1 <= plan.real_speakers <= 6:
            raise BenchError(f"--real-speakers must be 1..6, got {plan.real_speakers}")
        scores, notes = run(plan, args.workdir, log=lambda m: print(m, file=sys.stderr, flush=True), dump=args.dump)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    command = "python -m lab.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = report(plan, scores, notes, command)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


def _voice_sets(text: str) -> list[str] | None:
    """The hall set's voice sets named in `--sets`; None (and one line on stderr) when one is unknown."""
    from lab.bench import hallset

    sets = [s for s in text.split(",") if s]
    unknown = [s for s in sets if s not in hallset.SETS]
    if unknown:
        print(f"bench: unknown voice sets {unknown}; choose from {sorted(hallset.SETS)}", file=sys.stderr)
        return None
    return sets


def _hall(args: argparse.Namespace, argv: list[str] | None) -> int:
    from lab.bench import hallset

    sets = _voice_sets(args.sets)
    if sets is None:
        return 2
    snrs = [None if s == "clean" else float(s) for s in args.snr]
    try:
        options = engine_options(args.engine, args.option)
        table = hallset.run(
            sets,
            snrs,
            args.calls,
            args.seed,
            args.engine,
            options,
            log=lambda m: print(m, file=sys.stderr, flush=True),
            dump=args.dump,
            babble=args.babble,
            continuous_only=args.continuous_only,
        )
    except (BenchError, hallset.HallSetError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    command = "python -m lab.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    text = f"{table}\n\n{command}\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


def _rulings(args: argparse.Namespace, argv: list[str] | None) -> int:
    from assistant.grammar import Grammar
    from assistant.settings import load_settings
    from lab.bench import hallset, rulings
    from lab.scenarios.check import make_recognizers

    settings = load_settings()
    grammar = Grammar.load(settings.recognizer.grammar)
    try:
        check_options((args.engine,), args.option)
        unknown = [name for name in args.intents if name not in grammar.intents]
        if unknown or (args.step is not None and args.step not in grammar.steps):
            raise BenchError(
                f"unknown intents {unknown} or step {args.step!r}: the grammar has steps {list(grammar.steps)}"
            )
        engine_settings = override(settings, "recognizer", engine=args.engine)
        recognizer = make_recognizers(1, engine_settings, grammar, engine_options(args.engine, args.option))[0]
        voices = rulings.SETS[args.sets]
        tallies = rulings.run(
            recognizer,
            grammar,
            voices,
            args.snr,
            args.per_intent,
            args.babble,
            args.seed,
            args.intents,
            args.step,
            args.patter,
        )
    except (BenchError, hallset.HallSetError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    command = "python -m lab.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    print(rulings.report(tallies, command, voices))
    return 0


def _cuts(args: argparse.Namespace, argv: list[str] | None) -> int:
    import dataclasses

    from assistant.endpoint import HALL_CUTTING, EndpointSettings
    from lab.bench import hallset

    sets = _voice_sets(args.sets)
    if sets is None:
        return 2
    candidates: dict[str, object] = {"default": EndpointSettings(), "hall cutting (HALL_CUTTING)": HALL_CUTTING}
    if args.vad:  # the voice-activity models, with the hall cutting's hangover, pre-roll and limits
        import numpy as np

        from lab.bench import vad

        vads: list[tuple[str, vad.Silero | vad.WebRtc]] = [
            ("silero-vad (p >= 0.5)", vad.Silero()),
            ("silero-vad (p >= 0.8)", vad.Silero(threshold=0.8)),
            ("webrtcvad (mode 3)", vad.WebRtc()),
        ]
        for name, candidate in vads:
            try:
                candidate.cuts(np.zeros(16000, dtype=np.int16))
            except vad.VadMissing as exc:
                print(f"bench: {name} left out: {exc}", file=sys.stderr)
                continue
            candidates[name] = candidate
    if args.option:
        changes = {}
        for key, value in args.option:
            group, _, name = key.partition(".")
            if group != "endpoint" or name not in {f.name for f in dataclasses.fields(EndpointSettings)}:
                print(f"bench: cuts takes endpoint.NAME options only, got {key!r}", file=sys.stderr)
                return 2
            changes[name] = value
        candidates[", ".join(f"{k}={v}" for k, v in changes.items())] = dataclasses.replace(HALL_CUTTING, **changes)
    snrs = [None if s == "clean" else float(s) for s in args.snr]
    try:
        table = hallset.cuts_table(candidates, sets, snrs, args.calls, args.seed, args.babble)
    except hallset.HallSetError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    command = "python -m lab.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    print(f"{table}\n\n{command}\n")
    return 0


def _store_load(args: argparse.Namespace, argv: list[str] | None) -> int:
    from assistant.store import StoreError
    from lab.bench import storeload

    if args.db is not None and ("?" in args.db or not args.db.startswith(("postgresql://", "postgres://"))):
        print(
            "bench: --db is a PostgreSQL database URL without a query (each hall is added as ?hall=NAME)",
            file=sys.stderr,
        )
        return 2
    try:
        text = storeload.main(args.halls, args.minutes, args.db, args.fault_seconds, args.down_seconds)
    except StoreError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    command = "python -m lab.bench " + shlex.join(sys.argv[1:] if argv is None else argv)
    print(f"{text}\n\n{command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
