"""Write docs/cli.md, the command-line reference, from the parser `bingo-assistant` runs (`--check`: exit 1 when the
page is not current; tests/test_docs.py runs it).

    python tools/cli_reference.py [--check]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
sys.path.insert(0, str(ROOT))  # the checkout's assistant, whatever is installed
WIDTH = "100"
"""Columns the help is laid out in, whatever the terminal."""


def _verbs(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, str]]:
    """Each verb and sub-verb: its words, its one-line help and its whole --help."""
    found = []
    for action in parser._actions:  # argparse keeps its sub-parsers here only
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                words = (*path, name)
                found.append((words, helps.get(name, ""), sub.format_help()))
                found.extend(_verbs(sub, words))
    return found


def render() -> str:
    os.environ["COLUMNS"] = WIDTH  # argparse lays help out to the terminal's width
    from assistant.__main__ import build_parser

    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Made from the parser itself by `python tools/cli_reference.py` (a test fails when this page is not",
        "current). Settings a hall keeps in a file are in [configuration.md](configuration.md); flags override them.",
        "Exit status: 0 compliant or done, 1 findings, 2 bad input or a usage error (one line on stderr).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for words, helped, text in _verbs(parser):
        lines += ["", f"{'#' * min(len(words) + 1, 4)} `bingo-assistant {' '.join(words)}`", ""]
        if helped:
            lines += [helped[0].upper() + helped[1:] + ".", ""]
        lines += ["```text", text.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def main() -> int:
    from assistant.settings_reference import write_or_check

    return write_or_check({PAGE: render()}, "python tools/cli_reference.py", check="--check" in sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
