"""Snapshots of every screen an operator meets, at 80x24 and 120x40, with a
frozen clock, fixed data (real engine runs under a frozen clock, see
fixtures.py), no cursor blink and Textual pinned exactly in pyproject."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]

MODALS = [
    ("approve", fx.ENV_MISMATCH, "a"),
    ("degrade", fx.INTEGRITY, "d"),
    ("rewind", fx.ENV_MISMATCH, "w"),
    ("reset", fx.INTERRUPTED, "r"),
    ("confirm_effect", fx.IN_DOUBT, "c"),
    ("retry_effect", fx.IN_DOUBT, "t"),
    ("prune", fx.COMPLETED, "p"),
]


def _detail(run_id: str, keys: tuple[str, ...] = ()) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.app.push_screen(DetailScreen(pilot.app, run_id))
        await settle(pilot)
        if keys:
            # The first key opens a modal once its preview is read (a worker):
            # the rest are typed into it, not raced against its focus.
            await pilot.press(keys[0])
            await settle(pilot)
            await pilot.press(*keys[1:])
            await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_runs_screen(store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", sorted(fx.STOPPED))
def test_detail(store: Path, make_app: Any, snap_compare: Any, kind: str, size: tuple[int, int]) -> None:
    assert snap_compare(make_app(store), terminal_size=size, run_before=_detail(fx.STOPPED[kind]))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("action", "run_id", "key"), MODALS, ids=[m[0] for m in MODALS])
def test_modal(
    store: Path, make_app: Any, snap_compare: Any, action: str, run_id: str, key: str, size: tuple[int, int]
) -> None:
    # A confirmation's focus starts in its result (#28): tab to the reason.
    keys = (key, "tab", *"checked") if action == "confirm_effect" else (key, *"checked")
    assert snap_compare(make_app(store), terminal_size=size, run_before=_detail(run_id, keys))


def test_help(store: Path, make_app: Any, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


def test_no_color(store: Path, make_app: Any, snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Textual reads (and removes) NO_COLOR when the app is created.
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(store)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("j", "j")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_a_filter_that_matches_nothing(store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    """#17: the table keeps its header and says "no runs match" under it."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("slash", *"no-such-run", "enter")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_claimed_run_in_the_list(store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]) -> None:
    """#13: "claimed by ada, 3 min ago" first in the run's reason."""
    with fx.quiet_engine(), Engine(store, clock=fx.frozen(fx.NOW - 180)) as eng:
        eng.oversight.claim(fx.ENV_MISMATCH, operator="ada")

    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_detail_waiting_for_a_second_operator(
    store: Path, make_app: Any, snap_compare: Any, size: tuple[int, int]
) -> None:
    """#13: a proposal under the store's policy, and a claim, in the detail's summary."""
    with fx.quiet_engine(), Engine(store, clock=fx.frozen(fx.NOW - 180)) as eng:
        eng.oversight.set_policy(require_second="reset", reason="four eyes")
        eng.oversight.claim(fx.ENV_MISMATCH, operator="ada")
        eng.decide(fx.ENV_MISMATCH, "reset", reason="start over from the new rate", operator="ada")
    assert snap_compare(make_app(store), terminal_size=size, run_before=_detail(fx.ENV_MISMATCH))
