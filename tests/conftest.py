"""Fixtures shared by the tests: the grammar and the rule pack as the product loads them, and a PostgreSQL server.

The tiers: a test that needs more than this process and its files is marked with what it needs (`engine`, `live`,
`browser`, `postgres`, `training`; pyproject.toml lists them), and each of these is `slow` too. `pytest -m "not
slow"` is the fast tier: no model is loaded in it (the model paths point nowhere while a fast test runs, so one
that loads a model fails and says to mark it).
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator

import pytest

from assistant.grammar import Grammar
from assistant.rules import RulePack
from assistant.store import StoreError
from assistant.store.cluster import Cluster

TIERS = ("engine", "live", "browser", "postgres", "training")
"""What a test may need beyond this process; each is in the slow tier."""
NO_MODEL = "/nonexistent/the fast tier loads no model: mark the test engine"
MODEL_PATHS = ("BINGO_WHISPER_MODEL", "BINGO_VOSK_MODEL")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "pg_cluster" in item.fixturenames:
            item.add_marker(pytest.mark.postgres)
        if any(item.get_closest_marker(tier) for tier in TIERS):
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run of the fast tier alone: no model can be loaded, even by a fixture shared by a module's tests."""
    if session.items and not any(item.get_closest_marker("slow") for item in session.items):
        for name in MODEL_PATHS:
            os.environ[name] = NO_MODEL


@pytest.fixture(autouse=True)
def _fast_tests_load_no_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test outside the slow tier that loads a model (in this process or in a CLI it runs) fails."""
    if request.node.get_closest_marker("slow") is None:
        for name in MODEL_PATHS:
            monkeypatch.setenv(name, NO_MODEL)


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


@pytest.fixture(scope="module")
def rules() -> RulePack:
    return RulePack.load()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL server for the session (Debian's postgresql, loopback, a temporary folder). Without it
    the tests that need it skip with the reason, unless BINGO_REQUIRE_PG (CI) makes that a failure."""
    cluster: Cluster | None = None
    try:
        import psycopg  # noqa: F401

        cluster = Cluster()
        cluster.start()
    except (ImportError, StoreError, OSError, subprocess.SubprocessError) as exc:
        if cluster is not None:
            cluster.remove()
        why = f"PostgreSQL cannot start here: {exc}"
        if os.environ.get("BINGO_REQUIRE_PG"):
            pytest.fail(f"BINGO_REQUIRE_PG is set but {why}")
        pytest.skip(why)
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh database on the session's server, for one test (its URL, no hall yet)."""
    return pg_cluster.create_database(f"t{next(_DATABASES)}")


_DATABASES = itertools.count(1)
