"""`Engine.runs_page`: a screen's page of the runs list and what it shows
beside it, in one snapshot of the store, on both backends. It says what the
six reads it replaces say, and a commit by another process during the read
is not half in it."""

from __future__ import annotations

from typing import Any

import pytest
from engine_harness import Harness

from phasegate import Engine
from phasegate.store._snapshot import snapshot


def _world(h: Harness) -> None:
    """done: completed; blk, dec: blocked on a changed tax table (dec
    approved, waiting for its next start); dead: its process killed mid-run;
    blk claimed by another operator."""
    assert h.run("done").returncode == 0
    for rid in ("blk", "dec", "dead"):
        assert h.run(rid, kill="start:report").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("blk").returncode == 3
    assert h.resume("dec").returncode == 3
    assert h.decide("dec", "approve").returncode == 0
    with Engine(h.target, create=False) as eng:
        eng.oversight.claim("blk", operator="ops-bob")


@pytest.mark.parametrize("statuses", [None, ("blocked",)])
def test_the_one_read_says_what_the_separate_reads_say(h: Harness, statuses: Any) -> None:
    _world(h)
    with Engine(h.target, create=False) as eng:
        page = eng.runs_page(limit=2, statuses=statuses, selected="blk")
        listed = eng.runs(statuses=statuses)
        assert [r.run_id for r in page.rows] == [r.run_id for r in listed[:2]]
        assert page.total == eng.count_runs(statuses=statuses) == len(listed)
        assert page.counts == eng.counts()
        assert page.workers == sum(1 for w in eng.workers() if w.alive)
        ids = [r.run_id for r in page.rows]
        assert page.claims == eng.oversight.claims(ids)
        assert "blk" in page.claims
        assert page.has_next == (len(listed) > 2) and not page.has_previous
        assert page.selected == eng.status("blk")
        # The next page starts after the last row read, and the last page is what is left.
        rest = eng.runs_page(limit=2, statuses=statuses, where="next", anchor=page.last_key, offset=0)
        assert [r.run_id for r in rest.rows] == [r.run_id for r in listed[2:4]]
        last = eng.runs_page(limit=3, statuses=statuses, where="last")
        assert [r.run_id for r in last.rows] == [r.run_id for r in listed[len(listed) - (len(listed) - 1) % 3 - 1 :]]


def test_a_run_that_is_gone_is_no_selection(h: Harness) -> None:
    assert h.run("done").returncode == 0
    with Engine(h.target, create=False) as eng:
        page = eng.runs_page(limit=10, selected="no-such-run")
        assert page.selected is None and [r.run_id for r in page.rows] == ["done"]


def test_a_commit_during_the_read_is_not_half_in_it(h: Harness) -> None:
    """The snapshot under `runs_page`: what another process commits while it
    is open is not seen by its later statements, and is by the next read."""
    assert h.run("first").returncode == 0
    with Engine(h.target, create=False) as eng:
        store = eng.store
        with snapshot(store.db) as conn:
            before = store.runs.count_matching(conn, statuses=None, text=None)
            assert h.run("second", real=True).returncode == 0  # another process commits meanwhile
            assert store.runs.count_matching(conn, statuses=None, text=None) == before == 1
            assert store.runs.count_by_status(conn) == {"completed": 1}
        page = eng.runs_page(limit=10)
        assert page.total == 2 and page.counts == {"completed": 2}
