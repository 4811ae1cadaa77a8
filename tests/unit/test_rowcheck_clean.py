"""`_rowcheck.clean_sql`: the checks SQLite makes on a checkpoint row as a
verify reads it must never pass a row the checks in Python refuse (verify
checks in Python only the rows SQLite flags)."""

from __future__ import annotations

import sqlite3
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateTable

from phasegate.store import _rowcheck
from phasegate.store.schema import checkpoints
from phasegate.store.store import _LIVE_RANGE, _STORED_BYTES, _StoredCheckpoint

#: What a damaged value can be, in every SQLite storage class.
_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.sampled_from(["live", "discarded", "phase", "rewind", "present", "pruned", "pres,nt", "", "{}"]),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.sampled_from([b"live", b"phase", b"present"]),
)
_COLUMNS = [c.name for c in checkpoints.columns if c.name != "id"]
_SELECT = _LIVE_RANGE[: _LIVE_RANGE.index(" WHERE ")]


def _store() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(str(CreateTable(checkpoints).compile(dialect=sqlite_dialect.dialect())))
    return conn


_GOOD: dict[str, Any] = {
    "run_id": "r1",
    "epoch": 0,
    "seq": 3,
    "kind": "phase",
    "phase": "load",
    "envelope": '{"v":1}',
    "payload_hash": "ab",
    "prev_hash": "genesis",
    "output_json": "[1]",
    "output_state": "present",
    "output_bytes": 3,
    "archive_path": None,
    "created_at": 1.7e9,
    "status": "live",
}


def _read(conn: sqlite3.Connection, row: dict[str, Any]) -> Any:
    conn.execute("DELETE FROM phasegate_checkpoints")
    names = ", ".join(row)
    conn.execute(
        f"INSERT INTO phasegate_checkpoints ({names}) VALUES ({', '.join('?' for _ in row)})", list(row.values())
    )
    (found,) = conn.execute(_SELECT).fetchall()
    return _StoredCheckpoint._make(found)


def test_a_whole_row_is_clean() -> None:
    row = _read(_store(), _GOOD)
    assert row.clean == 1 and row.envelope == b'{"v":1}' and row.output_json == b"[1]"
    assert _rowcheck._column_problem(checkpoints, row, _STORED_BYTES) is None


@settings(max_examples=400, deadline=None)
@given(damage=st.dictionaries(st.sampled_from(_COLUMNS), _VALUES, min_size=1, max_size=3))
def test_sqlite_never_passes_a_row_the_checks_refuse(damage: dict[str, Any]) -> None:
    conn = _store()
    try:
        row = _read(conn, {**_GOOD, **damage})
    except sqlite3.Error:
        return  # the driver refused the value itself (text that is not UTF-8): a store error, not a clean row
    problem = _rowcheck._column_problem(checkpoints, row, _STORED_BYTES)
    if row.clean:
        assert problem is None, (damage, problem)


def test_a_blob_in_a_text_column_is_named() -> None:
    """A number written there is stored as text (the column's affinity); a
    blob stays a blob, and a resume would read it as bytes."""
    row = _read(_store(), {**_GOOD, "envelope": b'{"v":1}'})
    assert not row.clean
    assert _rowcheck._column_problem(checkpoints, row, _STORED_BYTES) == "envelope is stored as blob, not text"
