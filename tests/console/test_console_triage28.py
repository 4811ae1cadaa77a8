"""What an on-call operator met triaging the demo store (#28), each a Pilot
test over the fixture store: the cause view's cursor across refreshes, the
policy's proposal said before Enter, `y`'s effect keys and probe names, a
new stop drawing the eye, marked runs that need no decision."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console import service
from phasegate.console.screens.action_modal import ActionModal
from phasegate.console.screens.causes import CauseRunsScreen
from phasegate.console.screens.copy_modal import CopyModal
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.group_modal import GroupModal
from phasegate.console.screens.runs import RunsScreen
from phasegate.console.widgets import RunsTable
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.console.test_console_causes import TAX_RUNS, open_causes
from tests.console.test_console_liveness import wait_until
from tests.console.test_console_operator import screen_text
from tests.support import cli

pytestmark = pytest.mark.anyio


@pytest.fixture
def cause_store(store: Path) -> Path:
    fx.add_tax_cause(store)
    return store


def cursor_run(table: Any) -> str:
    return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)


async def test_the_cause_views_cursor_stays_on_its_run_across_refreshes(cause_store: Path, make_app: Any) -> None:
    app = make_app(cause_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_causes(pilot)
        await pilot.press("enter")
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, CauseRunsScreen)
        table = runs.query_one("#cause-runs")
        await pilot.press("j", "j")
        await settle(pilot)
        aimed = cursor_run(table)
        assert aimed == TAX_RUNS[2]
        for _ in range(3):  # what a worker's heartbeat does every few seconds
            app._refresh_screens()
            await settle(pilot)
            assert cursor_run(table) == aimed
        # A run above it leaves the cause (decided by another process): still on it.
        with Engine(cause_store) as eng:
            eng.decide(TAX_RUNS[0], "approve", reason="checked the rates", operator="ops-bob")
        app._refresh_screens()
        await settle(pilot)
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == TAX_RUNS[1:]
        assert cursor_run(table) == aimed
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.run_id == aimed


async def test_the_approve_modal_says_the_policy_makes_it_a_proposal(store: Path, make_app: Any) -> None:
    with Engine(store) as eng:
        eng.oversight.set_policy(require_second="approve", reason="four eyes")
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.ENV_MISMATCH))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ActionModal)
        said = str(modal.query_one("#proposal").render())
        assert "policy needs a second operator for approve: Enter records a PROPOSAL" in said
        assert str(modal.query_one("#hint").render()).startswith("Enter propose")
        await pilot.press(*"rates checked", "enter")
        await settle(pilot)
    with Engine(store, clock=fx.frozen()) as eng:  # the console's clock: not yet lapsed
        assert [d.state for d in eng.status(fx.ENV_MISMATCH).decisions] == ["proposed"]


async def test_no_proposal_is_said_where_the_policy_does_not_ask_for_one(store: Path, make_app: Any) -> None:
    with Engine(store) as eng:
        eng.oversight.set_policy(require_second="reset", reason="four eyes")
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.ENV_MISMATCH))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        assert not app.screen.query("#proposal")
        await pilot.press("escape", "r")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        assert "for reset: Enter records a PROPOSAL" in str(app.screen.query_one("#proposal").render())


async def test_y_lists_effect_keys_and_names_probes(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.IN_DOUBT))
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, CopyModal)
        whats = [what for what, _v in modal.choices]
        # The in-doubt effect's key first after the run id: the value looked up in the gateway.
        assert modal.choices[1] == ("effect key of charge:inv-1 (IN DOUBT)", f"{fx.IN_DOUBT}/charge/charge:inv-1")
        assert ("effect key of charge:inv-0 (done)", f"{fx.IN_DOUBT}/charge/charge:inv-0") in modal.choices
        assert any(w.startswith("outputs[fetch].") for w in whats), whats
        assert not any("[0]" in w or "[1]" in w for w in whats), whats
        await pilot.press("j", "enter")
        await settle(pilot)
        assert app.clipboard == f"{fx.IN_DOUBT}/charge/charge:inv-1"


async def test_y_names_a_probe_by_its_name(store: Path, make_app: Any) -> None:
    # A probe whose value is a digest: listed under its name, not its index.
    digest = "sha256:" + "ab12" * 16
    con = sqlite3.connect(store)
    con.execute(
        "UPDATE phasegate_runs SET env_json = ? WHERE run_id = ?",
        (
            f'[{{"probe": "tax_table", "saved": "{digest}", "current": "{digest}", "changed": false, "phases": []}}]',
            fx.FAILED,
        ),
    )
    con.commit()
    con.close()
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.FAILED))
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, CopyModal)
        assert ("env[tax_table].saved", digest) in app.screen.choices


async def test_a_run_that_stops_while_watched_is_counted_in_the_header_until_looked_at(
    store: Path, make_app: Any
) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one(RunsTable)
        table.move_cursor(row=table.get_row_index(fx.COMPLETED))
        await settle(pilot)
        # The live run's process died since (a stored `running` with a dead pid).
        con = sqlite3.connect(store)
        con.execute(
            "UPDATE phasegate_runs SET lease_host = ?, lease_pid = 999999999 WHERE run_id = ?", (fx.HOST, fx.RUNNING)
        )
        con.commit()
        con.close()
        app._refresh_screens()
        await settle(pilot)
        header = str(runs.query_one("#counts").render())
        assert "1 new stop: n jumps" in header
        await pilot.press("n")
        await settle(pilot)
        assert table.run_id_at(table.cursor_row) == fx.RUNNING
        assert "new stop" not in str(runs.query_one("#counts").render())


async def test_marked_runs_that_need_no_decision_offer_no_decision(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        table.move_cursor(row=table.get_row_index(fx.COMPLETED))
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)
        shown = {ab.binding.key for ab in app.screen.active_bindings.values() if ab.binding.show}
        assert not shown & {"a", "d", "w", "r", "c", "t"}, shown
        await pilot.press("a")
        await settle(pilot)
        assert not isinstance(app.screen, GroupModal)
        assert any("needs a decision" in str(n.message) for n in app._notifications)


async def test_a_probe_no_finished_phase_saved_is_new_not_same(store: Path, make_app: Any) -> None:
    con = sqlite3.connect(store)
    con.execute(
        "UPDATE phasegate_runs SET env_json = ? WHERE run_id = ?",
        (
            '[{"probe": "code_version", "saved": null, "current": "billing 1.4.0", "changed": false, "phases": []}]',
            fx.FAILED,
        ),
    )
    con.commit()
    con.close()
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.FAILED))
        await settle(pilot)
        text = screen_text(app)
        assert "not saved yet" in text and "same " not in text, text


async def test_a_workers_carries_it_out_notice_goes_once_it_has(store: Path, make_app: Any) -> None:
    # The fixture's runs were started from code: give this one its target, so a worker can resume it.
    con = sqlite3.connect(store)
    con.execute("UPDATE phasegate_runs SET target = 'tests.console.wf:wf' WHERE run_id = ?", (fx.ENV_MISMATCH,))
    con.commit()
    con.close()
    worker = cli.start(["worker", "--poll", "0.2", "--db", str(store)])
    try:
        app = make_app(store)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await wait_until(lambda: service.workers_alive(app.engine) > 0, what="the worker's heartbeat")
            await app.push_screen(DetailScreen(app, fx.ENV_MISMATCH))
            await settle(pilot)
            await pilot.press("a")
            await settle(pilot)
            await pilot.press(*"rates checked", "enter")
            await settle(pilot)
            said = [str(n.message) for n in app._notifications]
            assert any("a worker is alive and carries it out" in n for n in said), said

            def carried() -> bool:
                return any("the decision was carried out" in str(n.message) for n in app._notifications)

            for _ in range(60):  # the detail is read again as the store changes (here: once a second)
                if carried():
                    break
                app._refresh_screens()
                await asyncio.sleep(1.0)
            assert carried(), [str(n.message) for n in app._notifications]
            assert not any("a worker is alive and carries it out" in str(n.message) for n in app._notifications)
    finally:
        worker.kill()
