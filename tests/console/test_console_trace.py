"""The run detail names the trace of the run's latest traced attempt, as
`status --json` does (a real traced run, a real app driven by Pilot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from phasegate import Engine
from phasegate.authoring.loader import load
from phasegate.console import service
from phasegate.console.app import ConsoleApp
from phasegate.console.screens.detail import DetailScreen
from tests.conftest import WORKFLOWS
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

from phasegate.ops import trace_runs  # noqa: E402

pytestmark = pytest.mark.anyio


async def test_the_detail_shows_the_trace_id(tmp_path: Path) -> None:
    db = tmp_path / "traced.db"
    provider = TracerProvider()
    stop = trace_runs(provider)
    try:
        with provider.get_tracer("app").start_as_current_span("app") as app_span, Engine(db) as eng:
            assert eng.run(load(f"{WORKFLOWS / 'inert.py'}:wf"), "t1", {"payloads": ["x"]}).status.value == "completed"
    finally:
        stop()
    trace_id = format(app_span.get_span_context().trace_id, "032x")
    clock = fx.frozen()
    with Engine(db, clock=clock, create=False) as engine:
        assert engine.status("t1").trace_id == trace_id
        app = ConsoleApp(engine, clock=clock, poll_interval=0, start=service.StartAt(run_id="t1"))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen)
            summary = app.screen.query_one("#summary", Static).content.plain  # type: ignore[union-attr]
            assert f"trace {trace_id}" in summary
