"""Stopping a run at its next step: the request, and how a phase meets it.

A worker sent SIGTERM, or `phasegate run` sent SIGTERM or SIGINT, asks its
runs to stop. The unit of stopping is the step, not the phase: a phase that
is an agent's whole loop may have hours left. The request is checked at
every `ctx.step` and `ctx.effect` call, before anything is recorded, and an
async phase's task is also cancelled at once, at its next await (an
effect's call in flight is let finish and recorded first: cutting it off
would leave it in doubt). What was finished is committed; the run is left
`interrupted`, its lease released, with a reason that says where it stopped,
and a resume redoes nothing that was saved.

This is the mechanism an operator's pause and cancel build on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("phasegate.run")

#: How the reason of a run stopped on request begins ("stopped by SIGTERM
#: in phase agent, after step llm:7"): the views tell it by this from a run
#: whose process died.
STOPPED_PREFIX = "stopped "


class Interrupted(BaseException):
    """Raised inside a phase at its next step once a stop was requested.

    A BaseException, like KeyboardInterrupt, so that a phase's own
    `except Exception` cannot swallow it and carry on past the stop."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        """Where the run stopped ("stopped by SIGTERM in phase agent, after step llm:7")."""


class StopRequest:
    """A request, made once, that the runs it is given to stop at their next step.

    Safe to call from a signal handler and from any thread. Each run
    registers a hook for as long as it runs an async phase (the hook cancels
    that phase's task from the loop's own thread)."""

    def __init__(self) -> None:
        self.why: str | None = None
        """What asked for the stop ("stopped by SIGTERM"), or None while nothing did.
        (An attribute, not a property: every step reads it.)"""
        self._hooks: dict[int, Callable[[], None]] = {}
        self._next = 0
        # Not a Lock: a signal handler may run `request` on the main thread
        # while that thread holds the lock inside `on_request`.
        self._lock = threading.RLock()

    def __bool__(self) -> bool:
        return self.why is not None

    def request(self, why: str) -> None:
        """Ask every run given this request to stop at its next step.

        Args:
            why: what asked, as the run's reason will begin ("stopped by SIGTERM").
                A second request keeps the first one's words.
        """
        with self._lock:
            if self.why is None:
                self.why = why
            hooks = list(self._hooks.values())
        for hook in hooks:
            try:
                hook()
            except Exception as exc:  # noqa: BLE001 - a loop already closed: the step check still stops the run
                log.debug("stop hook failed: %s", exc)

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds` (a phase's wait before its retry), cut short by a stop request.

        Args:
            seconds: How long to wait.

        Returns:
            False when a stop was requested (before the wait or during it).
        """
        end = time.monotonic() + seconds
        while self.why is None:
            left = end - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))  # polled: a signal handler cannot safely set an Event
        return False

    def on_request(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call `hook` when a stop is requested (at once if it already was).

        Args:
            hook: called with no arguments, from whatever thread requests the stop.

        Returns:
            A function that unregisters the hook.
        """
        with self._lock:
            token = self._next
            self._next += 1
            self._hooks[token] = hook
            already = self.why is not None
        if already:
            hook()

        def forget() -> None:
            with self._lock:
                self._hooks.pop(token, None)

        return forget


def where(why: str, phase: str, last_step: str | None) -> str:
    """The reason a run stopped at a step records: what asked, the phase, the last finished step."""
    after = f"after step {last_step}" if last_step is not None else "before its first step"
    return f"{why} in phase {phase}, {after}"
