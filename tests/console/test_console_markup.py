"""Text read from the store is shown literally: markup in a run id or an
error message is never interpreted, and never acted on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from tests.console import fixtures as fx
from tests.console import wf as fixture_wf
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio

EVIL_ID = "[@click=app.quit]x[/]"
EVIL_ERROR = "[red]boom[/red] [bold]not bold[/] [link=file:///etc/passwd]y[/link]"


@pytest.fixture
def evil_store(tmp_path: Path) -> Path:
    db = tmp_path / "evil.db"
    clock = fx.Clock(fx.T0)
    with fx.quiet_engine(), Engine(db, clock=clock, lease_seconds=fx.LEASE) as eng:
        fixture_wf.HOOKS.update(fail=EVIL_ERROR)
        try:
            eng.run(fixture_wf.wf, EVIL_ID, {"invoices": 1})
        finally:
            fixture_wf.HOOKS.update(fail=None)
    return db


def shown(widget: Any) -> str:
    """The text a Static widget renders, as plain characters (a group of
    lines, such as the error and its last frames, joined)."""
    from rich.console import Group

    content = widget.content
    if isinstance(content, Group):
        return "\n".join(str(part) for part in content.renderables)
    return str(widget.render())


async def test_markup_in_run_id_and_error_is_literal(evil_store: Path, make_app: Any) -> None:
    app = make_app(evil_store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs")
        assert table.run_id_at(0) == EVIL_ID
        assert table.get_cell(EVIL_ID, "run_id").plain == EVIL_ID
        assert EVIL_ERROR in table.get_cell(EVIL_ID, "reason").plain
        assert EVIL_ID in shown(app.screen.query_one("#why"))
        assert EVIL_ERROR in shown(app.screen.query_one("#why"))
        # clicking the run id does not run the action hidden in it
        await pilot.click("#runs", offset=(3, 1))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        summary = shown(app.screen.query_one("#header"))  # the run id is in the fixed header (#17)
        assert EVIL_ID in summary
        error = shown(app.screen.query_one("#panel-error"))
        assert EVIL_ERROR in error
        await pilot.click("#summary", offset=(2, 0))
        await settle(pilot)
        assert app.is_running and isinstance(app.screen, DetailScreen)
        # and the modal's title, too
        await pilot.press("r")
        await settle(pilot)
        assert EVIL_ID in shown(app.screen.query_one("#modal-title"))
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running
