"""Every action driven end to end through the console: the decision lands in
the store and `phasegate status --json` (another process) shows it; an action
that does not fit the run is not offered and its key does nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phasegate import DecisionView, Engine
from phasegate.console.actions import ACTIONS
from phasegate.console.screens.action_modal import ActionModal
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.runs import RunsScreen
from tests.conftest import status_json
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio


def offered(app: Any) -> set[str]:
    """The keys the footer offers on the current screen."""
    return {ab.binding.key for ab in app.screen.active_bindings.values() if ab.binding.show}


async def open_detail(pilot: Any, run_id: str) -> DetailScreen:
    await settle(pilot)
    screen = DetailScreen(pilot.app, run_id)
    await pilot.app.push_screen(screen)
    await settle(pilot)
    return screen


async def decide(
    pilot: Any,
    key: str,
    reason: str,
    *,
    before_enter: tuple[str, ...] = (),
    typed: str | None = None,
    first: str = "reason",
) -> None:
    """Open the action's modal, give the reason, confirm; `typed`: the run id,
    for the actions that ask for it typed out; `first`: the field the focus
    starts in (a confirmation's result, #28)."""
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, ActionModal), f"{key} opened no modal"
    assert pilot.app.focused.id == first
    await pilot.press(*before_enter)
    await pilot.press(*reason)
    await pilot.press("enter")
    await settle(pilot)
    if typed is not None:
        assert pilot.app.focused.id == "typed", "the run id was not asked for"
        await pilot.press(*typed, "enter")
        await settle(pilot)


def pending(db: Path, run_id: str) -> tuple[DecisionView, ...]:
    with Engine(db) as eng:
        return eng.status(run_id).pending_decisions


def all_status(db: Path) -> dict[str, Any]:
    """`phasegate status --json` for every run, from another process (one call: it is slow to start)."""
    return {doc["run_id"]: doc for doc in status_json(db)}


#: Two sets of decisions that can coexist in one store (confirm and retry of
#: the same effect cannot, nor approve and rewind of the same run).
ROUNDS = {
    "first": [
        (fx.ENV_MISMATCH, "a", "approve", ()),
        (fx.INTEGRITY, "d", "degrade", ()),
        (fx.BELOW_FLOOR, "d", "degrade", ()),
        # the focus starts in the result (a sibling's result in it as a template): cleared, typed, tab to the reason
        (fx.IN_DOUBT, "c", "confirm_effect", ("ctrl+u", *'{"charge_id": "ch-1"}', "tab")),
    ],
    "second": [
        (fx.ENV_MISMATCH, "w", "rewind", ("up",)),
        (fx.IN_DOUBT, "t", "retry_effect", ()),
    ],
}


@pytest.mark.parametrize("round_", sorted(ROUNDS))
async def test_decisions_land_in_store(store: Path, make_app: Any, round_: str) -> None:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        for run_id, key, action, choose in ROUNDS[round_]:
            await open_detail(pilot, run_id)
            assert key in offered(app)
            # A retry against a target that does not deduplicate is typed out (#17).
            typed = run_id if action == "retry_effect" else None
            first = "result" if action == "confirm_effect" else "reason"
            await decide(pilot, key, f"checked {action}", before_enter=choose, typed=typed, first=first)
            assert isinstance(app.screen, DetailScreen)
            # the screen shows it at once
            assert any(d.action == action for d in app.screen.run_view.pending_decisions)
            assert key not in offered(app)  # decided: not offered twice
            await pilot.press("escape")
            await settle(pilot)

    docs = all_status(store)
    with Engine(store) as eng:
        for run_id, _key, action, _choose in ROUNDS[round_]:
            decs = eng.status(run_id).pending_decisions
            assert [(d.action, d.operator, d.reason) for d in decs] == [(action, fx.OPERATOR, f"checked {action}")]
            shown = docs[run_id]["pending_decisions"]
            assert [d["action"] for d in shown] == [action]
            if action == "rewind":
                assert shown[0]["phase"] == "fetch"  # "up" moved the choice from price to fetch
            if action in ("confirm_effect", "retry_effect"):
                assert shown[0]["effect"] == f"{fx.IN_DOUBT}/charge/charge:inv-1"


