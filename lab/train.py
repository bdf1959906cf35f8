"""Training done here, on this machine, from data made here: `python -m lab.train confidence | head | decoder`.

head: the hall engine's call head over Whisper's frozen encoder (`lab.head_data`, docs/hall-model.md).

decoder: low-rank updates of Whisper's decoder for calls in a hall (`lab.decoder_adapter`).

confidence: the call confidence of the Whisper engine, a logistic model over what a hearing is read from (the
N-best share of the ball, how alike the free sentence is, how far the free sentence beats the grammar's, the
grammar's own log-probability per token, whether the free sentence holds the number and the letter, how many
meanings the N-best holds). It is fitted on the hall set's training voices only (espeak; `hallset.TRAIN`), in
real-speech babble at several SNRs, both layouts, with the caller's patter as the calls that were not said. The
held-out voices (flite) are never seen. The weights (a few hundred bytes) are committed in
`assistant/engines/call_confidence.json` with the sha256 of the data that made them, the seed and the command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assistant.engines.decision import CALL_FEATURES
from assistant.engines.whisper_engine import CALIBRATION
from lab import decoder_adapter, head_data

SURE_WRONG = 0.002
"""The share of call hearings allowed to be sure and wrong on the training data when the threshold is chosen (the
target on held-out voices is 0.3 % of calls, so the fit aims lower)."""


def rows(path: Path, voices: str = "train") -> list[dict[str, Any]]:
    """The dump's hearings of the training voices (`hallset.SETS[voices]`) that were read as one call (the only ones
    the call confidence judges)."""
    from lab.bench.hallset import SETS

    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("voice") not in SETS[voices]:
            continue
        if row.get("call") is not None and len(row.get("features") or ()) == len(CALL_FEATURES):
            out.append(row)
    return out


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton's method (deterministic: no seed is needed for the fit itself)."""
    _, d = x.shape
    w = np.zeros(d)
    b = 0.0
    for _ in range(steps):
        z = x @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        g_w = x.T @ (p - y) + l2 * w
        g_b = float(np.sum(p - y))
        s = p * (1 - p)
        h = np.zeros((d + 1, d + 1))
        h[:d, :d] = (x * s[:, None]).T @ x + l2 * np.eye(d)
        h[:d, d] = h[d, :d] = x.T @ s
        h[d, d] = float(np.sum(s)) + 1e-9
        step = np.linalg.solve(h, np.concatenate([g_w, [g_b]]))
        w -= step[:d]
        b -= float(step[d])
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w, b


def threshold(p: np.ndarray, y: np.ndarray, sure_wrong: float = SURE_WRONG) -> float:
    """The lowest probability at which the hearings judged sure and wrong are at most `sure_wrong` of them all."""
    order = np.argsort(-p)
    wrong = np.cumsum(1 - y[order])
    ok = wrong <= sure_wrong * len(p)
    if not ok.any():
        return 1.0
    last = int(np.nonzero(ok)[0].max())
    return float(p[order][last])


def train(data: Path, out: Path, command: str, seed: int, voices: str = "train") -> dict[str, Any]:
    found = rows(data, voices)
    if len(found) < 50:
        raise SystemExit(f"train: only {len(found)} call hearings in {data}: too few to fit")
    x = np.array([r["features"] for r in found], dtype=np.float64)
    y = np.array([float(r["call"] == r["truth"]) for r in found])
    mean, std = x.mean(0), x.std(0) + 1e-6
    w, b = fit((x - mean) / std, y)
    p = 1.0 / (1.0 + np.exp(-(((x - mean) / std) @ w + b)))
    sure_at = threshold(p, y)
    sure = p >= sure_at
    model = {
        "features": list(CALL_FEATURES),
        "mean": [round(float(v), 6) for v in mean],
        "std": [round(float(v), 6) for v in std],
        "weights": [round(float(v), 6) for v in w],
        "bias": round(b, 6),
        "sure_at": round(sure_at, 6),
        "trained_on": {
            "hearings": len(found),
            "right": int(y.sum()),
            "sure": int(sure.sum()),
            "sure_and_wrong": int((sure & (y == 0)).sum()),
            "data_sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
            "seed": seed,
            "command": command,
        },
    }
    out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    return model


