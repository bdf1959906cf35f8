"""What the recognizer tests share: the committed transcripts' lines, and the grammar with two intents for
recordings of bare numbers and digit strings (not part of bingo.yaml)."""

from __future__ import annotations

from pathlib import Path

import yaml

from assistant.grammar import DEFAULT_GRAMMAR, Grammar


def script_lines(path: Path) -> list[tuple[float, str, str]]:
    """(seconds, role, words) of each timed line of a committed transcript."""
    out = []
    for line in path.read_text().splitlines():
        if line and line[0].isdigit():
            time, rest = line.split(" ", 1)
            role, words = rest.split(": ", 1)
            out.append((float(time), role, words))
    return out


def recordings_grammar() -> Grammar:
    """bingo.yaml plus `number-only` and `digits-only`, for the AN4 and FSDD recordings."""
    data = yaml.safe_load(DEFAULT_GRAMMAR.read_text(encoding="utf-8"))
    data["intents"]["number-only"] = {"templates": ["{number}"]}
    data["intents"]["digits-only"] = {"templates": ["{serial}"]}
    return Grammar(data)
