"""The console follows a PostgreSQL store through LISTEN/NOTIFY: a decision
made by another process shows up with no key press, long before the polling
fallback would have fired."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from phasegate import Engine
from phasegate.console.app import ConsoleApp
from tests.conftest import BILLING, cli

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_console_sees_a_commit_by_another_process(pg_url: str, tmp_path: Path) -> None:
    env = {"PHASEGATE_TEST_KILL_AT": "after:charge:inv-1"}
    p = cli(
        "run",
        BILLING,
        "--run-id",
        "pg-live",
        "--input",
        json.dumps({"ledger": str(tmp_path / "l")}),
        "--db",
        pg_url,
        env=env,
    )
    assert p.returncode != 0
    assert cli("resume", "pg-live", "--db", pg_url).returncode == 3  # blocked: in doubt
    engine = Engine(pg_url, create=False)
    app = ConsoleApp(engine, poll_interval=60.0, live_events=True)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.5)
            table = app.screen.query_one("#runs")
            cell = table.get_cell("pg-live", "reason").plain
            assert "in_doubt_effect" in cell
            proc = await asyncio.to_thread(
                cli,
                "decide",
                "pg-live",
                "confirm_effect",
                "--result",
                '{"charge_id": "ch-seen"}',
                "--reason",
                "ledger shows it",
                "--db",
                pg_url,
            )
            assert proc.returncode == 0, proc.stderr
            loop = asyncio.get_running_loop()
            end = loop.time() + 20  # far below the 60 s polling interval
            while "decided: confirm_effect" not in table.get_cell("pg-live", "reason").plain:
                assert loop.time() < end, "the console never showed the decision"
                await asyncio.sleep(0.1)
    finally:
        engine.close()