def evaluate(data: Path, models: Sequence[Path]) -> str:
    """Each fit read on a hall-set dump (held-out voices, say): sure and right / sure and wrong of the call hearings
    per condition and layout, and sure calls in the patter. The features do not depend on the fit, so one dump
    serves every fit; a hearing is read on its own, before the two sayings are weighed together."""
    from assistant.engines.whisper_engine import _calibration

    found = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    conditions = sorted(
        {(r["layout"], r["snr"]) for r in found},
        key=lambda k: (k[0], -1.0 if k[1] is None else -float(k[1])),
    )
    head = ["fit", *(f"{layout} {'clean' if snr is None else f'{snr:g} dB'}" for layout, snr in conditions)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for path in models:
        model = _calibration(path)
        if model is None:
            raise SystemExit(f"train: no call confidence at {path}")
        cells = []
        for layout, snr in conditions:
            rows_here = [r for r in found if (r["layout"], r["snr"]) == (layout, snr)]
            calls = [r for r in rows_here if r.get("call") is not None and len(r["features"]) == len(CALL_FEATURES)]
            sure = [r for r in calls if model.probability(r["features"]) >= model.sure_at]
            if layout == "patter":
                cells.append(f"{len(sure)} sure calls")
                continue
            said = [r for r in rows_here if r.get("truth") is not None]
            right = sum(r["call"] == r["truth"] for r in sure)
            cells.append(f"{right} / {len(sure) - right} of {len(said)}")
        lines.append("| " + " | ".join([path.name, *cells]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.train", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    conf = sub.add_parser("confidence", help="fit the whisper engine's call confidence on the hall set's train voices")
    conf.add_argument("--calls", type=int, default=25, help="balls per voice, each said twice")
    conf.add_argument("--snr", default="clean,20,10,5", help="conditions of the training data")
    conf.add_argument("--seed", type=int, default=1511)
    conf.add_argument(
        "--voices",
        choices=("train", "train-wider"),
        default="train",
        help="the training voices: train (5 espeak voices, the committed fit) or train-wider (10, measured)",
    )
    conf.add_argument("--data", type=Path, default=None, help="fit on this hall-set dump instead of making one")
    conf.add_argument("--keep", type=Path, default=None, help="keep the dump made here")
    conf.add_argument("--out", type=Path, default=CALIBRATION)
    ev = sub.add_parser("evaluate", help="read fits of the call confidence on a hall-set dump (sure right / wrong)")
    ev.add_argument("data", type=Path, help="a dump of python -m lab.bench hall --dump")
    ev.add_argument("models", type=Path, nargs="*", default=[CALIBRATION], help="fits to compare (default: ours)")
    head = sub.add_parser("head", help="train the call head over whisper's frozen encoder (the hall model)")
    head.add_argument(
        "--seed", type=int, default=head_data.SEED, help=f"default: the committed head's ({head_data.SEED})"
    )
    head.add_argument("--epochs", type=int, default=30)
    head.add_argument("--workers", type=int, default=2, help="processes making and encoding the data")
    head.add_argument(
        "--data", type=Path, default=None, help="folder of the encoded sets (made there if missing, reused if there)"
    )
    head.add_argument("--out", type=Path, default=None, help="where the weights go (default: the engine's own)")
    head.add_argument(
        "--curve",
        default=None,
        help="shares of the training voices, e.g. 0.25,0.5,1: print held-out accuracy of each (writes no weights)",
    )
    head.add_argument(
        "--kokoro",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with the Kokoro voices (32 training, 4 validation; the committed head's data): the default",
    )
    head.add_argument(
        "--members",
        type=int,
        default=head_data.MEMBERS,
        help=f"heads trained with seeds SEED, SEED+1, ... on the same data and averaged (default {head_data.MEMBERS})",
    )
    head.add_argument(
        "--cut",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also sayings in continuous babble cut as the endpointer cuts them (measured, not the committed head's)",
    )
    adapt = sub.add_parser("decoder", help="train the decoder adapter (low-rank updates of whisper's decoder)")
    adapt.add_argument(
        "--seed",
        type=int,
        default=decoder_adapter.SEED,
        help=f"of the data and the training (default {decoder_adapter.SEED})",
    )
    adapt.add_argument(
        "--epochs",
        type=int,
        default=decoder_adapter.EPOCHS,
        help=f"passes over the data (default {decoder_adapter.EPOCHS})",
    )
    adapt.add_argument("--workers", type=int, default=2, help="processes making and encoding the data")
    adapt.add_argument(
        "--data", type=Path, default=None, help="folder of the encoded sets (made there if missing, reused if there)"
    )
    adapt.add_argument("--out", type=Path, default=decoder_adapter.WEIGHTS, help="where the adapter goes")
    args = parser.parse_args(argv)
    if args.what == "head" and args.members < 1:
        parser.error(f"--members must be at least 1, not {args.members}")
    command = "python -m lab.train " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.what == "head":
        from assistant.engines import call_head

        folder = args.data or Path(tempfile.mkdtemp(prefix="bingo-head-"))
        out = args.out or call_head.WEIGHTS
        if args.curve:
            shares = [float(s) for s in args.curve.split(",")]
            print(
                head_data.curve(args.seed, args.epochs, args.workers, folder, shares, head_data.log_stderr, args.kokoro)
            )
            return 0
        print(
            head_data.run(
                args.seed,
                args.epochs,
                args.workers,
                folder,
                out,
                command,
                head_data.log_stderr,
                args.kokoro,
                args.members,
                args.cut,
            )
        )
        print(f"train: the call head written to {out}")
        return 0
    if args.what == "decoder":
        folder = args.data or Path(tempfile.mkdtemp(prefix="bingo-decoder-"))
        print(
            decoder_adapter.run(args.seed, args.epochs, args.workers, folder, args.out, command, head_data.log_stderr)
        )
        print(f"train: the decoder adapter written to {args.out}")
        return 0
    if args.what == "evaluate":
        print(evaluate(args.data, args.models))
        return 0
    data = args.data
    if data is None:
        from lab.bench import hallset

        data = args.keep or Path(tempfile.mkdtemp(prefix="bingo-train-")) / "train.jsonl"
        data.unlink(missing_ok=True)
        snrs = [None if s == "clean" else float(s) for s in args.snr.split(",")]
        # The engine's confidence is what is being made: the dump is read with it switched off.
        hallset.run(
            [args.voices],
            snrs,
            args.calls,
            args.seed,
            options={"settings": _uncalibrated()},
            log=lambda m: print(m, file=sys.stderr, flush=True),
            dump=data,
        )
    model = train(data, args.out, command, args.seed, args.voices)
    t = model["trained_on"]
    print(
        f"train: {t['hearings']} call hearings ({t['right']} right); sure at p >= {model['sure_at']:.3f}: "
        f"{t['sure']} sure, {t['sure_and_wrong']} of them wrong; written to {args.out}"
    )
    return 0


def _uncalibrated() -> Any:
    from assistant.engines.whisper_engine import WhisperSettings

    return WhisperSettings(calibrated=False)


if __name__ == "__main__":
    sys.exit(main())
