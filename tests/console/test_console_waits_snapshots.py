"""Snapshots of runs that wait (issue 27) at 80x24 and 120x40, and under
NO_COLOR: the list with waiting, paused and cancelled runs, the answer form
of an object with a nested field, a run waiting on a rate limit, and a
paused run. Real engine runs under a frozen clock (waits_store.py), local
time UTC."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phasegate.console.screens.detail import DetailScreen
from tests.console import waits_store as ws
from tests.console.pilot_helpers import settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def wstore(tmp_path: Path, _fixture_cache: Path) -> Path:
    return ws.waits_db(tmp_path, _fixture_cache)


def _at(run_id: str | None, keys: tuple[str, ...] = ()) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        if run_id is not None:
            await pilot.app.push_screen(DetailScreen(pilot.app, run_id))
            await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run_before


#: (name, run shown (None: the list), keys pressed)
SCREENS = [
    ("list", None, ()),
    ("answer_form", ws.ASKS["object"], ("i", "space", "tab", "3")),
    ("rate_limited", ws.LIMITED, ()),
    ("paused", ws.PAUSED, ()),
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("name", "run_id", "keys"), SCREENS, ids=[s[0] for s in SCREENS])
def test_waits(
    wstore: Path, make_app: Any, snap_compare: Any, name: str, run_id: str | None, keys: tuple[str, ...], size: Any
) -> None:
    assert snap_compare(make_app(wstore), terminal_size=size, run_before=_at(run_id, keys))


@pytest.mark.parametrize(("name", "run_id", "keys"), SCREENS, ids=[s[0] for s in SCREENS])
def test_waits_no_color(
    wstore: Path,
    make_app: Any,
    snap_compare: Any,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    run_id: str | None,
    keys: tuple[str, ...],
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")  # read (and removed) by Textual when the app is made
    assert snap_compare(make_app(wstore), terminal_size=(80, 24), run_before=_at(run_id, keys))
