"""The run detail shows a failed run's attempts (retries) under its error,
and a completed run's notes (a retry that then succeeded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phasegate.console.screens.detail import DetailScreen
from tests.console.pilot_helpers import settle
from tests.support import cli

pytestmark = pytest.mark.anyio

FLOW = f"{Path(__file__).resolve().parents[1] / 'workflows' / 'retrying.py'}:wf"


@pytest.fixture
def retried(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    for run_id, inputs in (("gave-up", {"fetch_ok_at": 10, "fetch_retries": 2}), ("came-back", {"fetch_ok_at": 2})):
        doc = json.dumps({"dir": str(tmp_path / run_id), **inputs})
        (tmp_path / run_id).mkdir()
        r = cli.run(["run", FLOW, "--run-id", run_id, "--input", doc, "--db", str(db)], env={"PHASEGATE_DB": ""})
        assert r.returncode in (0, 1), r
    return db


async def _detail(app: Any, pilot: Any, run_id: str) -> str:
    await app.push_screen(DetailScreen(app, run_id))
    await settle(pilot)
    from rich.console import Group

    content = app.screen.query_one("#panel-error").content
    if isinstance(content, Group):  # the error, then its last frames (#17)
        return "\n".join(str(part) for part in content.renderables)
    return str(content)


async def test_the_detail_shows_each_attempt_and_the_notes(retried: Path, make_app: Any) -> None:
    app = make_app(retried)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shown = await _detail(app, pilot, "gave-up")
        assert "ConnectionError: the source dropped the connection (call 3)" in shown
        for n in (1, 2, 3):
            assert f"step fetch: attempt {n} of 3: ConnectionError" in shown, shown
        app.pop_screen()
        await settle(pilot)
        shown = await _detail(app, pilot, "came-back")
        assert "note: step fetch in gather: attempt 1 of 4 failed: ConnectionError" in shown, shown


async def test_the_environment_panel_does_not_claim_to_know_the_code(store: Path, make_app: Any) -> None:
    """The console does not load the workflow's code: a code row it cannot
    compare says when it is checked, instead of "same"."""
    from tests.console import fixtures as fx

    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.ENV_MISMATCH))
        await settle(pilot)
        from rich.console import Console

        console = Console(width=120, record=True, color_system=None)
        console.print(app.screen.query_one("#panel-environment").content)
        shown = console.export_text()
        code_rows = [ln for ln in shown.splitlines() if "code:" in ln]
        assert code_rows and all("checked at the next resume" in ln for ln in code_rows), shown
        assert not any(ln.split()[0] == "same" for ln in code_rows)
