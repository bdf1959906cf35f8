"""Fit and read the hearing decision on dumped evidence, in minutes: no audio is decoded here.

The dumps (each hearing's evidence: the decoder's own reading and the call head's posterior, `hallset._dump`):

    python -m lab.bench hall --sets human-fit --snr clean,20,10 --calls 29 --seed 11 --continuous-only \
        --babble train --dump fit-human.jsonl
    python -m lab.bench hall --sets head-validation --snr clean,20,10 --calls 16 --seed 11 \
        --continuous-only --babble train --dump fit-head-validation.jsonl
    python -m lab.bench hall --sets train,neural-validation --snr 20,10,5 --calls 20 --seed 13 \
        --continuous-only --babble train --dump fit-noisy.jsonl
    python -m lab.bench hall --sets human-held-out --snr clean,20,10,5 --calls 50 --continuous-only \
        --babble test --dump heldout-human.jsonl
    python -m lab.bench hall --sets held-out --snr clean,20,10 --calls 25 --babble test \
        --dump heldout-flite.jsonl
    python -m lab.bench hall --sets held-out-neural --snr clean,20,10 --calls 25 --continuous-only \
        --babble test --dump heldout-neural.jsonl

then

    python -m lab.bench.decision --fit fit-human.jsonl fit-head-validation.jsonl fit-noisy.jsonl \
        --report heldout-human.jsonl heldout-flite.jsonl heldout-neural.jsonl \
        --out assistant/engines/call_decision.json

The fit is made on the fit dumps only (human voices of the fit side, validation and training voices, the babble's
training half); the table reports every condition of every dump given, today's engine decision beside the fitted
one, and the fitted decision's reliability on the report dumps (predicted probability against the share right).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assistant.engines import decision
from lab.train import fit as logistic
from lab.train import threshold

SURE_WRONG = 0.001
"""Sure and wrong allowed on the fit data where the operating point is chosen: one hearing in a thousand."""
FUSE_WINDOW = 10.0
"""Seconds within which the next saying is the other saying of a call (`WhisperSettings.fuse_window`)."""


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evidence(row: dict[str, Any], pair: dict[int, float] | None) -> decision.Evidence | None:
    """A dumped hearing as the decision's evidence (None: dumped without the decoder's own reading)."""
    dec = row.get("decoder")
    if dec is None:
        return None
    post = row.get("posterior")
    head = None
    if post is not None:
        head = [0.0] * (decision.BALLS + 1)
        for k, q in post.items():
            head[int(k)] = float(q)
    return decision.Evidence(
        decoder_balls={int(b): float(q) for b, q in dec["balls"].items()} if dec.get("call") is not None else {},
        decoder_call=dec.get("call"),
        decoder_confidence=float(dec["confidence"]),
        decoder_likeness=float(dec["likeness"]),
        head=head,
        seconds=float(row["end"]) - float(row["start"]),
        pair=pair,
    )


def examples(rows: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], int | None, list[float]]]:
    """Each hearing with the ball the evidence favours and its features, as the engine decides it: only hearings
    read as one call are decided; the sayings in stream order, a saying's pair the call hearing just before it
    within the fuse window that was not itself the second of a pair and that heard the same ball (another ball is
    another call, or a mismatch the engine's pair rules weigh)."""
    out: list[tuple[dict[str, Any], int | None, list[float]]] = []
    previous: tuple[dict[str, Any], dict[int, float], bool] | None = None
    for row in rows:
        if previous is not None:
            same = all(previous[0][k] == row[k] for k in ("set", "voice", "snr", "layout"))
            if not same or float(row["start"]) < float(previous[0]["start"]):
                previous = None
        if row.get("call") is None:  # the rules before the decision read no one call: none is decided (the engine)
            out.append((row, None, []))
            previous = None
            continue
        pair = None
        if previous is not None and not previous[2] and float(row["start"]) - float(previous[0]["end"]) <= FUSE_WINDOW:
            pair = previous[1] or None
        found = evidence(row, None)
        if found is None:
            continue
        ball, feats, fused = decision.features(found)
        paired = pair is not None and ball is not None and ball == max(pair, key=lambda b: pair[b])
        if paired:
            ball, feats, fused = decision.features(evidence(row, pair) or found)
        out.append((row, ball, feats))
        previous = (row, fused, paired)
    return out


def fitted(rows: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The decision fitted on `rows` (JSON-ready) and its line of figures on them."""
    found = [(r, b, f) for r, b, f in examples(rows) if b is not None]
    x = np.array([f for _, _, f in found], dtype=np.float64)
    y = np.array([float(b == r.get("truth")) for r, b, _ in found])
    mean, std = x.mean(0), x.std(0) + 1e-6
    w, b = logistic((x - mean) / std, y, l2=1.0)
    p = 1.0 / (1.0 + np.exp(-(((x - mean) / std) @ w + b)))
    sure_at = threshold(p, y, SURE_WRONG)
    sure = p >= sure_at
    model = {
        "features": list(decision.FEATURES),
        "mean": [round(float(v), 6) for v in mean],
        "std": [round(float(v), 6) for v in std],
        "weights": [round(float(v), 6) for v in w],
        "bias": round(float(b), 6),
        "sure_at": round(sure_at, 6),
    }
    line = (
        f"fit: {len(found)} hearings, {int(y.sum())} right; sure from p >= {sure_at:.4f}: "
        f"{int((sure & (y == 1)).sum())} sure and right, {int((sure & (y == 0)).sum())} sure and wrong"
    )
    return model, line


def _condition(row: dict[str, Any]) -> str:
    return "clean" if row["snr"] is None else f"{row['snr']:g} dB"


def table(rows: Sequence[dict[str, Any]], model: decision.Decision) -> str:
    """Per set and condition: sayings heard, today's decision and the fitted one (sure and right / sure and
    wrong, % of the hearings of a said call), and sure calls where no call was said."""
    head = [
        "set",
        "condition",
        "hearings of a call",
        "right (any)",
        "today: sure+right %",
        "today: sure+wrong %",
        "fitted: sure+right %",
        "fitted: sure+wrong %",
        "sure calls on no call (today / fitted)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], int | None, list[float]]]] = {}
    for r, b, f in examples(rows):
        groups.setdefault((r["set"], _condition(r)), []).append((r, b, f))
    order = {"clean": 0, "20 dB": 1, "10 dB": 2, "5 dB": 3}
    for (name, cond), found in sorted(groups.items(), key=lambda g: (g[0][0], order.get(g[0][1], 9))):
        said = [(r, b, f) for r, b, f in found if r.get("truth") is not None]
        none = [(r, b, f) for r, b, f in found if r.get("truth") is None]
        n = max(1, len(said))
        right_any = sum(b == r["truth"] for r, b, _ in said)
        today_right = sum(bool(r["sure"]) and r.get("call") == r["truth"] for r, _, _ in said)
        today_wrong = sum(bool(r["sure"]) and r.get("call") is not None and r["call"] != r["truth"] for r, _, _ in said)
        sure = [(r, b) for r, b, f in said if b is not None and model.probability(f) >= model.sure_at]
        fit_right = sum(b == r["truth"] for r, b in sure)
        today_none = sum(bool(r["sure"]) and r.get("call") is not None for r, _, _ in none)
        fit_none = sum(b is not None and model.probability(f) >= model.sure_at for _, b, f in none)
        lines.append(
            f"| {name} | {cond} | {len(said)} | {100 * right_any / n:.1f} | {100 * today_right / n:.1f} | "
            f"{100 * today_wrong / n:.1f} | {100 * fit_right / n:.1f} | {100 * (len(sure) - fit_right) / n:.1f} | "
            f"{today_none} / {fit_none} |"
        )
    return "\n".join(lines)


def reliability(rows: Sequence[dict[str, Any]], model: decision.Decision) -> str:
    """Predicted probability against the share right, in bins, over the hearings of `rows`."""
    found = [(r, b, model.probability(f)) for r, b, f in examples(rows) if b is not None]
    edges = [0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1.0001]
    lines = ["| probability | hearings | mean predicted | share right |", "|---|---|---|---|"]
    for lo, hi in itertools.pairwise(edges):
        here = [(r, b, p) for r, b, p in found if lo <= p < hi]
        if not here:
            continue
        right = sum(b == r.get("truth") for r, b, _ in here)
        mean = sum(p for _, _, p in here) / len(here)
        lines.append(f"| {lo:g}-{min(hi, 1.0):g} | {len(here)} | {mean:.3f} | {right / len(here):.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.bench.decision", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", type=Path, nargs="+", required=True, help="the dumps the decision is fitted on")
    parser.add_argument("--report", type=Path, nargs="*", default=[], help="dumps the table reports on")
    parser.add_argument("--out", type=Path, default=None, help="write the fitted decision here (JSON)")
    args = parser.parse_args(argv)
    try:
        rows = [r for path in args.fit for r in load(path)]
        reported = [r for path in args.report for r in load(path)]
    except (OSError, ValueError) as exc:
        print(f"decision: {exc}", file=sys.stderr)
        return 2
    data, line = fitted(rows)
    command = "python -m lab.bench.decision " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    data["fitted_on"] = {
        "hearings": len(rows),
        "data_sha256": hashlib.sha256(b"".join(path.read_bytes() for path in args.fit)).hexdigest(),
        "command": command,
    }
    if args.out:
        args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    model = decision.Decision(
        np.asarray(data["mean"]), np.asarray(data["std"]), np.asarray(data["weights"]), data["bias"], data["sure_at"]
    )
    print(line)
    print("\nOn the fit data:\n" + table(rows, model))
    if reported:
        print("\nReported (never fitted on):\n" + table(reported, model))
        print("\nReliability on the reported dumps:\n" + reliability(reported, model))
    print(f"\n{command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
