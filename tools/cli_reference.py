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
    sys.path.insert(0, str(ROOT))
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
    check = "--check" in sys.argv[1:]
    text = render()
    if check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is not current: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
