"""The run detail names the code version a run started under and the one
its latest attempt ran, as `status` does (issue 41): a real run started
under one deploy's label and resumed under another's, a real app driven by
Pilot."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from phasegate import Engine
from phasegate.authoring.loader import load
from phasegate.console import service
from phasegate.console.app import ConsoleApp
from phasegate.console.screens.detail import DetailScreen
from phasegate.errors import UsageError
from tests.conftest import WORKFLOWS
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio


async def test_the_detail_shows_the_code_a_run_started_under_and_the_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "code.db"
    wf = load(f"{WORKFLOWS / 'inert.py'}:wf")
    monkeypatch.setenv("PHASEGATE_CODE_VERSION", "release-1")
    with Engine(db) as eng:
        eng.run(wf, "c1", {"payloads": ["x"]})
        first = eng.status("c1").code
    assert first is not None and not first.moved
    monkeypatch.setenv("PHASEGATE_CODE_VERSION", "release-2\x1b[31m")  # refused: one line a person reads
    with Engine(db) as eng, pytest.raises(UsageError, match="PHASEGATE_CODE_VERSION"):
        eng.run(wf, "c1")
    monkeypatch.setenv("PHASEGATE_CODE_VERSION", "release-2")
    with Engine(db) as eng:
        eng.run(wf, "c1")
    clock = fx.frozen()
    with Engine(db, clock=clock, create=False) as engine:
        code = engine.status("c1").code
        assert code is not None and code.moved and code.count == 2  # the refused start recorded nothing
        app = ConsoleApp(engine, clock=clock, poll_interval=0, start=service.StartAt(run_id="c1"))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen)
            summary = app.screen.query_one("#summary", Static).content.plain  # type: ignore[union-attr]
            digest = code.started.digest
            assert f"code started {digest} (release-1), now {digest} (release-2) (attempt 2 of 2) [changed]" in summary
