"""The documentation's relative links lead to files that exist: README.md, CHANGELOG.md and every page of docs/."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.settings import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
"""A Markdown link's target: `[text](target)`."""
MENTION = re.compile(r"(?<![\w./-])docs/[\w./-]*\w\.(?:md|png|svg|mmd)")
"""A page of docs/ named in the text by its path from the repository's root (`docs/live.md`)."""

PAGES = sorted({ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").rglob("*.md")})


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links and docs/ mentions of `page` that lead to no file (anchors ignored)."""
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor of this page
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    broken.extend(m for m in MENTION.findall(text) if not (root / m).exists())
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    assert broken_links(page) == []


def test_a_link_to_a_missing_page_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# There\n", encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[ok](there.md#top) [gone](gone.md) [web](https://example.org/x.md) [here](#top)\n"
        "see docs/there.md and docs/missing.md, or `docs/there.md`\n",
        encoding="utf-8",
    )
    assert broken_links(page, tmp_path) == ["gone.md", "docs/missing.md"]


def test_the_documentation_says_what_holds_now_not_when_it_was_found() -> None:
    """No page reads as a diary: no "session 12", "issue 19" or "stop 3" naming when something was found."""
    diary = re.compile(r"\b(session|issue|stop)s?[ -]#?[0-9]", re.IGNORECASE)
    for page in PAGES:
        found = [m.group(0) for m in diary.finditer(page.read_text(encoding="utf-8"))]
        assert found == [], f"{page.relative_to(ROOT)}: {found}"


def test_the_command_line_reference_is_current_with_the_parser() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "cli_reference.py"), "--check"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


LAB_COMMAND = re.compile(r"python -m (lab(?:\.\w+)+)((?: [a-z][\w-]*)?)")
"""A lab command the docs name, with its verb when it has one (`python -m lab.bench hall`)."""


def lab_commands() -> list[tuple[str, ...]]:
    named = set()
    for page in PAGES:
        for module, verb in LAB_COMMAND.findall(page.read_text(encoding="utf-8")):
            named.add((module, *verb.split()))
    return sorted(named)


def test_the_docs_name_lab_commands() -> None:
    assert len(lab_commands()) >= 8, lab_commands()


@pytest.mark.parametrize("command", lab_commands(), ids=" ".join)
def test_every_lab_command_the_docs_name_runs_from_the_lab(command: tuple[str, ...]) -> None:
    """Each `python -m lab...` the docs name is a module of lab/ (and a verb it takes) run from the repository."""
    module, *verb = command
    run = subprocess.run(
        [sys.executable, "-m", module, *verb, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-500:]
