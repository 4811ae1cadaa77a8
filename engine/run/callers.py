"""How a run is executed for whoever calls it: plain code, code inside a
running event loop, or a coroutine that awaits it (`Engine.arun`).

Plain code runs the runner in its own thread, with async phases in a loop of
the run's own (asyncdriver.py). Code whose thread is inside a running loop
(an `async def` request handler calling `Engine.run`) cannot have another
loop in that thread, and its steps may call `asyncio.run`: the run goes on in
a thread of its own while the caller waits. Awaited, the start sequence and
sync phases run in a thread of their own while each async phase is handed to
the caller's loop; cancelling the awaiting task stops the run at its next
step, and the cancellation goes on once the run has recorded it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable

from ..observe import hooks, logs
from ..outcome import Outcome
from .runner import Runner
from .stopping import StopRequest


def execute(runner: Runner) -> Outcome:
    """Run `runner` to its end for a plain caller (see the module's note).

    Args:
        runner: the run, ready to start.

    Returns:
        How this execution ended.
    """
    if loop_running():
        return in_own_thread(observed(runner), f"phasegate-run-{runner.run_id}").result()
    return observed(runner)()


async def execute_awaited(
    make: Callable[[StopRequest, asyncio.AbstractEventLoop], Runner], outer: StopRequest | None
) -> Outcome:
    """Run to its end from a running loop, the async phases on that loop.

    Args:
        make: builds the runner, given the stop request and the loop its async phases run on.
        outer: a stop request of the caller's (`Engine.stop_request`), forwarded to the run.

    Returns:
        How this execution ended.

    Raises:
        asyncio.CancelledError: the awaiting task was cancelled (the run stopped first).
    """
    loop = asyncio.get_running_loop()
    stop = StopRequest()
    forget = outer.on_request(lambda: stop.request(outer.why or "stopped")) if outer is not None else None
    runner = make(stop, loop)
    done = asyncio.wrap_future(in_own_thread(observed(runner), f"phasegate-run-{runner.run_id}"))
    try:
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            stop.request("stopped by cancellation of Engine.arun")
            while not done.done():
                try:
                    await asyncio.shield(done)
                except asyncio.CancelledError:
                    continue
                except BaseException:  # noqa: BLE001 - the cancellation is what the caller asked about
                    break
            raise
    finally:
        if forget is not None:
            forget()


def observed(runner: Runner) -> Callable[[], Outcome]:
    """`runner.execute` as the installed observer sees it (observe/hooks.py):
    one run attempt, a child of the caller's span when it was started inside
    one, even when it goes on in a thread of its own.

    Args:
        runner: the run, ready to start.

    Returns:
        What executes the run, in whichever thread calls it.
    """
    observer = hooks.OBSERVER
    enter = observer.capture(runner.run_id)

    def go() -> Outcome:
        if enter is not None:
            enter()
        with logs.bound(run_id=runner.run_id, workflow=runner.wf.name):
            observer.workflow_phases(runner.wf.name, [p.name for p in runner.wf.phases])
            return observer.attempt(runner.run_id, runner.wf.name, runner.execute)

    return go


def in_own_thread(fn: Callable[[], Outcome], name: str) -> concurrent.futures.Future[Outcome]:
    """`fn()` in a thread of its own, not the loop's default executor: a run
    holds its thread for as long as it runs, and its async phases may need
    that executor meanwhile (`asyncio.to_thread`): as many runs as it has
    threads would wait on each other for ever.

    Args:
        fn: what the thread runs.
        name: the thread's name.

    Returns:
        A future of what `fn` returns (or raises).
    """
    work: concurrent.futures.Future[Outcome] = concurrent.futures.Future()

    def go() -> None:
        if not work.set_running_or_notify_cancel():
            return
        try:
            work.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            work.set_exception(exc)

    threading.Thread(target=go, name=name).start()
    return work


def loop_running() -> bool:
    """Whether this thread is inside a running event loop (an `async def` caller)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
