"""#16 finding 14: a read-only engine (what the console opens) changes no
byte of an SQLite store, even when a killed writer left its WAL behind:
closing it must not checkpoint that WAL into the database file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from phasegate import Engine

pytestmark = pytest.mark.sqlite_only


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_a_read_only_open_and_close_changes_no_byte(h):
    assert h.run("r1", kill="start:report").killed  # SIGKILL: the WAL is left as it was
    wal = Path(str(h.db) + "-wal")
    assert wal.exists() and wal.stat().st_size > 0
    before = (_digest(h.db), _digest(wal))
    with Engine(h.db, readonly=True, create=False) as eng:
        assert eng.status("r1").status == "interrupted"
        assert [r.run_id for r in eng.runs()] == ["r1"]
        assert eng.verify(record=False)[0].ok
    assert (_digest(h.db), _digest(wal)) == before
