"""The runs list: needs attention first from the stored rank (schema 4), an
interrupted run placed by its lapsed or dead holder, every order paged by
keyset, and a version-3 store upgraded with its ranks filled in."""

from __future__ import annotations

from typing import Any

import pytest
from engine_harness import Harness

from phasegate import Engine
from phasegate.store.schema import SCHEMA_VERSION

ORDERS = ["attention", "workflow", "status", "frontier", "last_checkpoint_at", "run_id"]


def _world(h: Harness) -> None:
    """done: completed; blk: blocked on a changed tax table; dec: blocked and
    approved (waiting for its next start); dead: its process killed mid-run."""
    assert h.run("done").returncode == 0
    for rid in ("blk", "dec", "dead"):
        assert h.run(rid, kill="start:report").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("blk").returncode == 3
    assert h.resume("dec").returncode == 3
    assert h.decide("dec", "approve").returncode == 0


def _listed(h: Harness) -> list[str]:
    p = h.cli("status")
    assert p.returncode == 0, p.stderr
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def _ranks(h: Harness) -> dict[str, int]:
    return {str(r): int(k) for r, k in h.sql("SELECT run_id, attention_rank FROM phasegate_runs")}


def test_attention_order_comes_from_the_stored_rank(h: Harness) -> None:
    _world(h)
    # A person first (blocked, and interrupted: its holder is dead), then what
    # was decided, then the rest; the newest change first within each.
    assert _listed(h) == ["blk", "dead", "dec", "done"]
    assert _ranks(h) == {"blk": 0, "dec": 1, "dead": 2, "done": 3}
    # Carried out, the decision no longer ranks the run as waiting for one.
    assert h.resume("dec").returncode == 0
    assert _ranks(h)["dec"] == 3
    assert _listed(h) == ["blk", "dead", "dec", "done"]


def test_every_order_pages_by_keyset_forward_and_back(h: Harness) -> None:
    _world(h)
    with Engine(h.target, create=False) as eng:
        for name in ORDERS:
            for order in (name, "-" + name):
                whole = [r.run_id for r in eng.runs(order=order)]
                assert sorted(whole) == ["blk", "dead", "dec", "done"], order
                forward: list[str] = []
                after: Any = None
                while True:
                    page = eng.runs(order=order, limit=1, after=after)
                    if not page:
                        break
                    forward += [r.run_id for r in page]
                    after = page[-1].sort_key
                assert forward == whole, order
                backward: list[str] = []
                before: Any = None
                while True:
                    page = eng.runs(order=order, limit=1, after=before, backward=True)
                    if not page:
                        break
                    backward = [r.run_id for r in page] + backward
                    before = page[0].sort_key
                assert backward == whole, order
                # Read again from a row's own key (a live refresh): the same rows.
                again = eng.runs(order=order, limit=2, after=eng.runs(order=order)[1].sort_key, inclusive=True)
                assert [r.run_id for r in again] == whole[1:3], order
        # Filters page the same way.
        blocked = eng.runs(statuses=["blocked"], limit=1)
        assert [r.run_id for r in blocked] == ["blk"]
        rest = eng.runs(statuses=["blocked"], limit=5, after=blocked[0].sort_key)
        assert [r.run_id for r in rest] == ["dec"]


def test_a_version_3_store_is_upgraded_with_its_ranks(h: Harness) -> None:
    _world(h)
    before = _listed(h)
    h.sql("DROP INDEX ix_runs_rank")
    h.sql("DROP INDEX ix_runs_status_lease")
    h.sql("ALTER TABLE phasegate_runs DROP COLUMN attention_rank")
    h.sql("UPDATE phasegate_meta SET value='3' WHERE key='schema_version'")
    assert _listed(h) == before  # a writable open upgrades, and the list does not notice
    assert h.sql("SELECT value FROM phasegate_meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert _ranks(h) == {"blk": 0, "dec": 1, "dead": 2, "done": 3}
    with Engine(h.target, create=False) as eng:
        assert [r.run_id for r in eng.runs(limit=2, after=eng.runs(limit=1)[0].sort_key)] == before[1:3]


def test_status_reads_the_list_without_the_engine_and_says_the_same(h: Harness) -> None:
    """`phasegate status` lists an SQLite store through the driver
    (quickstatus.py); with a lease setting to check, the engine lists it.
    The two say the same, byte for byte."""
    _world(h)
    quick = h.cli("status")
    full = h.cli("status", env={"PHASEGATE_LEASE_SECONDS": "30"})
    assert quick.returncode == full.returncode == 0
    assert quick.stdout == full.stdout
    assert "interrupted" in quick.stdout


@pytest.mark.sqlite_only
def test_status_does_not_load_sqlalchemy_or_textual(h: Harness) -> None:
    _world(h)
    # Python names every module it imports on stderr (-X importtime).
    p = h.cli("status", env={"PYTHONPROFILEIMPORTTIME": "1"}, real=True)
    assert p.returncode == 0 and "blk" in p.stdout
    loaded = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    assert "phasegate.views.quickstatus" in loaded
    assert not {"sqlalchemy", "textual", "watchfiles"} & loaded
