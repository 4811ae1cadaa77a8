"""Fixtures for the engine's tests; the harness itself is in engine_harness.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_harness import Harness


@pytest.fixture(params=["sqlite", "postgres"])
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """One suite, both backends: every test that uses `h` runs against an
    SQLite file and against its own PostgreSQL schema."""
    if request.param == "sqlite":
        yield Harness(tmp_path)
        return
    if request.node.get_closest_marker("sqlite_only"):
        pytest.skip("about SQLite files; PostgreSQL has none")
    from pg_schema import pg_schema

    with pg_schema() as url:
        yield Harness(tmp_path, pg_url=url)


@pytest.fixture(scope="session")
def clean_report_hash(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The hash of an uninterrupted run's result, to compare resumed runs with."""
    h = Harness(tmp_path_factory.mktemp("clean"))
    p = h.run("clean")
    assert p.returncode == 0, p
    return h.report_hash("clean")
