"""SIGTERM and SIGINT to `phasegate run` and `resume`: stop at the next step.

The first signal asks the run to stop at its next `ctx.step` or `ctx.effect`
(an async phase: at its next await), after what it finished is committed;
the run is left interrupted, resumable, and the command exits 130. A second
signal stops at once (KeyboardInterrupt), as a crash would: the run is
resumable then too, its step in flight redone.
"""

from __future__ import annotations

import logging
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

log = logging.getLogger("phasegate.run")

_Handler = Callable[[int, FrameType | None], Any] | int | None


@contextmanager
def stop_at_next_step(eng: Engine) -> Iterator[StopRequest]:
    """Give `eng` a stop request that the first SIGTERM or SIGINT makes.

    Args:
        eng: the engine the command runs with.

    Yields:
        The stop request (already set on `eng.stop_request`).
    """
    stop = StopRequest()
    eng.stop_request = stop
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    seen = 0

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal seen
        seen += 1
        name = signal.Signals(signum).name
        if seen > 1:
            raise KeyboardInterrupt
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

    previous: dict[int, _Handler] = {}
    sig: int
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, handler)
    try:
        yield stop
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h if h is not None else signal.SIG_DFL)
        eng.stop_request = None
