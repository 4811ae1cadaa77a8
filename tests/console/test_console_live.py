"""The screen follows the store without a key press: another process decides
on a run, and the runs list and the open detail show it."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.runs import RunsScreen
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.support import cli
from tests.support.waiting import until_async

pytestmark = pytest.mark.anyio


def decide_elsewhere(db: Path, run_id: str, action: str, reason: str) -> subprocess.Popen[str]:
    args = ["decide", run_id, action, "--reason", reason, "--db", str(db)]
    return cli.popen(args, env={"PHASEGATE_OPERATOR": "ops-bob"})


async def wait_for(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    # Only the app's own clock is frozen; waiting here is on the event loop.
    await until_async(predicate, "the change to show up", timeout=timeout)


@pytest.mark.parametrize("events", [True, False], ids=["file-events", "polling-only"])
async def test_change_by_another_process_shows_up(store: Path, make_app: Any, events: bool) -> None:
    app = make_app(store, poll_interval=0.5, live_events=events)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one("#runs")
        # keep a row selected that is not the one that changes
        table.move_cursor(row=table.get_row_index(fx.INTEGRITY))
        await settle(pilot)
        detail = DetailScreen(app, fx.ENV_MISMATCH)
        await app.push_screen(detail)
        await settle(pilot)
        assert detail.run_view is not None and not detail.run_view.pending_decisions
        proc = decide_elsewhere(store, fx.ENV_MISMATCH, "approve", "[red]ok[/] from the shell")
        _out, err = await asyncio.to_thread(proc.communicate)
        assert proc.returncode == 0, err
        # no key is pressed from here on
        await wait_for(pilot, lambda: bool(detail.run_view and detail.run_view.pending_decisions))
        assert detail.run_view.pending_decisions[0].operator == "ops-bob"
        assert "a" not in {ab.binding.key for ab in app.screen.active_bindings.values()}  # approved: not offered again

        def reason_shown() -> bool:
            cell = table.get_cell(fx.ENV_MISMATCH, "reason")
            return "decided: approve by ops-bob" in cell.plain

        # The list, covered by the detail, is not re-read (repainting it makes
        # Textual resend the whole screen on top); it is when shown again.
        assert runs.stale and not reason_shown()
        await pilot.press("escape")
        await wait_for(pilot, reason_shown)
        # the list kept its selected row
        assert table.run_id_at(table.cursor_row) == fx.INTEGRITY


class _AlwaysChanged:
    """A probe that says "committed" whenever asked, so what is tested is
    which file events reach it."""

    def changed(self) -> bool:
        return True

    def close(self) -> None:
        pass


def test_file_events_ignore_shm(tmp_path: Path) -> None:
    """Every reader rewrites `-shm`; it must not wake the console. Checked
    only once the watcher provably runs: before that, nothing could wake it,
    and the test would pass whatever the filter said."""
    import threading
    import time

    from phasegate.console import live

    db = tmp_path / "runs.db"
    db.write_bytes(b"")
    seen: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=live.watch_store, args=(db, _AlwaysChanged, seen.append, stop), kwargs={"poll": 30.0, "debounce_ms": 50}
    )
    thread.start()

    def woken(within: float) -> bool:
        deadline = time.monotonic() + within
        while not seen and time.monotonic() < deadline:
            time.sleep(0.02)  # sleep: `within` must pass in full to show a write that does not wake the watcher
        return bool(seen)

    try:
        # Running means: a write to a store file wakes it. Until then, write again.
        deadline = time.monotonic() + 30
        while not woken(0.3):
            assert time.monotonic() < deadline, "the watcher never woke on a write to runs.db-journal"
            (tmp_path / "runs.db-journal").write_bytes(b"x")
        time.sleep(0.3)  # sleep: let that write's last batch through (the debounce), then start clean
        seen.clear()
        for name in ("runs.db-shm", "other.db"):
            (tmp_path / name).write_bytes(b"x")
            assert not woken(0.6), f"{name} woke the console"
        (tmp_path / "runs.db-wal").write_bytes(b"x")
        assert woken(10), "runs.db-wal did not wake the console"
        assert set(seen) == {"files"}
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
