"""The configuration reference, made from the settings' attribute docstrings: config/default.toml (every setting,
as a hall reads it) and docs/configuration.md.

    python -m assistant.settings_reference           rewrite both from the code
    python -m assistant.settings_reference --check   exit 1 naming each one that is not current

A setting's docstring is the string under its field (`name: type = default`, then `\"\"\"What it does.\"\"\"`), read
from the source of its dataclass or of the dataclass it extends; its default is the one `Settings()` holds.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import json
import math
import re
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from .settings import DEFAULT_CONFIG, ROOT, SECTIONS, Settings

REFERENCE = ROOT / "docs" / "configuration.md"
WIDTH = 120
"""The line length of both files, as the code's."""
COMMAND = "python -m assistant.settings_reference"


class ReferenceError(ValueError):
    """A setting has no docstring, or a default that no TOML value holds."""


@functools.cache
def _class_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of the fields `cls` itself declares, by field name."""
    node = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(node, ast.ClassDef)
    docs: dict[str, str] = {}
    for field, after in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[field.target.id] = _one_paragraph(after.value.value)
    return docs


def _one_paragraph(text: str) -> str:
    return " ".join(inspect.cleandoc(text).split())


def attribute_docs(kind: type) -> dict[str, str]:
    """The docstring of each field of dataclass `kind`: its own, or the one of the dataclass it extends."""
    docs: dict[str, str] = {}
    for cls in reversed(kind.__mro__):
        if is_dataclass(cls):
            docs.update(_class_docs(cls))
    missing = [f.name for f in fields(kind) if f.name not in docs]
    if missing:
        raise ReferenceError(f"{kind.__name__}: no docstring for {', '.join(missing)}")
    return docs


def toml_value(value: Any) -> str:
    """A default as TOML writes it; None is "" (TOML has no null), a path under the project its relative path."""
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Path):
        return json.dumps(str(value.relative_to(ROOT) if value.is_relative_to(ROOT) else value))
    if isinstance(value, frozenset):
        return "[" + ", ".join(json.dumps(v) for v in sorted(value)) + "]"
    raise ReferenceError(f"no TOML value for {value!r}")


def entries(section: str) -> list[tuple[str, str, str]]:
    """(name, default as TOML, docstring) of each setting of a section, in the dataclass's order. Where the default
    is not the dataclass's own (the hall cutting), the docstring ends with that."""
    part = getattr(Settings(), section)
    own = type(part)()
    docs = attribute_docs(type(part))
    out = []
    for f in fields(part):
        value = getattr(part, f.name)
        doc = docs[f.name]
        if getattr(own, f.name) != value:
            doc += f" ({type(part).__name__} default: {toml_value(getattr(own, f.name))}.)"
        out.append((f.name, toml_value(value), doc))
    return out


HEADER = """Every setting of bingo-assistant, with its default. A hall's own file (--config PATH, before the verb)
overrides any of these; command-line flags override both. Paths in config/default.toml are relative to the project
root, those in a hall's file to that file, unless absolute (`[store] db` and `[whisper] adapter`: to the working
directory). An empty value ("") is none: what is used instead is said with the setting. An unknown section or
setting is an error naming it."""
MADE = f"""Made from the settings' docstrings in the code by `{COMMAND}`: change those and run it
(tests/test_configuration.py fails when this file is not current)."""


def _comment(text: str, width: int = WIDTH) -> list[str]:
    return textwrap.wrap(
        text, width, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False, break_long_words=False
    )


def default_toml() -> str:
    """config/default.toml: each section and setting under its docstring, as comments."""
    lines = [*_comment(_one_paragraph(HEADER)), "#", *_comment(_one_paragraph(MADE))]
    section_docs = attribute_docs(Settings)
    for section in SECTIONS:
        lines += ["", *_comment(section_docs[section]), f"[{section}]"]
        for name, value, doc in entries(section):
            lines += [*_comment(doc), f"{name} = {value}"]
    return "\n".join(lines) + "\n"


_BLOCK_START = re.compile(r" (?=(?:[-*+>#]|\d+[.)])(?: |$))")
"""A space before what would open a list, a quote or a heading at the start of a line."""


def _wrap(text: str, subsequent_indent: str = "") -> list[str]:
    """Markdown text in lines of at most WIDTH, none of them opening a block."""
    kept = _BLOCK_START.sub("\0", text)
    lines = textwrap.wrap(
        kept, WIDTH, subsequent_indent=subsequent_indent, break_on_hyphens=False, break_long_words=False
    )
    return [line.replace("\0", " ") for line in lines]


def markdown() -> str:
    """docs/configuration.md: the same, as a page."""
    wrap = _wrap
    lines = ["# Configuration", "", *wrap(_one_paragraph(HEADER)), ""]
    lines += wrap(
        "The bundled defaults are config/default.toml; a hall's file holds only what it changes, e.g. "
        "`[endpoint]` `hangover = 0.8` in a hall whose caller pauses long between a letter and its number."
    )
    lines += ["", *wrap(_one_paragraph(MADE.replace("this file", "this page")))]
    section_docs = attribute_docs(Settings)
    lines += ["", *wrap("Sections: " + ", ".join(f"[[{s}]](#{s})" for s in SECTIONS) + ".")]
    for section in SECTIONS:
        lines += ["", f"## [{section}]", "", *wrap(section_docs[section]), ""]
        for name, value, doc in entries(section):
            lines += wrap(f"- `{name} = {value}`: {doc}", subsequent_indent="  ")
    return "\n".join(lines) + "\n"


def made() -> dict[Path, str]:
    """Each file this tool writes, with what it holds when current."""
    return {DEFAULT_CONFIG: default_toml(), REFERENCE: markdown()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is not current")
    args = parser.parse_args(argv)
    return write_or_check(made(), COMMAND, check=args.check)


def write_or_check(files: dict[Path, str], command: str, *, check: bool) -> int:
    """Rewrite each generated file (`files`: path and what it holds when current) that is not current, naming it;
    with `check`, change nothing and name each one on stderr with the `command` that remakes it (exit status 1)."""
    stale = {
        path: text for path, text in files.items() if not path.exists() or path.read_text(encoding="utf-8") != text
    }
    if check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is not current: run {command}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in stale.items():
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