async def test_confirm_asks_for_the_effects_result_as_json(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_detail(pilot, fx.IN_DOUBT)
        # The focus starts in the result, its label stays above it, and the
        # sibling charge's recorded result is offered as the template (#28).
        await pilot.press("c")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ActionModal)
        assert "result: the JSON the outside system returned" in str(modal.query_one("#result-label").render())
        assert "reason (kept in the decision log)" in str(modal.query_one("#reason-label").render())
        assert app.focused.id == "result"
        template = modal.query_one("#result").value
        assert json.loads(template) == {"amount": 200, "charge_id": "ch-inv-0"}
        assert "template: what charge:inv-0 recorded; edit it" in str(modal.query_one("#template").render())
        # Emptied, then the reason given: not confirmed, no result; the focus goes back to it.
        await pilot.press("ctrl+u", "tab", *"seen in the gateway", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        assert app.focused.id == "result"
        assert "result is required" in str(app.screen.query_one("#problem").render())
        await pilot.press(*"{oops", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        assert "not JSON" in str(app.screen.query_one("#problem").render())
        await pilot.press(*["backspace"] * 5, *'{"charge_id": "ch-9", "amount": 7}', "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
    with Engine(store) as eng:
        (dec,) = eng.status(fx.IN_DOUBT).pending_decisions
        assert dec.action == "confirm_effect" and dec.reason == "seen in the gateway"
    with Engine(store) as eng:
        with eng.store.read() as conn:
            detail = [d.detail_json for d in eng.store.decisions.of_run(conn, fx.IN_DOUBT)]
    assert json.loads(detail[0])["result"] == {"charge_id": "ch-9", "amount": 7}


async def test_reset_asks_for_the_run_id(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_detail(pilot, fx.INTERRUPTED)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        await pilot.press(*"start over")
        await pilot.press("enter")
        await settle(pilot)
        # not confirmed: the run id was not typed; focus went to its field
        assert isinstance(app.screen, ActionModal)
        assert app.focused.id == "typed"
        await pilot.press(*"inv-0002")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        await pilot.press(*"-interrupted")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.run_view.status == "reset"
    doc = status_json(store, fx.INTERRUPTED)
    assert doc["status"] == "reset"
    assert [(d["action"], d["state"], d["reason"]) for d in doc["decisions"]] == [("reset", "applied", "start over")]


async def test_prune_from_the_console(store: Path, make_app: Any) -> None:
    with Engine(store, clock=fx.frozen()) as eng:
        before = eng.status(fx.COMPLETED).prune_candidates
    assert before
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_detail(pilot, fx.COMPLETED)
        await decide(pilot, "p", "routine tidy")
        assert isinstance(app.screen, DetailScreen)
        assert "p" not in offered(app)  # nothing left to prune
    doc = status_json(store, fx.COMPLETED)
    assert [(d["action"], d["state"], d["reason"]) for d in doc["decisions"]] == [("prune", "applied", "routine tidy")]


async def test_escape_cancels_and_records_nothing(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_detail(pilot, fx.ENV_MISMATCH)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        await pilot.press(*"quit? no: q j k ?")  # keys that mean something elsewhere just type
        assert app.screen.query_one("#reason").value == "quit? no: q j k ?"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        # Enter with an empty reason does not confirm either
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
    assert pending(store, fx.ENV_MISMATCH) == ()


@pytest.mark.parametrize(
    ("run_id", "absent"),
    [
        (fx.ENV_MISMATCH, "dct"),  # env mismatch: approve, rewind, reset (and prune, pause, cancel)
        (fx.INTEGRITY, "actw"),
        (fx.IN_DOUBT, "ad"),
        (fx.INTERRUPTED, "adct"),
        (fx.RUNNING, "adwrcti"),  # a live run: nothing to decide (it can be paused or cancelled)
    ],
)
async def test_unfitting_actions_are_not_offered(store: Path, make_app: Any, run_id: str, absent: str) -> None:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_detail(pilot, run_id)
        keys = offered(app)
        for key in absent:
            assert key not in keys
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen), f"{key} opened {app.screen}"
        # The palette offers exactly the actions the footer offers: none of
        # the unfitting ones, and every fitting one.
        # (A key may carry several actions: p pauses, unpauses or prunes, whichever fits.)
        by_key: dict[str, set[str]] = {}
        for spec in ACTIONS:
            by_key.setdefault(spec.key, set()).add(f"run: {spec.label}")
        palette = {c.title for c in app.get_system_commands(app.screen) if c.title.startswith("run: ")}
        assert not palette & {label for k in absent for label in by_key[k]}, palette
        assert palette <= {label for k in keys & by_key.keys() for label in by_key[k]}, palette
        assert all(palette & by_key[k] for k in keys & by_key.keys()), palette
    assert pending(store, run_id) == ()


async def test_read_only_offers_nothing(store: Path, make_app: Any) -> None:
    app = make_app(store, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert not set("adwrctp") & offered(app)
        await open_detail(pilot, fx.ENV_MISMATCH)
        assert not set("adwrctp") & offered(app)
        for key in "adwrctp":
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen)
        assert not [c for c in app.get_system_commands(app.screen) if c.title.startswith("run: ")]
    assert pending(store, fx.ENV_MISMATCH) == ()


async def test_runs_screen_navigation_and_palette(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs")
        assert table.row_count == 8
        await pilot.press("G")
        await settle(pilot)
        assert table.cursor_row == 7
        await pilot.press("g", "j", "j")
        await settle(pilot)
        assert table.cursor_row == 2
        await pilot.press("k")
        await settle(pilot)
        selected = screen.run_view.run_id
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.run_id == selected
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and table.cursor_row == 1
        # the palette names actions "run: ..." for the highlighted run
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "run: reset" in titles
        await pilot.press("colon")
        await settle(pilot)
        assert type(app.screen).__name__ == "CommandPalette"
        await pilot.press("escape")
        await pilot.press("question_mark")
        await settle(pilot)
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await settle(pilot)
        # status filter cycle: all -> needs attention
        await pilot.press("f")
        await settle(pilot)
        ids = {table.run_id_at(i) for i in range(table.row_count)}
        assert fx.COMPLETED not in ids and fx.RUNNING not in ids and fx.INTERRUPTED in ids
        await pilot.press("f", "f", "f", "f")  # blocked, running, failed, completed
        await settle(pilot)
        assert [table.run_id_at(i) for i in range(table.row_count)] == [fx.COMPLETED]
        await pilot.press("f")
        await settle(pilot)
        # text filter
        await pilot.press("slash", *"env")
        await settle(pilot)
        assert [table.run_id_at(i) for i in range(table.row_count)] == [fx.ENV_MISMATCH]
        await pilot.press("escape")
        await settle(pilot)
        assert table.row_count == 8
        # sort by run id, then reversed
        await pilot.press("s")
        await settle(pilot)
        assert table.run_id_at(0) == fx.COMPLETED
        await pilot.press("S")
        await settle(pilot)
        assert table.run_id_at(0) == fx.RUNNING
        await pilot.press("q")
    assert app.return_code == 0


async def test_pages_never_hold_every_run(store: Path, make_app: Any) -> None:
    app = make_app(store, page_size=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs")
        assert table.row_count == 3
        seen = []
        for _ in range(8):
            seen.append(app.screen.run_view.run_id if app.screen.run_view else table.run_id_at(table.cursor_row))
            await pilot.press("j")
            await settle(pilot)
            assert table.row_count <= 3
        assert len(set(seen)) == 8
        await pilot.press("g")
        await settle(pilot)
        assert app.screen.page_offset == 0 and table.cursor_row == 0
        await pilot.press("G")
        await settle(pilot)
        assert app.screen.page_offset == 6 and table.run_id_at(table.cursor_row) is not None
        # many presses past the edge while pages load, then g: the first page wins,
        # whatever order the reads finish in
        await pilot.press("k", "k", "k", "k", "k", "k", "k", "g")
        await settle(pilot)
        assert app.screen.page_offset == 0 and table.cursor_row == 0


async def test_engine_refusal_is_a_notification(store: Path, make_app: Any) -> None:
    """Someone else decides while the modal is open: the engine refuses the
    second decision, and the console says why in one notification."""
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_detail(pilot, fx.ENV_MISMATCH)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        with Engine(store, clock=fx.frozen()) as other:
            other.decide(fx.ENV_MISMATCH, "approve", reason="first", operator="ops-bob")
        await pilot.press(*"second", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        notes = list(app._notifications)
        assert [n.title for n in notes] == ["already decided"]
        assert "ops-bob" in notes[0].message
    assert [d.operator for d in pending(store, fx.ENV_MISMATCH)] == ["ops-bob"]


async def test_approve_shows_the_values_and_is_refused_if_they_moved(store: Path, make_app: Any) -> None:
    """The approve modal shows the values it accepts; if the run is blocked on
    other values while it is open, confirming is refused (#16, finding 13)."""
    from phasegate.console.screens.action_modal import describe
    from tests.console import wf as fixture_wf

    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot, fx.ENV_MISMATCH)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        shown = describe(app.screen.request.choices[0]).plain
        assert "accepts: tax_table: tax-2026-01 -> tax-2026-02" in shown
        assert "env hash: " in shown
        fixture_wf.HOOKS["tax"] = "tax-2026-03"
        try:
            with fx.quiet_engine(), Engine(store, clock=fx.frozen(), lease_seconds=fx.LEASE) as other:
                assert other.run(fixture_wf.wf, fx.ENV_MISMATCH).status == "blocked"
        finally:
            fixture_wf.HOOKS["tax"] = "tax-2026-01"
        await pilot.press(*"looks fine", "enter")
        await settle(pilot)
        notes = list(app._notifications)
        assert [n.title for n in notes] == ["decision refused"]
        assert "moved since the preview" in notes[0].message
    assert pending(store, fx.ENV_MISMATCH) == ()
