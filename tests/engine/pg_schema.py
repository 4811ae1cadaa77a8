"""A fresh PostgreSQL schema for one test, on the server PHASEGATE_TEST_PG
names (default: the local server CI runs), dropped afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

PG = os.environ.get("PHASEGATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@contextmanager
def pg_schema() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg", reason="pip install '.[postgres]' for the PostgreSQL tests")
    try:
        conn = psycopg.connect(PG, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            raise  # CI's machine runs the server: not reaching it is a failure
        pytest.skip(f"no PostgreSQL at {PG}: {exc}")
    schema = f"pgt_{uuid.uuid4().hex[:12]}"
    conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in PG else "?"
    try:
        yield f"{PG}{sep}options=-csearch_path%3D{schema}"
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()
