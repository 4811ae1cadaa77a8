"""Many runs at once in the console (#13): the causes view (C), a cause's
runs (Enter), one decision for a cause or for runs marked with space, through
the group modal; what lands is read back from the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.causes import CauseRunsScreen, CausesScreen
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.group_modal import GroupModal
from phasegate.console.screens.runs import RunsScreen
from phasegate.console.widgets import RunsTable
from tests.conftest import status_json
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.console.test_console_operator import screen_text

pytestmark = pytest.mark.anyio

TAX_RUNS = sorted((fx.ENV_MISMATCH, *fx.SAME_TAX_CHANGE))


@pytest.fixture
def cause_store(store: Path) -> Path:
    fx.add_tax_cause(store)
    return store


def decisions(db: Path) -> list[tuple[str, str, str, str | None, str]]:
    """(run, action, state, batch id, reason) of every decision, from `phasegate status --json` in another process."""
    return sorted(
        (doc["run_id"], d["action"], d["state"], d.get("batch_id"), d["reason"])
        for doc in status_json(db)
        for d in doc["decisions"]
    )


async def open_causes(pilot: Any) -> CausesScreen:
    await settle(pilot)
    await pilot.press("C")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, CausesScreen)
    return screen


async def open_group_modal(pilot: Any) -> tuple[GroupModal, str]:
    """`a` on the cause (or the marked runs): the group modal, and its preview's text."""
    await settle(pilot)
    await pilot.press("a")
    await settle(pilot)
    modal = pilot.app.screen
    assert isinstance(modal, GroupModal)
    return modal, str(modal.query_one("#preview").render())


