"""The console tells the truth about a run's process without anything being
written: a run whose process is SIGKILLed or frozen (SIGSTOP) changes in the
list and the detail on the console's clock; a worker's takeover shows in the
detail; `e` starts a resume that cannot be shadowed by a `phasegate` folder
where the console was started, and says how it ended (#28)."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine, RunStatus
from phasegate.console.app import ConsoleApp
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.runs import RunsScreen
from tests.console.pilot_helpers import settle
from tests.support import cli
from tests.support.waiting import until_async

pytestmark = pytest.mark.anyio

#: Short, so a frozen holder is past its lease within the test's patience.
LEASE = 2.0

SLOW = """
import time
from pathlib import Path

from phasegate import Workflow

wf = Workflow("slow")
HERE = Path(__file__).parent


@wf.phase()
def load(ctx):
    return 1


@wf.phase(needs=["load"])
def crawl(ctx, load):
    for i in range(100000):
        if (HERE / "stop").exists():
            break
        ctx.step(f"page-{i}", time.sleep, 0.05, durable=True)
    return load


@wf.phase(needs=["crawl"])
def check(ctx, crawl):
    if not (HERE / "fixed").exists():
        raise RuntimeError("the fix is not in place yet")
    return "ok"
"""


@pytest.fixture
def slow(tmp_path: Path) -> Path:
    """A workflow file whose middle phase takes steps until told to stop and
    whose last fails until a file says the fix is in."""
    wf = tmp_path / "wfdir" / "slow_wf.py"
    wf.parent.mkdir()
    wf.write_text(textwrap.dedent(SLOW))
    return wf


@pytest.fixture
def live_app(tmp_path: Path) -> Iterator[Callable[..., ConsoleApp]]:
    """An app with the real clock and a short lease (the fixture store's
    frozen clock cannot see a lease lapse)."""
    engines: list[Engine] = []

    def make(db: Path, *, poll_interval: float = 0.5) -> ConsoleApp:
        engine = Engine(db, lease_seconds=LEASE, create=False)
        engines.append(engine)
        return ConsoleApp(engine, clock=time.time, poll_interval=poll_interval)

    yield make
    for e in engines:
        e.close()


def start_run(db: Path, wf: Path, run_id: str) -> cli.Child:
    return cli.start(
        ["run", f"{wf}:wf", "--run-id", run_id, "--db", str(db)],
        env={"PHASEGATE_LEASE_SECONDS": str(LEASE)},
    )


def steps_of(db: Path, run_id: str) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT count(*) FROM phasegate_steps WHERE run_id = ?", (run_id,)).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the store is still being made (or locked a moment)
    finally:
        con.close()


async def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "the change") -> None:
    await until_async(predicate, what, timeout=timeout)


def status_cell(table: Any, run_id: str) -> str:
    return str(table.get_cell(run_id, "status").plain)


async def test_a_killed_and_a_frozen_run_change_in_the_list_and_the_detail(
    tmp_path: Path, slow: Path, live_app: Callable[..., ConsoleApp]
) -> None:
    db = tmp_path / "live.db"
    killed = start_run(db, slow, "crawl-killed")
    frozen = start_run(db, slow, "crawl-frozen")
    try:
        await wait_until(lambda: db.exists() and steps_of(db, "crawl-killed") > 2 and steps_of(db, "crawl-frozen") > 2)
        # No worker, no other writer once they stop: only the clock can tell.
        app = live_app(db, poll_interval=0)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            runs = app.screen
            assert isinstance(runs, RunsScreen)
            table = runs.query_one("#runs")
            await wait_until(lambda: status_cell(table, "crawl-killed").endswith("running"))
            # A live run's list row counts the steps since its last checkpoint.
            await wait_until(lambda: "+" in str(table.get_cell("crawl-frozen", "frontier").plain), what="+N steps")

            os.kill(killed.pid, signal.SIGKILL)
            killed.wait()
            await wait_until(lambda: "interrupted" in status_cell(table, "crawl-killed"), timeout=5 + 10)

            detail = DetailScreen(app, "crawl-frozen")
            await app.push_screen(detail)
            await settle(pilot)
            assert detail.run_view is not None and detail.run_view.status is RunStatus.RUNNING
            summary = detail.query_one("#summary")
            # The holder and its heartbeat's age, for a running run.
            assert f"held by {socket.gethostname()}:{frozen.pid}, heartbeat " in str(summary.render())

            # `status RUN` names the holder and its heartbeat's age too.
            said = cli.run(["status", "crawl-frozen", "--db", str(db)])
            assert f"holder    held by {socket.gethostname()}:{frozen.pid}, heartbeat " in said.stdout, said

            os.kill(frozen.pid, signal.SIGSTOP)
            # Past its lease (2 s) and the next look (2 s): stalled, not running.
            await wait_until(
                lambda: detail.run_view is not None and detail.run_view.status is RunStatus.STALLED, timeout=5 + 10
            )
            assert "stalled" in str(detail.query_one("#header").render())
            assert "alive but past its lease" in str(summary.render())
            await pilot.press("escape")
            await wait_until(lambda: "stalled" in status_cell(table, "crawl-frozen"), timeout=5 + 10)
    finally:
        for child in (killed, frozen):
            if child.alive():
                os.kill(child.pid, signal.SIGCONT)
                child.kill()


def notices(app: ConsoleApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def test_e_resumes_from_a_folder_holding_a_phasegate_package_and_says_how_it_ended(
    tmp_path: Path, slow: Path, live_app: Callable[..., ConsoleApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The operator's folder holds a `phasegate` (a clone, say), and the store.
    ops = tmp_path / "ops"
    (ops / "phasegate").mkdir(parents=True)
    (ops / "phasegate" / "__init__.py").write_text(
        "raise ImportError('the clone in the working directory was imported')\n"
    )
    db = ops / "fix.db"
    (slow.parent / "stop").touch()  # the crawl ends at once; the check fails until the fix is in
    assert start_run(db, slow, "fixme").wait().returncode == 1
    monkeypatch.chdir(ops)
    app = live_app(db)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one("#runs")
        assert "failed" in status_cell(table, "fixme")
        await wait_until(lambda: runs.run_view is not None and runs.resume_fits())

        # Without the fix, the resume fails: the notice says so, with the log's last line.
        await pilot.press("e")
        await wait_until(lambda: any(n.startswith("resume FAILED") for n in notices(app)), what="the failure")
        failed = next(n for n in notices(app) if n.startswith("resume FAILED"))
        assert "exited 1 (the run failed)" in failed
        assert "the fix is not in place yet" in failed
        assert "clone" not in failed  # the package imported was the installed one
        await settle(pilot)
        assert "failed" in status_cell(table, "fixme")

        (slow.parent / "fixed").touch()
        await wait_until(lambda: runs.run_view is not None and runs.resume_fits())
        await pilot.press("e")
        await wait_until(lambda: any(n.startswith("resume ended") for n in notices(app)), what="the completion")
        assert "exited 0 (completed)" in next(n for n in notices(app) if n.startswith("resume ended"))
        # The row follows without a key press.
        await wait_until(lambda: "completed" in status_cell(table, "fixme"))


async def test_a_workers_takeover_shows_in_the_detail(
    tmp_path: Path, slow: Path, live_app: Callable[..., ConsoleApp]
) -> None:
    db = tmp_path / "takeover.db"
    run = start_run(db, slow, "taken")
    worker: cli.Child | None = None
    try:
        await wait_until(lambda: db.exists() and steps_of(db, "taken") > 2)
        worker = cli.start(["worker", "--poll", "0.2", "--db", str(db)], env={"PHASEGATE_LEASE_SECONDS": str(LEASE)})
        app = live_app(db)
        async with app.run_test(size=(100, 40)) as pilot:
            detail = DetailScreen(app, "taken")
            await app.push_screen(detail)
            await settle(pilot)
            os.kill(run.pid, signal.SIGKILL)
            run.wait()
            gone = (
                f"holder {socket.gethostname()}:{run.pid} gone; resumed by worker {socket.gethostname()}:{worker.pid}"
            )

            def noted() -> bool:
                v = detail.run_view
                return v is not None and any(gone in n for n in v.notes)

            await wait_until(noted, what="the takeover")
            assert detail.run_view is not None and detail.run_view.status is RunStatus.RUNNING
            await wait_until(lambda: gone in str(detail.query_one("#panel-error").render()), what="the note on screen")
            assert "interrupted " in str(detail.query_one("#panel-error").render())
    finally:
        (slow.parent / "stop").touch()
        for child in (run, worker):
            if child is not None and child.alive():
                child.kill()
