"""Snapshots of what #28 changed, at 80x24, 120x40 and under NO_COLOR: a
running run's holder and heartbeat in the detail, a decision the policy
makes a proposal, a new stop in the header, and the selection of the copy
list and the rewind picker without colour."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.widgets import RunsTable
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.console.test_console_snapshots import SIZES, _detail


def held_elsewhere(db: Path) -> None:
    """The running run held by a process on another host (so no pid is
    looked at), its heartbeat 4 s before the frozen now."""
    con = sqlite3.connect(db)
    con.execute(
        "UPDATE phasegate_runs SET lease_owner = 'node-7:30500:ab12', lease_host = 'node-7', lease_pid = 30500,"
        " heartbeat_at = ?, lease_expires_at = ? WHERE run_id = ?",
        (fx.NOW - 4, fx.NOW + 26, fx.RUNNING),
    )
    con.commit()
    con.close()


@pytest.mark.parametrize("size", SIZES)
def test_detail_of_a_running_run_names_its_holder(
    store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]
) -> None:
    held_elsewhere(store)
    assert snap_compare(make_app(store), terminal_size=size, run_before=_detail(fx.RUNNING))


@pytest.mark.parametrize("size", SIZES)
def test_approve_modal_under_a_second_operator_policy(
    store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]
) -> None:
    with Engine(store, clock=fx.frozen()) as eng:
        eng.oversight.set_policy(require_second="approve", reason="four eyes")
    assert snap_compare(make_app(store), terminal_size=size, run_before=_detail(fx.ENV_MISMATCH, ("a", *"checked")))


@pytest.mark.parametrize("size", SIZES)
def test_a_new_stop_in_the_header(store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    held_elsewhere(store)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        table = pilot.app.screen.query_one(RunsTable)
        table.move_cursor(row=table.get_row_index(fx.COMPLETED))
        await settle(pilot)
        # Its lease lapses with no write: the next look at the clock says so.
        con = sqlite3.connect(store)
        con.execute("UPDATE phasegate_runs SET lease_expires_at = ? WHERE run_id = ?", (fx.NOW - 1, fx.RUNNING))
        con.commit()
        con.close()
        pilot.app._refresh_screens()
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("what", ["copy", "rewind"])
def test_no_color_selection(
    store: Path, make_app: Any, snap_compare: Any, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(store)
    keys = ("y", "j") if what == "copy" else ("w",)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.app.push_screen(DetailScreen(pilot.app, fx.ENV_MISMATCH))
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_no_color_detail_of_a_running_run(
    store: Path, make_app: Any, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    held_elsewhere(store)
    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=_detail(fx.RUNNING))
