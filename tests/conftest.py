"""Fixtures shared by the tests: the grammar and the rule pack as the product loads them, and a PostgreSQL server."""

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
