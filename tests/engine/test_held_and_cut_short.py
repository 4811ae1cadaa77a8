"""Issue #29, the leftovers (finding 12): a holder frozen inside its commit
keeps its run's row locked, and `decide` gives up with one line instead of
waiting without bound (PostgreSQL: a `lock_timeout`; SQLite: its busy
timeout); a store file cut short by another process while `verify` reads
it is one line, not SIGBUS."""

from __future__ import annotations

import os

import pytest
from engine_harness import BILLING_FILE, Harness, one_line_error, spawn

from tests.support import cli
from tests.support.pause import thaw, wait_for, wait_stopped

LEASE = {"PHASEGATE_LEASE_SECONDS": "1"}


def test_decide_gives_up_on_a_row_a_frozen_commit_holds(h: Harness) -> None:
    # Frozen inside the checkpoint transaction of `charge`, whose last
    # effect's completion rides with it: the run's row is locked on both
    # backends until the holder thaws.
    child = spawn(
        ["run", f"{BILLING_FILE}:wf", "--run-id", "r1", "--input", h.inputs(), "--db", h.target],
        {**h.env, **LEASE, "PHASEGATE_PAUSE_AT": "in-commit:charge"},
    )
    try:
        assert wait_stopped(child.pid, child.alive), child.result
        wait_for(lambda: h.status("r1")["status"] == "stalled", what="stalled")
        # The old code waited here until the harness's timeout ended it.
        p = cli.run(
            ["decide", "r1", "reset", "--reason", "stuck", "--db", h.target], env={**h.env, **LEASE}, timeout=60
        )
        assert "locked" in one_line_error(p)
        assert h.status("r1")["decisions"] == []  # nothing recorded
    finally:
        thaw(child.pid)
    res = child.wait()
    assert res.returncode == 4 and "lease lost" in res.stderr, res
    # The holder gone, the same decision goes through.
    assert h.decide("r1", "reset", reason="stuck").returncode == 0


BIG = """from phasegate import Workflow

wf = Workflow("big")


@wf.phase()
def load(ctx) -> str:
    return "x" * 300_000 + ctx.run_id


@wf.phase(needs=["load"])
def more(ctx, load) -> str:
    return load[::-1]
"""


@pytest.mark.sqlite_only
def test_verify_of_a_file_cut_short_under_it_is_one_line(h: Harness) -> None:
    src = h.tmp / "big.py"
    src.write_text(BIG)
    for i in range(6):
        assert h.cli("run", f"{src}:wf", "--run-id", f"r{i}", "--input", "{}").returncode == 0
    assert h.cli("verify").returncode == 0
    # Frozen while it reads the first run, the verify has the file open; a
    # process that is not phasegate cuts it to a third meanwhile.
    child = cli.start(["verify", "--db", str(h.db)], env={**h.env, "PHASEGATE_PAUSE_AT": "in-verify:r0"}, mode="exec")
    try:
        assert wait_stopped(child.pid, child.alive), child.result
        os.truncate(h.db, os.path.getsize(h.db) // 3)
    finally:
        thaw(child.pid)
    res = child.wait()
    assert not res.killed and res.returncode != -7, res  # -7: SIGBUS, the mapped read past the end
    assert "damaged" in one_line_error(res), res