async def test_the_causes_view_shows_counts_and_enter_shows_a_causes_runs(cause_store: Path, make_app: Any) -> None:
    app = make_app(cause_store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_causes(pilot)
        # The largest cause first: the tax change behind four runs.
        first = screen._causes[0]
        assert list(first.runs) == TAX_RUNS and first.kind == "probe_change"
        table = screen.query_one("#causes")
        assert table.row_count == len(screen._causes) >= 6
        assert str(table.get_row_at(0)[0]) == "4"
        assert fx.ENV_MISMATCH in str(screen.query_one("#why").render())
        await pilot.press("enter")
        await settle(pilot)
        runs = pilot.app.screen
        assert isinstance(runs, CauseRunsScreen)
        shown = runs.query_one("#cause-runs")
        assert [str(shown.get_row_at(i)[0]) for i in range(shown.row_count)] == TAX_RUNS
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.screen is screen
    assert decisions(cause_store) == []


async def test_one_decision_for_a_cause_through_the_group_modal(cause_store: Path, make_app: Any) -> None:
    app = make_app(cause_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_causes(pilot)
        modal, text = await open_group_modal(pilot)
        assert all(rid in text for rid in TAX_RUNS) and text.count("Accept the changed environment") == 4
        assert "4 runs" in str(modal.query_one("#hint").render())
        assert pilot.app.focused.id == "reason"
        # Enter without a reason records nothing.
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, GroupModal)
        await pilot.press(*"new tax table checked", "enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, CausesScreen)
        await settle(pilot)
        # Decided: the cause is gone from the view.
        assert all(c.runs != tuple(TAX_RUNS) for c in pilot.app.screen._causes)
        # The detail's decision log shows the batch the decision belongs to.
        await pilot.app.push_screen(DetailScreen(pilot.app, fx.ENV_MISMATCH))
        await settle(pilot)
        await pilot.press("G")
        await settle(pilot)
        assert "(batch b-" in screen_text(pilot.app)
    got = decisions(cause_store)
    assert [g[0] for g in got] == TAX_RUNS
    assert {(g[1], g[2], g[4]) for g in got} == {("approve", "pending", "new tax table checked")}
    batch = {g[3] for g in got}
    assert len(batch) == 1 and None not in batch


async def test_marked_runs_are_decided_as_one_group_with_the_count_typed(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one(RunsTable)
        for rid in (fx.INTERRUPTED, fx.FAILED):
            table.move_cursor(row=table.get_row_index(rid))
            await settle(pilot)
            await pilot.press("space")
            await settle(pilot)
        assert list(screen.marked) == [fx.INTERRUPTED, fx.FAILED]
        assert str(table.get_cell(fx.FAILED, "run_id")).startswith("* ")
        # Space again unmarks, and marks again.
        await pilot.press("space", "space")
        await settle(pilot)
        assert list(screen.marked) == [fx.INTERRUPTED, fx.FAILED]
        # The cursor is on another run: the key acts on the marked ones.
        table.move_cursor(row=table.get_row_index(fx.COMPLETED))
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        modal = pilot.app.screen
        assert isinstance(modal, GroupModal) and modal.request.typed_why
        assert "type 2 (the number of runs)" in str(modal.query_one("#typed-label").render())
        await pilot.press(*"start both over", "enter")
        await settle(pilot)
        assert pilot.app.focused.id == "typed"
        await pilot.press("3", "enter")  # the wrong count confirms nothing
        await settle(pilot)
        assert isinstance(pilot.app.screen, GroupModal)
        await pilot.press("backspace", "2", "enter")
        await settle(pilot)
        assert pilot.app.screen is screen
        await settle(pilot)
        assert screen.marked == {}
    got = decisions(store)
    assert [(g[0], g[1], g[2]) for g in got] == [(fx.INTERRUPTED, "reset", "applied"), (fx.FAILED, "reset", "applied")]
    assert got[0][3] == got[1][3] is not None


async def test_a_mark_that_does_not_fit_is_left_alone_and_said(store: Path, make_app: Any) -> None:
    """Approve fits the env-mismatch run, not the failed one: the modal says so
    and records the one it fits."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        table = screen.query_one(RunsTable)
        for rid in (fx.ENV_MISMATCH, fx.FAILED):
            table.move_cursor(row=table.get_row_index(rid))
            await settle(pilot)
            await pilot.press("space")
        modal, text = await open_group_modal(pilot)
        assert "does not fit, left alone" in text
        assert "records approve for 1 run in one transaction; 1 run that it does not fit" in str(
            modal.query_one("#count").render()
        )
        await pilot.press(*"ok", "enter")
        await settle(pilot)
    assert [(g[0], g[1]) for g in decisions(store)] == [(fx.ENV_MISMATCH, "approve")]


async def test_read_only_refuses_with_a_line(cause_store: Path, make_app: Any) -> None:
    app = make_app(cause_store, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)
        assert pilot.app.screen.marked == {}
        notes = [n.message for n in pilot.app._notifications]
        assert any("mark: read-only" in n for n in notes), notes
        await open_causes(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(pilot.app.screen, CausesScreen)
        notes = [n.message for n in pilot.app._notifications]
        assert any("approve resume: read-only" in n for n in notes), notes
    with Engine(cause_store, create=False, readonly=True) as eng:
        assert all(not eng.status(r).decisions for r in TAX_RUNS)


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def _keys(*keys: str) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_causes(cause_store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(cause_store), terminal_size=size, run_before=_keys("C"))


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_cause_runs(cause_store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(cause_store), terminal_size=size, run_before=_keys("C", "enter"))


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_group_modal(cause_store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(cause_store), terminal_size=size, run_before=_keys("C", "a", *"checked"))


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_marked_runs(store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(store), terminal_size=size, run_before=_keys("space", "j", "j", "space"))


async def test_a_run_someone_else_claimed_is_left_alone_by_the_group(cause_store: Path, make_app: Any) -> None:
    with Engine(cause_store) as eng:
        eng.oversight.claim(fx.SAME_TAX_CHANGE[0], operator="ada")
    app = make_app(cause_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_causes(pilot)
        modal, text = await open_group_modal(pilot)
        assert (
            f"{fx.SAME_TAX_CHANGE[0]}: does not fit, left alone: run {fx.SAME_TAX_CHANGE[0]!r} is claimed by ada"
            in text
        )
        await pilot.press(*"checked", "enter")
        await settle(pilot)
    got = decisions(cause_store)
    assert [g[0] for g in got] == [r for r in TAX_RUNS if r != fx.SAME_TAX_CHANGE[0]]


async def test_an_ai_assistants_proposal_is_marked_in_the_cause_list_and_the_run(
    cause_store: Path, make_app: Any
) -> None:
    """Issue 39: what `phasegate mcp` proposed, marked as an assistant's with the reason it gave."""
    from tests.console.test_console_actions import open_detail

    with Engine(cause_store, clock=fx.frozen(), create=False) as eng:
        d = eng.propose(fx.ENV_MISMATCH, "approve", reason="the Q1 table is the planned one", assistant="mcp:claude-ai")
    app = make_app(cause_store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_causes(pilot)
        table = screen.query_one("#causes")
        assert str(table.get_row_at(0)[2]).startswith("[AI proposal] ")
        why = str(screen.query_one("#why").render())
        assert "proposed by an AI assistant, waiting for a person's second" in why
        assert f"approve on {fx.ENV_MISMATCH}, decision {d.id}, by mcp:claude-ai: the Q1 table" in why
        await pilot.press("escape")
        await open_detail(pilot, fx.ENV_MISMATCH)
        text = screen_text(pilot.app)
        assert "proposed by an AI assistant (mcp:claude-ai)" in text
        assert "mcp:claude-ai (AI assistant)" in text
    with Engine(cause_store, clock=fx.frozen(), create=False) as eng:
        (still,) = eng.status(fx.ENV_MISMATCH).decisions
    assert (still.action, still.state, still.assistant) == ("approve", "proposed", True)  # the console seconded nothing
