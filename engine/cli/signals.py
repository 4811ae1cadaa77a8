"""SIGTERM and SIGINT: the first stops at the next step, a second at once.

`phasegate run` and `resume` (`stop_at_next_step`) and the worker
(cli/daemon.py) answer signals the same way, through `two_signals`: the first
signal asks the runs to stop at their next `ctx.step` or `ctx.effect` (an
async phase: at its next await), after what they finished is committed; the
run is left interrupted, resumable, and `run` exits 130. A second signal
raises KeyboardInterrupt at once, as a crash would: the run is resumable then
too, its step in flight redone.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..run.stopping import StopRequest

if TYPE_CHECKING:  # `phasegate status` imports this module and must not load the engine (SQLAlchemy)
    from ..engine import Engine

_Handler = Callable[[int, FrameType | None], Any] | int | None


@contextmanager
def two_signals(first: Callable[[str], None], again: Callable[[str], None] | None = None) -> Iterator[None]:
    """While inside, the first SIGTERM or SIGINT calls `first(name)`; a second
    calls `again(name)`, then raises KeyboardInterrupt. The previous handlers
    come back on leaving. Outside the main thread (where no handler can be
    set) it does nothing.

    Args:
        first: what the first signal does ("SIGTERM" is its argument); it
            must not raise, or the error lands in whatever code was running.
        again: what a second does before the KeyboardInterrupt.

    Yields:
        Nothing: the handlers are in place.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # Counted in a plain local, not read from a flag the first call sets: a
    # second signal can land while the first handler is still running.
    seen = 0

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal seen
        seen += 1
        name = signal.Signals(signum).name
        if seen > 1:
            if again is not None:
                again(name)
            raise KeyboardInterrupt
        first(name)

    previous: dict[int, _Handler] = {}
    sig: int
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)


@contextmanager
def stop_at_next_step(eng: Engine) -> Iterator[StopRequest]:
    """Give `eng` a stop request that the first SIGTERM or SIGINT makes.

    Args:
        eng: the engine the command runs with.

    Yields:
        The stop request (already set on `eng.stop_request`).
    """
    stop = StopRequest()

    def first(name: str) -> None:
        # The stop first: the message cannot then keep it from being asked.
        stop.request(f"stopped by {name}")
        # Written directly: a logging call from a handler can deadlock on the
        # handler's lock. Best effort: raised here, an error (a closed pipe, a
        # write this signal interrupted) would land in the phase's code and fail the run.
        try:
            sys.stderr.write(f"{name}: stopping the run at its next step (send it again to stop at once)\n")
            sys.stderr.flush()
        except (OSError, ValueError, RuntimeError):
            pass

    eng.stop_request = stop
    try:
        with two_signals(first):
            yield stop
    finally:
        eng.stop_request = None
