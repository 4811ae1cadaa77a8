"""Deep links (`console --run`, `--show`, `--filter`) and the code behind a
drift in the run detail, on real stores and a real app (Pilot)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from phasegate import Engine, RunNotFound, UsageError
from phasegate.console import service
from phasegate.console.app import ConsoleApp
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.runs import RunsScreen
from phasegate.console.widgets import InfoPanel, RunsTable
from tests.conftest import WORKFLOWS, cli
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio


def _drifted_store(tmp_path: Path) -> Path:
    """A run killed before its last phase, whose done phase's code then changed
    (with a terminal escape in it), resumed into a block."""
    db = tmp_path / "drift.db"
    wf_file = tmp_path / "billing_copy.py"
    wf_file.write_text(
        (WORKFLOWS / "billing.py")
        .read_text()
        .replace(
            'wf = Workflow("test-billing")',
            'wf = Workflow("test-billing", runbooks={"env_mismatch": "[b]call ops[/b]"})',
        )
    )
    env = {"PHASEGATE_TEST_KILL_AT": "start:report", "PHASEGATE_TEST_TAX": str(tmp_path / "none")}
    inputs = '{"ledger": "%s"}' % (tmp_path / "ledger")
    p = cli("run", f"{wf_file}:wf", "--run-id", "r1", "--input", inputs, "--db", str(db), env=env)
    assert p.returncode == -signal.SIGKILL, p
    text = wf_file.read_text()
    wf_file.write_text(
        text.replace('"amount": 100 + i}', '"amount": 1000 + i}').replace(
            '    kill_point("start:load")', '    kill_point("start:load")  # \x1b[31m[red]x[/red]'
        )
    )
    p = cli("resume", "r1", "--db", str(db), env={**env, "PHASEGATE_TEST_KILL_AT": ""})
    assert p.returncode == 3, p
    return db


def _app(db: Path, start: service.StartAt, engines: list[Engine]) -> ConsoleApp:
    clock = fx.frozen()
    engine = Engine(db, clock=clock, create=False)
    engines.append(engine)
    return ConsoleApp(engine, clock=clock, poll_interval=0, start=start)


@pytest.fixture
def engines() -> Any:
    opened: list[Engine] = []
    yield opened
    for e in opened:
        e.close()


async def test_run_link_opens_the_detail_with_the_drift_diff_and_runbook(tmp_path: Path, engines: Any) -> None:
    db = _drifted_store(tmp_path)
    with Engine(db, create=False) as eng:
        start = service.start_at(eng, "r1", None, None)
    app = _app(db, start, engines)
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.run_id == "r1"
        panel = detail.query_one("#panel-code", InfoPanel)
        assert panel.display
        shown = "\n".join(t.plain for t in panel.content.renderables)  # type: ignore[union-attr]
        assert "code of load changed; ran the old code: load" in shown
        assert "1000 + i" in shown and "100 + i" in shown
        assert "\x1b" not in shown and "\\x1b[31m[red]x[/red]" in shown  # escaped, and not read as markup
        summary = detail.query_one("#summary", Static).content.plain  # type: ignore[union-attr]
        assert "runbook (env_mismatch in load): [b]call ops[/b]" in summary
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)


async def test_the_code_panel_is_hidden_without_a_drift(store: Path, engines: Any) -> None:
    app = _app(store, service.StartAt(run_id=fx.ENV_MISMATCH), engines)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert not app.screen.query_one("#panel-code", InfoPanel).display


@pytest.mark.parametrize(
    "show,text,expected",
    [
        ("failed", None, {fx.FAILED}),
        ("attention", "env", {fx.ENV_MISMATCH}),
        (None, "in-doubt", {fx.IN_DOUBT}),
    ],
)
async def test_show_and_filter_open_the_list_filtered(
    store: Path, engines: Any, show: str | None, text: str | None, expected: set[str]
) -> None:
    with Engine(store, create=False) as eng:
        start = service.start_at(eng, None, show, text)
    app = _app(store, start, engines)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one(RunsTable)
        assert {table.run_id_at(i) for i in range(table.row_count)} == expected


def test_bad_deep_links_are_one_line_and_change_nothing(store: Path) -> None:
    before = store.read_bytes()
    with Engine(store, create=False) as eng:
        with pytest.raises(RunNotFound):
            service.start_at(eng, "no-such-run", None, None)
        with pytest.raises(UsageError, match="one of all, needs-attention"):
            service.start_at(eng, None, "sideways", None)
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    p = cli("console", "--db", str(store), "--run", "no-such-run", env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no-such-run" in p.stderr, p
    p = cli("console", "--db", str(store), "--show", "sideways", env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p
    assert store.read_bytes() == before
