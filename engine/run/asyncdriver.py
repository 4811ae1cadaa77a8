"""Where a run's async phases run: the caller's event loop, or one of the run's own.

`Engine.run` is a plain call: an async phase runs in an event loop the run
makes for itself (one for all its async phases, closed at the run's end),
in the thread that runs the run. `Engine.arun` is awaited from a running
loop: the start sequence and every sync phase run in a worker thread, and
each async phase is handed to the caller's loop, so the application's
clients, made on its loop, work in the phase; the loop waits for nothing
but a phase's own commits.

The driver also carries out the stop (stopping.py) for an async phase: the
phase's task is cancelled at once, the effects in flight are let finish and
recorded (`AsyncPhaseContext.settle`), and the cancellation becomes
`Interrupted`, saying where the run stopped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import Any

from .._stop import Stop
from ..errors import LeaseLost, StoreError
from .asynccontext import _RUNNING, AsyncPhaseContext
from .parking import Park
from .stopping import Interrupted, StopRequest, where

#: Which of several failures in one phase (a `TaskGroup`'s group) the run
#: reports: an effect in doubt before a lost lease, before the store
#: failing, before a stop, before the phase's own errors.
_SERIOUS: tuple[type[BaseException], ...] = (Stop, LeaseLost, StoreError, Interrupted, Park)


def most_serious(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one failure of a group that says what happened to the run (see `_SERIOUS`)."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[Any]) -> None:
        for e in g.exceptions:
            if isinstance(e, BaseExceptionGroup):
                walk(e)
            else:
                leaves.append(e)

    walk(group)
    for kind in _SERIOUS:
        for e in leaves:
            if isinstance(e, kind):
                return e
    return leaves[0] if leaves else group


class PhaseLoop:
    """The event loop a run's async phases run in (see the module's note)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """
        Args:
            loop: the caller's running loop (`Engine.arun`), or None for a loop of the run's own.
        """
        self._given = loop
        self._own: asyncio.Runner | None = None

    def run(self, call: Callable[[], Awaitable[Any]], ctx: AsyncPhaseContext, stop: StopRequest | None) -> Any:
        """Run one async phase to its end, from the runner's thread.

        Args:
            call: makes the phase's coroutine (`phase(ctx, **needs)`).
            ctx: the phase's context.
            stop: the run's stop request.

        Returns:
            What the phase returned.

        Raises:
            Interrupted: the run was asked to stop.
            BaseException: whatever the phase raised (a group's most serious one).
        """
        main = self._main(call, ctx, stop)
        if self._given is not None:
            try:
                return asyncio.run_coroutine_threadsafe(main, self._given).result()
            except concurrent.futures.CancelledError:
                # The caller's loop cancelled the phase's task itself (its
                # shutdown sweep, before it reached Engine.arun's task): a stop
                # by the loop's owner, not the phase failing. Its effects in
                # flight were recorded as the task ended (`_main`).
                why = stop.why if stop is not None and stop.why is not None else "stopped by its event loop"
                raise Interrupted(where(why, ctx.phase, ctx.last_step)) from None
        if self._own is None:
            self._own = asyncio.Runner()
        return self._own.run(main)

    async def _main(self, call: Callable[[], Awaitable[Any]], ctx: AsyncPhaseContext, stop: StopRequest | None) -> Any:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        ctx._adopt()
        running = _RUNNING.set(ctx)
        ended = False

        def cancel_now() -> None:
            # On the loop's thread: a phase that already ended (a step's own
            # stop check raised first) is not cancelled in its clean-up.
            if not ended and task is not None:
                task.cancel()

        def cancel() -> None:
            loop.call_soon_threadsafe(cancel_now)

        forget = stop.on_request(cancel) if stop is not None else None
        stopped = False
        try:
            return await call()
        except asyncio.CancelledError:
            if stop is None or stop.why is None:
                raise
            stopped = True
        except BaseExceptionGroup as group:
            raise most_serious(group) from None
        finally:
            ended = True
            _RUNNING.reset(running)
            if forget is not None:
                forget()
            ctx._close()
            # Every effect call still in flight is recorded before the phase ends.
            await ctx._settle()
            if self._given is None:
                await _cancel_leftovers()
        # Where it stopped is said once the effects in flight are recorded.
        assert stopped and stop is not None and stop.why is not None
        raise Interrupted(where(stop.why, ctx.phase, ctx.last_step))

    def close(self) -> None:
        """Close the run's own loop, if it made one."""
        if self._own is not None:
            self._own.close()
            self._own = None


async def _cancel_leftovers() -> None:
    """Tasks the phase started and left running (a `gather` whose sibling
    failed): on the run's own loop nothing else runs, so they are cancelled
    now rather than left to run into the next phase."""
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for t in left:
        t.cancel()
    if left:
        await asyncio.gather(*left, return_exceptions=True)
