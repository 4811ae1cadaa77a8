"""#17: the console an on-call operator trusts at 3 a.m. Each test is one
finding, driven with keys through Pilot on a real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.widgets import RunsTable
from phasegate.console.widgets.runs_table import frontier
from tests.console import fixtures as fx
from tests.console import wf as fixture_wf
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio

#: Run ids that differ only at their end, as dated runs do.
LOOKALIKES = ("pipeline-orders-2026-11-27", "pipeline-orders-2026-11-28", "pipeline-orders-2026-11-29")


def add_lookalikes(db: Path) -> None:
    with fx.quiet_engine(), Engine(db, clock=fx.frozen(fx.NOW - 600), lease_seconds=fx.LEASE) as eng:
        for run_id in LOOKALIKES:
            eng.run(fixture_wf.wf, run_id, {"invoices": 1})


def column(table: RunsTable, key: str) -> dict[str, str]:
    """What the table shows in one column, by run id (a cell wider than its
    column would be cut at its end: the test fails on that too)."""
    width = table.columns[key].width  # type: ignore[index]
    cells = {str(row.key.value): table.get_cell(row.key, key).plain for row in table.ordered_rows}
    assert all(len(c) <= width for c in cells.values()), (width, cells)
    return cells


async def test_the_list_shows_the_frontier_the_detail_shows(store: Path, make_app: Any) -> None:
    """Finding 1: the integrity-blocked run's frontier is the trusted one in both views."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        listed = column(table, "frontier")
        for run_id in fx.STOPPED.values():
            detail = DetailScreen(app, run_id)
            await app.push_screen(detail)
            await settle(pilot)
            assert detail.run_view is not None
            fr = detail.run_view.frontier
            expected = f"{fr.index}/{fr.of}"
            assert listed[run_id].startswith(expected), (run_id, listed[run_id], fr)
            if fr.index < fr.of:
                assert str(fr.phase) in listed[run_id], (run_id, listed[run_id], fr)
            await pilot.press("escape")
            await settle(pilot)
        summary = next(r for r in app.engine.runs() if r.run_id == fx.INTEGRITY)
        assert listed[fx.INTEGRITY] == frontier(summary)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_run_ids_can_be_told_apart_at_80_and_100_columns(
    store: Path, make_app: Any, size: tuple[int, int]
) -> None:
    """Finding 2: ids that differ at their end keep their end; none is cut to the same text."""
    add_lookalikes(store)
    app = make_app(store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        ids = column(app.screen.query_one(RunsTable), "run_id")
        assert len(set(ids.values())) == len(ids), ids
        for run_id in LOOKALIKES:
            assert ids[run_id].endswith("2026-11-" + run_id[-2:]), ids[run_id]
            assert ids[run_id].startswith("pipeline"), ids[run_id]
