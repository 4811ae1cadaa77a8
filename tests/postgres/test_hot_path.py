"""The checkpoint's hot path on PostgreSQL (issue 12). A checkpoint with no
effect completion waiting is one statement that commits itself, and so is
the lease read before a phase. Neither may leave the reused connection in
autocommit (SQLAlchemy's transactions on it rely on explicit ones), and
neither may roll back: psycopg forgets its prepared statements at every
ROLLBACK, and the checkpoint's statement was parsed afresh at each boundary."""

from __future__ import annotations

from typing import Any

import pytest

from phasegate import Engine, Workflow
from phasegate.run import lease


def _chain(phases: int) -> Workflow:
    wf = Workflow("chain")
    prev: str | None = None
    for i in range(phases):
        name = f"p{i:02d}"

        def fn(ctx: Any, **needs: Any) -> dict[str, int]:
            return {"n": len(needs)}

        wf.phase(name, needs=[prev] if prev else [])(fn)
        prev = name
    return wf


def test_lease_reads_keep_the_checkpoint_statement_prepared(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every phase reads the lease first (no recent fenced commit counts).
    monkeypatch.setattr(lease, "RECHECK_AFTER", -1.0)
    with Engine(pg_url) as eng:
        res = eng.run(_chain(12), "r1")
        assert res.status == "completed"
        with eng.store.hot() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None and raw.autocommit is False
            prepared = [str(s) for (s,) in conn.exec_driver_sql("SELECT statement FROM pg_prepared_statements")]
            entries = conn.exec_driver_sql("SELECT count(*) FROM phasegate_checkpoints WHERE run_id = 'r1'").scalar()
        assert any(s.startswith("WITH moved AS (UPDATE phasegate_runs") for s in prepared), prepared
        assert any(s.startswith("SELECT 1 FROM phasegate_runs") for s in prepared), prepared
        assert entries == 12


def test_a_write_after_the_hot_path_is_still_one_transaction(pg_url: str) -> None:
    """The connection went back to explicit transactions: a write that fails
    half-way leaves nothing of its first statement."""
    with Engine(pg_url) as eng:
        eng.run(_chain(3), "r1")
        with pytest.raises(RuntimeError):
            with eng.store.hot() as conn:
                conn.exec_driver_sql("UPDATE phasegate_runs SET notes_json = '[\"half\"]' WHERE run_id = 'r1'")
                raise RuntimeError("half-way")
        with eng.store.hot() as conn:
            notes = conn.exec_driver_sql("SELECT notes_json FROM phasegate_runs WHERE run_id = 'r1'").scalar()
        assert notes == "[]"
