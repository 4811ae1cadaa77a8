"""PostgreSQL fixtures: each test gets its own schema on the server named by
PHASEGATE_TEST_PG (default: the local CI server), dropped afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

PG = os.environ.get("PHASEGATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _connect():  # type: ignore[no-untyped-def]
    psycopg = pytest.importorskip("psycopg", reason="pip install '.[postgres]' for the PostgreSQL tests")
    try:
        return psycopg.connect(PG, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            raise  # CI's machine runs the server: not reaching it is a failure
        pytest.skip(f"no PostgreSQL at {PG}: {exc}")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose search_path is a fresh schema, so tests never see each other."""
    conn = _connect()
    schema = f"pgt_{uuid.uuid4().hex[:12]}"
    conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG else "?"
    try:
        yield f"{PG}{sep}options=-csearch_path%3D{schema}"
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()
