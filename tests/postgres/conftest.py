"""PostgreSQL fixtures: each test gets its own schema on the server named by
PHASEGATE_TEST_PG (default: the local CI server), dropped afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.pg_schema import pg_schema


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose search_path is a fresh schema, so tests never see each other."""
    with pg_schema() as url:
        yield url
