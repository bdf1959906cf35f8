"""The configuration reference: config/default.toml and docs/configuration.md are made from the settings' docstrings,
and hold every setting with its default."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from dataclasses import fields

import pytest

from assistant.settings import DEFAULT_CONFIG, ROOT, SECTIONS, Settings, load_settings
from assistant.settings_reference import REFERENCE, ReferenceError, attribute_docs, default_toml, markdown


def test_the_bundled_file_and_the_reference_are_current_with_the_code() -> None:
    """Run `python -m assistant.settings_reference` after changing a setting or its docstring."""
    assert DEFAULT_CONFIG.read_text(encoding="utf-8") == default_toml()
    assert REFERENCE.read_text(encoding="utf-8") == markdown()
    check = subprocess.run(
        [sys.executable, "-m", "assistant.settings_reference", "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert (check.returncode, check.stderr) == (0, "")


def test_the_bundled_file_holds_every_setting_at_the_codes_default() -> None:
    written = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    settings = Settings()
    assert list(written) == list(SECTIONS)
    for section in SECTIONS:
        assert set(written[section]) == {f.name for f in fields(getattr(settings, section))}, section
    assert load_settings() == settings


def test_every_setting_has_its_docstring_in_both() -> None:
    toml, page = default_toml(), markdown()
    for section in SECTIONS:
        docs = attribute_docs(type(getattr(Settings(), section)))
        for name, doc in docs.items():
            first_words = " ".join(doc.split()[:6])
            assert f"`{name} = " in page and first_words in " ".join(page.split()), (section, name)
            assert first_words in " ".join(toml.replace("# ", " ").split()), (section, name)


def test_a_setting_without_a_docstring_is_named() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Undocumented:
        said: int = 1
        """Documented."""
        unsaid: int = 2

    with pytest.raises(ReferenceError, match="Undocumented: no docstring for unsaid"):
        attribute_docs(Undocumented)
