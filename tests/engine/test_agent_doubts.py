"""Review of #26's invariants, each found broken and fixed: no effect is left
in doubt that provably never ran, a cancelled event loop's task is a stop,
not a failure, a map's items are names like any other, a stop is not
kept waiting by a retry's wait, and a signal's stop is not lost to its
message. On a real store (SQLite and PostgreSQL),
in-process or through the command line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from typing import Any

from engine_harness import Harness, spawn

from phasegate import AsyncPhaseContext, Engine, PhaseContext, Workflow
from phasegate.run.asynccontext import _POOL_SIZE
from phasegate.run.stopping import StopRequest
from tests.support import cli
from tests.support.cli import ROOT
from tests.support.pause import thaw, wait_for, wait_stopped
from tests.support.standin import Standin

AGENTS = ROOT / "tests" / "workflows" / "agent_loops.py"

# -- a plain effect function cancelled before any thread took it up -------------

queued = Workflow("test-queued-effect")
SENT: list[str] = []
FAIL = {"now": True}
BUSY = {"started": 0}
RELEASE = threading.Event()
#: The steps' pool's threads: this many busy calls fill it.
POOL = _POOL_SIZE


@queued.phase()
async def send(ctx: AsyncPhaseContext) -> str:
    def busy() -> None:
        BUSY["started"] += 1
        # Holds its thread until the sibling has failed and a moment more: the
        # effect's call cannot get a thread first, however slow the machine.
        RELEASE.wait(60)

    def notify(key: str) -> str:
        SENT.append(key)
        return "sent"

    async def sibling() -> None:
        while BUSY["started"] < POOL:  # every thread of the pool taken
            await asyncio.sleep(0.01)
        if not FAIL["now"]:
            RELEASE.set()
            return
        # The group cancels the queued effect within a few turns of the loop
        # after this raise; the busy threads are let go a second later.
        threading.Timer(1.0, RELEASE.set).start()
        raise ValueError("a sibling failed")

    BUSY["started"] = 0
    RELEASE.clear()
    async with asyncio.TaskGroup() as group:
        # Every thread of the steps' pool busy: the effect's call waits in its queue.
        for i in range(POOL + 16):
            group.create_task(ctx.step(f"busy:{i}", busy))
        sent = group.create_task(ctx.effect("notify", notify))
        group.create_task(sibling())
    return sent.result()


def test_a_plain_effect_cancelled_while_queued_for_a_thread_is_not_left_in_doubt(h: Harness) -> None:
    SENT.clear()
    FAIL["now"] = True
    with Engine(h.target) as eng:
        out = eng.run(queued, "q1")
        assert out.status == "failed", out
        # The TaskGroup cancelled the effect before its function ran: nothing was attempted.
        assert SENT == []
        view = eng.status("q1")
        assert [e.state for e in view.effects if e.state == "in_doubt"] == [], view.effects
        FAIL["now"] = False
        again = eng.run(queued, "q1")
        assert again.status == "completed", again
        assert SENT == ["q1/send/notify"]


# -- a reconcile hook's effect, stopped while its intent is being committed --------


def test_a_stop_while_an_effect_with_a_reconcile_hook_begins_leaves_no_false_in_doubt(h: Harness) -> None:
    with Standin(h.tmp / "server.log", delay=0.0) as model:
        args = ["run", f"{AGENTS}:agent", "--run-id", "rc1", "--input", json.dumps({"url": model.url, "turns": 1})]
        child = spawn([*args, "--db", h.target], env={**h.env, "PHASEGATE_PAUSE_AT": "after-intent:notify"})
        # Frozen inside the effect's first half (its intent committed, in a
        # thread since it has a reconcile hook); SIGTERM lands as it thaws.
        assert wait_stopped(child.pid, child.alive)
        os.kill(child.pid, signal.SIGTERM)
        thaw(child.pid)
        res = child.wait(60)
        assert res.returncode in (0, 130), res.stdout + res.stderr
        st = h.status("rc1")
        if model.requests("send") == []:
            # Never sent: an operator must not be asked whether it happened.
            assert [e["state"] for e in st["effects"] if e["state"] == "in_doubt"] == [], st["effects"]
        done = h.resume("rc1") if st["status"] != "completed" else res
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(model.requests("send")) == 1


# -- the caller's loop cancels the phase's own task (its shutdown sweep) -----------

swept = Workflow("test-swept")
TASKS: dict[str, Any] = {}


@swept.phase()
async def loop_phase(ctx: AsyncPhaseContext) -> int:
    TASKS["phase"] = asyncio.current_task()
    total = 0
    for i in range(40):
        total += await ctx.step(f"s:{i}", asyncio.sleep, 0.05, i, durable=True)
    return total


def test_the_callers_loop_cancelling_the_phases_task_leaves_the_run_interrupted_not_failed(h: Harness) -> None:
    async def app() -> Any:
        with Engine(h.target) as eng:
            run = asyncio.create_task(eng.arun(swept, "sw1"))
            while "phase" not in TASKS:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            # What asyncio.run's shutdown does when it reaches the phase's task before the run's.
            TASKS["phase"].cancel()
            return await run

    TASKS.clear()
    outcome = asyncio.run(app())
    assert outcome.status == "interrupted", outcome
    with Engine(h.target) as eng:
        view = eng.status("sw1")
        assert view.status == "interrupted", (view.status, view.attention)
        assert eng.run(swept, "sw1").status == "completed"


# -- a map's item names are names like any other ---------------------------------

mixed = Workflow("test-map-names")
CALLS: list[str] = []


@mixed.phase()
def mix(ctx: PhaseContext) -> list[Any]:
    def direct() -> str:
        CALLS.append("direct")
        return "direct"

    def item(x: int) -> int:
        CALLS.append(f"item {x}")
        return x * 10

    first = ctx.step("fetch:0", direct, durable=True)
    return [first, *ctx.map("fetch", item, [1, 2], durable=True)]


def test_a_map_item_named_like_a_step_of_the_phase_is_refused_before_anything_runs(h: Harness) -> None:
    CALLS.clear()
    with Engine(h.target) as eng:
        out = eng.run(mixed, "mx1")
        # Item 0 of map "fetch" is the step "fetch:0": the same name twice in one phase.
        assert out.status == "failed", out
        assert out.error is not None and out.error["type"] == "UsageError", out.error
        assert "fetch:0" in out.error["message"]
    assert CALLS == ["direct"]
    rows = h.sql("SELECT step_key FROM phasegate_steps WHERE run_id = 'mx1'")
    assert [r[0] for r in rows] == ["fetch:0"]


# -- a stop during a step's retries ------------------------------------------------

flaky = Workflow("test-flaky-step")
TRIES: list[float] = []


@flaky.phase()
def call_flaky(ctx: PhaseContext) -> str:
    def attempt() -> str:
        TRIES.append(time.monotonic())
        raise ConnectionError("the service is down")

    return ctx.step("call", attempt, retries=1, backoff=4.0, retry_on=ConnectionError)


def test_a_stop_during_a_sync_steps_retry_wait_stops_the_run_without_calling_it_again(h: Harness) -> None:
    TRIES.clear()
    stop = StopRequest()
    with Engine(h.target) as eng:
        eng.stop_request = stop
        timer = threading.Timer(0.5, stop.request, ("stopped by the test",))
        timer.start()
        try:
            out = eng.run(flaky, "fl1")
        finally:
            timer.cancel()
        assert out.status == "interrupted", out
        assert "stopped by the test in phase call_flaky" in out.stopped
    # Called once; the stop came during the (2 to 6 s) wait before its retry.
    assert len(TRIES) == 1


flaky_phase = Workflow("test-flaky-phase")


@flaky_phase.phase(retries=1, backoff=4.0, retry_on=ConnectionError)
def down(ctx: PhaseContext) -> str:
    TRIES.append(time.monotonic())
    raise ConnectionError("the service is down")


def test_a_stop_during_a_phases_retry_wait_stops_the_run_without_running_it_again(h: Harness) -> None:
    TRIES.clear()
    stop = StopRequest()
    with Engine(h.target) as eng:
        eng.stop_request = stop
        timer = threading.Timer(0.5, stop.request, ("stopped by the test",))
        timer.start()
        try:
            out = eng.run(flaky_phase, "fl2")
        finally:
            timer.cancel()
        assert out.status == "interrupted", out
        assert "stopped by the test in phase down, before its attempt 2" in out.stopped
        assert eng.status("fl2").status == "interrupted"
    assert len(TRIES) == 1


# -- the signal handler's own message --------------------------------------------


def test_sigterm_stops_the_run_at_its_next_step_even_when_its_stderr_is_gone(h: Harness) -> None:
    tr = h.tmp / "trace.txt"
    inputs = json.dumps({"steps": 30, "pace": 0.3, "trace": str(tr)})
    # Its stderr a pipe whose reader is gone (`phasegate run ... 2>&1 | head` after head quit).
    child = cli.popen(["run", f"{AGENTS}:long", "--run-id", "se1", "--input", inputs, "--db", h.target], env=h.env)
    assert child.stderr is not None and child.stdout is not None
    child.stderr.close()
    wait_for(lambda: tr.exists() and tr.read_text().count("step ") >= 2, what="two steps")
    os.kill(child.pid, signal.SIGTERM)
    out, _ = child.communicate(timeout=60)
    st = h.status("se1")
    assert st["status"] == "interrupted", (st["status"], st["attention"], out)
    assert "stopped by SIGTERM in phase work, after step s:" in st["attention"], st["attention"]
    assert h.resume("se1").returncode == 0


# -- the caller's loop is not held behind another effect's reconcile hook -----------

asked = Workflow("test-asked-effects")
TICKS = {"n": 0, "b_called": -1, "hook_end": -1}
BROKEN = {"a": True}


@asked.phase()
async def both(ctx: AsyncPhaseContext) -> list[Any]:
    def a(key: str) -> str:
        if BROKEN["a"]:
            raise ConnectionError("the gateway dropped the call")  # left in doubt: it may have happened
        return "a done"

    def hook(key: str) -> Any:
        from phasegate import Reconciled

        time.sleep(1.0)  # sleep: the outside system is slow to answer
        TICKS["hook_end"] = TICKS["n"]
        return Reconciled.not_done()

    async def b_later() -> Any:
        await asyncio.sleep(0.2)
        TICKS["b_called"] = TICKS["n"]
        return await ctx.effect("b", lambda key: "b done", idempotent=True)

    return list(await asyncio.gather(ctx.effect("a", a, reconcile=hook), b_later()))


def test_an_effect_beside_one_whose_reconcile_hook_is_asked_does_not_block_the_callers_loop(h: Harness) -> None:
    async def app() -> Any:
        async def ticker() -> None:
            while True:
                TICKS["n"] += 1
                await asyncio.sleep(0.01)

        t = asyncio.create_task(ticker())
        with Engine(h.target) as eng:
            first = await eng.arun(asked, "ak1")
            assert first.status == "failed", first
            BROKEN["a"] = False
            outcome = await eng.arun(asked, "ak1")
        t.cancel()
        return outcome

    BROKEN["a"] = True
    outcome = asyncio.run(app())
    assert outcome.status == "completed" and outcome.result == ["a done", "b done"], outcome
    # The loop went on ticking while effect a's hook was asked and b waited its turn.
    assert TICKS["hook_end"] - TICKS["b_called"] >= 5, TICKS


# -- Engine.arun does not hold the loop's default executor -------------------------

threaded = Workflow("test-to-thread")


@threaded.phase()
async def blocking_sdk(ctx: AsyncPhaseContext) -> int:
    # What an author does with a blocking SDK call: the loop's default executor.
    return await asyncio.to_thread(sum, [1, 2, 3])


def test_as_many_aruns_as_the_loops_default_executor_has_threads_do_not_deadlock(h: Harness) -> None:
    from concurrent.futures import ThreadPoolExecutor

    async def app() -> list[Any]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(2))
        with Engine(h.target) as eng:
            runs = asyncio.gather(*(eng.arun(threaded, f"tt{i}") for i in range(2)))
            try:
                return list(await asyncio.wait_for(runs, 30))
            except TimeoutError:
                return ["deadlocked: each run's thread held an executor thread its phase's to_thread waited for"]

    outcomes = asyncio.run(app())
    assert [getattr(o, "status", o) for o in outcomes] == ["completed", "completed"], outcomes


# -- an effect that finishes while another's reconcile hook is asked ----------------

finishing = Workflow("test-finish-beside-hook")
MARKS = {"n": 0, "b_returned": -1, "hook_end": -1}
DROPPED = {"a": True}


@finishing.phase()
async def pair(ctx: AsyncPhaseContext) -> list[Any]:
    def b(key: str) -> str:
        time.sleep(0.5)  # sleep: a slow call in a thread, while the phase's loop goes on
        if DROPPED["a"]:
            raise ConnectionError("the gateway dropped this one too")  # idempotent: simply called again
        MARKS["b_returned"] = MARKS["n"]
        return "b done"

    def a(key: str) -> str:
        if DROPPED["a"]:
            raise ConnectionError("the gateway dropped the call")
        return "a done"

    def hook(key: str) -> Any:
        from phasegate import Reconciled

        time.sleep(1.5)  # sleep: a slow call in a thread, while the phase's loop goes on
        MARKS["hook_end"] = MARKS["n"]
        return Reconciled.not_done()

    async def a_later() -> Any:
        await asyncio.sleep(0.1)
        return await ctx.effect("a", a, reconcile=hook)

    return list(await asyncio.gather(ctx.effect("b", b, idempotent=True), a_later()))


def test_an_effect_finishing_while_another_effects_hook_is_asked_does_not_block_the_callers_loop(
    h: Harness,
) -> None:
    async def app() -> Any:
        async def ticker() -> None:
            while True:
                MARKS["n"] += 1
                await asyncio.sleep(0.01)

        t = asyncio.create_task(ticker())
        with Engine(h.target) as eng:
            first = await eng.arun(finishing, "fb1")
            assert first.status == "failed", first
            DROPPED["a"] = False
            MARKS["b_returned"] = MARKS["hook_end"] = -1
            outcome = await eng.arun(finishing, "fb1")
        t.cancel()
        return outcome

    DROPPED["a"] = True
    outcome = asyncio.run(app())
    assert outcome.status == "completed" and outcome.result == ["b done", "a done"], outcome
    # b's completion (recorded on the loop) did not wait for a's hook with the loop held.
    assert MARKS["b_returned"] > 0 and MARKS["hook_end"] - MARKS["b_returned"] >= 5, MARKS


# -- an effect that begins while an atomic effect's function runs -------------------

beside_atomic = Workflow("test-beside-atomic")
STEPS = {"n": 0, "b_called": -1, "atomic_end": -1}


@beside_atomic.phase()
async def books(ctx: AsyncPhaseContext) -> list[Any]:
    def post(key: str, session: Any) -> str:
        time.sleep(1.0)  # sleep: a slow statement inside the store's transaction
        STEPS["atomic_end"] = STEPS["n"]
        return "posted"

    async def b_later() -> Any:
        await asyncio.sleep(0.2)
        STEPS["b_called"] = STEPS["n"]
        return await ctx.effect("b", lambda key: "b done", idempotent=True)

    return list(await asyncio.gather(ctx.effect("post", post, atomic=True), b_later()))


def test_an_effect_beginning_while_an_atomic_effect_runs_does_not_block_the_callers_loop(h: Harness) -> None:
    async def app() -> Any:
        async def ticker() -> None:
            while True:
                STEPS["n"] += 1
                await asyncio.sleep(0.01)

        t = asyncio.create_task(ticker())
        with Engine(h.target) as eng:
            outcome = await eng.arun(beside_atomic, "ba1")
        t.cancel()
        return outcome

    outcome = asyncio.run(app())
    assert outcome.status == "completed" and outcome.result == ["posted", "b done"], outcome
    assert STEPS["b_called"] > 0 and STEPS["atomic_end"] - STEPS["b_called"] >= 5, STEPS


# -- an effect a failed attempt left beginning in a thread ---------------------------

leftover = Workflow("test-leftover-effect")
LEFT: dict[str, Any] = {"attempt": 0, "sent": []}


@leftover.phase(retries=1, backoff=0.1, retry_on=ValueError)
async def tries(ctx: AsyncPhaseContext) -> str:
    from phasegate import Reconciled

    LEFT["attempt"] += 1
    if LEFT["attempt"] > 1:
        await asyncio.sleep(2.5)  # the retry runs on while the first attempt's effect would begin
        return "second"

    def busy() -> None:
        time.sleep(1.5)  # sleep: a slow call in a thread, while the phase's loop goes on

    def notify(key: str) -> str:
        LEFT["sent"].append(key)
        return "sent"

    async def fail_soon() -> None:
        await asyncio.sleep(0.3)
        raise ValueError("the first attempt fails")

    # A plain gather: its other tasks run on after the failure, on the caller's loop.
    await asyncio.gather(
        *(ctx.step(f"busy:{i}", busy) for i in range(80)),
        ctx.effect("notify", notify, reconcile=lambda key: Reconciled.not_done()),
        fail_soon(),
    )
    return "first"


def test_an_effect_that_begins_after_its_phase_attempt_ended_is_not_called(h: Harness) -> None:
    LEFT.update(attempt=0, sent=[])

    async def app() -> Any:
        with Engine(h.target) as eng:
            return await eng.arun(leftover, "lo1"), eng.status("lo1")

    outcome, view = asyncio.run(app())
    assert outcome.status == "completed" and outcome.result == "second", outcome
    # The failed attempt's effect was still waiting for a thread when that attempt ended.
    assert LEFT["sent"] == []
    assert [e.state for e in view.effects if e.state == "in_doubt"] == [], view.effects
