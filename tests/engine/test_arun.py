"""`Engine.arun` from a running event loop, and `Engine.run` called from
async code, on a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from engine_harness import Harness

from phasegate import AsyncPhaseContext, Engine, PhaseContext, Workflow

wf = Workflow("test-arun")
LOOPS: dict[str, Any] = {}


@wf.phase()
async def think(ctx: AsyncPhaseContext) -> dict[str, Any]:
    LOOPS["phase"] = asyncio.get_running_loop()
    out = []
    for i in range(int(ctx.inputs.get("turns", 5))):
        out.append(await ctx.step(f"t:{i}", asyncio.sleep, float(ctx.inputs.get("pace", 0.02)), i, durable=True))
    return {"turns": out}


@wf.phase(needs=["think"])
def tally(ctx: PhaseContext, think: dict[str, Any]) -> int:
    # A sync phase after an async one: run in the worker thread, not the loop.
    return len(think["turns"])


def test_arun_runs_async_phases_on_the_callers_loop_without_blocking_it(h: Harness) -> None:
    async def app() -> tuple[Any, int]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        t = asyncio.create_task(ticker())
        with Engine(h.target) as eng:
            outcome = await eng.arun(wf, "ar1", {"turns": 5})
        LOOPS["caller"] = asyncio.get_running_loop()
        stop.set()
        await t
        return outcome, ticks

    outcome, ticks = asyncio.run(app())
    assert outcome.status == "completed" and outcome.result == 5
    assert LOOPS["phase"] is LOOPS["caller"]
    # The loop went on with other work while the run ran (its start
    # sequence and commits are in another thread or one commit long).
    assert ticks > 5


def test_cancelling_arun_stops_the_run_at_its_next_step_resumable(h: Harness) -> None:
    async def app() -> None:
        with Engine(h.target) as eng:
            task = asyncio.create_task(eng.arun(wf, "ar2", {"turns": 50, "pace": 0.05}))
            await asyncio.sleep(0.6)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(app())
    with Engine(h.target) as eng:
        view = eng.status("ar2")
        assert view.status == "interrupted"
        assert "stopped by cancellation of Engine.arun in phase think, after step t:" in view.attention
        assert eng.run(wf, "ar2").status == "completed"


def test_engine_run_from_async_code_lets_a_sync_step_use_asyncio_run(h: Harness) -> None:
    plain = Workflow("test-run-in-loop")

    @plain.phase()
    def fetch(ctx: PhaseContext) -> int:
        async def call() -> int:
            await asyncio.sleep(0)
            return 7

        return ctx.step("call", lambda: asyncio.run(call()), durable=True)

    async def handler() -> Any:
        with Engine(h.target) as eng:
            return eng.run(plain, "ar3")

    outcome = asyncio.run(handler())
    assert outcome.status == "completed" and outcome.result == 7


def test_an_async_phase_runs_from_plain_engine_run_again_and_again(h: Harness) -> None:
    with Engine(h.target) as eng:
        for i in range(3):
            assert eng.run(wf, f"ar4-{i}", {"turns": 2, "pace": 0}).status == "completed"


def test_a_durable_step_name_reused_across_tasks_or_threads_is_refused(h: Harness) -> None:
    from concurrent.futures import ThreadPoolExecutor

    tasks = Workflow("test-names-tasks")

    @tasks.phase()
    async def fan(ctx: AsyncPhaseContext) -> list[int]:
        return list(await asyncio.gather(*(ctx.step("same", _noop, i, durable=True) for i in range(3))))

    threads = Workflow("test-names-threads")

    @threads.phase(name="fan")
    def fan_threads(ctx: PhaseContext) -> list[int]:
        with ThreadPoolExecutor(3) as pool:
            return list(pool.map(lambda i: ctx.step("same", lambda: i, durable=True), range(3)))

    ordered = Workflow("test-names-ordered")

    @ordered.phase(name="fan")
    async def fan_ordered(ctx: AsyncPhaseContext) -> list[int]:
        # From the phase's own task the order is the code's: numbered as always.
        return [await ctx.step("same", _noop, i, durable=True) for i in range(3)]

    with Engine(h.target) as eng:
        for w, rid in ((tasks, "n1"), (threads, "n2")):
            out = eng.run(w, rid)
            assert out.status == "failed", out
            assert out.error is not None and out.error["type"] == "UsageError"
            assert "not all from the phase's own thread or task" in out.error["message"]
        good = eng.run(ordered, "n3")
        assert good.status == "completed" and good.result == [0, 1, 2]
    rows = h.sql("SELECT step_key FROM phasegate_steps WHERE run_id = 'n3' ORDER BY step_key")
    assert [r[0] for r in rows] == ["same", "same#2", "same#3"]


async def _noop(i: int) -> int:
    await asyncio.sleep(0)
    return i
