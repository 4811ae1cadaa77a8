"""A run's progress bar (#42) through a real console: the bar moves in the
runs list and the detail while a run loops, and says STALLED once the run's
process is frozen (SIGSTOP) past its lease (SIGCONT, then SIGKILL, after). In
Textual's Pilot, and in a real terminal (tmux at 80x24, NO_COLOR): the bar is
ASCII and the stall a word, never a colour alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.app import ConsoleApp
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.runs import RunsScreen
from tests.console.pilot_helpers import settle
from tests.support import cli
from tests.support.waiting import until, until_async

#: Short, so a frozen holder is past its lease within the test's patience.
LEASE = 2.0
FLOW = f"{cli.ROOT / 'tests' / 'workflows' / 'progressing.py'}:wf"
BAR = re.compile(r"\[#*\.*\] (\d+)%")


def _start(db: Path, run_id: str) -> cli.Child:
    inputs = {"items": 100_000, "pace": 0.005}
    return cli.start(
        ["run", FLOW, "--run-id", run_id, "--input", json.dumps(inputs), "--db", str(db)],
        env={"PHASEGATE_LEASE_SECONDS": str(LEASE)},
    )


def _reported(db: Path, run_id: str) -> bool:
    try:
        with Engine(db, create=False, readonly=True) as eng:
            return eng.status(run_id).progress is not None
    except Exception:  # noqa: BLE001 - the store is still being made
        return False


def _stop(child: cli.Child) -> None:
    if child.alive():
        os.kill(child.pid, signal.SIGCONT)
        child.kill()


@pytest.fixture
def live_app() -> Iterator[Callable[[Path], ConsoleApp]]:
    """An app with the real clock and a short lease (a frozen clock cannot see a lease lapse)."""
    engines: list[Engine] = []

    def make(db: Path) -> ConsoleApp:
        engine = Engine(db, lease_seconds=LEASE, create=False)
        engines.append(engine)
        return ConsoleApp(engine, clock=time.time, poll_interval=0.5)

    yield make
    for e in engines:
        e.close()


def _cell(table: Any, run_id: str, column: str) -> str:
    return str(table.get_cell(run_id, column).plain)


def _percent(text: str) -> int | None:
    m = BAR.search(text)
    return int(m.group(1)) if m else None


@pytest.mark.anyio
async def test_the_bar_moves_while_a_run_loops_and_says_stalled_when_its_process_is_frozen(
    tmp_path: Path, live_app: Callable[[Path], ConsoleApp]
) -> None:
    db = tmp_path / "bar.db"
    run = _start(db, "loop-1")
    try:
        until(lambda: db.exists() and _reported(db, "loop-1"), "the run's first progress report")
        app = live_app(db)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            runs = app.screen
            assert isinstance(runs, RunsScreen)
            table = runs.query_one("#runs")
            await until_async(lambda: _percent(_cell(table, "loop-1", "frontier")) is not None, "a bar in the list")
            first = _cell(table, "loop-1", "frontier")
            await until_async(lambda: _cell(table, "loop-1", "frontier") != first, "the bar to move")
            assert "/s" in _cell(table, "loop-1", "reason")  # the rate, and the time left, before the reason

            detail = DetailScreen(app, "loop-1")
            await app.push_screen(detail)
            await settle(pilot)
            summary = detail.query_one("#summary")
            said = str(summary.render())
            assert "progress [" in said and "load " in said and "left" in said, said
            await until_async(lambda: str(summary.render()) != said, "the detail's bar to move")

            os.kill(run.pid, signal.SIGSTOP)
            # Past its lease (2 s) and the next look: the bar says STALLED, in words.
            await until_async(lambda: "STALLED" in str(summary.render()), "the detail's bar to say stalled")
            assert "no progress for" in str(summary.render())
            await pilot.press("escape")
            await until_async(lambda: "STALLED" in _cell(table, "loop-1", "frontier"), "the list's bar to say stalled")
    finally:
        # SIGCONT, then SIGKILL. (A holder frozen past its lease has lost it:
        # its reports are no longer written, and it stays stalled until resumed.)
        _stop(run)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_bar_in_a_real_terminal_at_80x24_without_colour(tmp_path: Path) -> None:
    db = tmp_path / "tmux.db"
    run = _start(db, "loop-t")
    session = f"pg-progress-{uuid.uuid4().hex[:8]}"
    env = cli.child_env({"PHASEGATE_LEASE_SECONDS": str(LEASE), "NO_COLOR": "1", "TERM": "xterm-256color"})
    command = f"{sys.executable} -m phasegate console --db {db}"

    def screen() -> str:
        p = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True)
        return p.stdout

    def row() -> str:
        return next((line for line in screen().splitlines() if "loop-t" in line), "")

    try:
        until(lambda: db.exists() and _reported(db, "loop-t"), "the run's first progress report")
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command],
            check=True,
            env=env,
            cwd=tmp_path,
        )
        first = until(lambda: (r := row()) and _percent(r) is not None and r, "the bar on the terminal")
        assert len(first) <= 80
        until(lambda: (r := row()) and r != first and _percent(r) is not None, "the bar to move on the terminal")
        os.kill(run.pid, signal.SIGSTOP)
        until(lambda: "STALLED" in row(), "the bar to say STALLED on the terminal")
        assert "stalled" in row()  # the status column says so too, in words
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        _stop(run)
