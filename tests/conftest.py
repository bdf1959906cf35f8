"""Fixtures shared by the procedure's tests: the grammar and the rule pack, as the product loads them."""

from __future__ import annotations

import pytest

from assistant.grammar import Grammar
from assistant.rules import RulePack


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


@pytest.fixture(scope="module")
def rules() -> RulePack:
    return RulePack.load()
