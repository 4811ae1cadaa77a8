"""The one way a test waits for something to happen: `until(check, what)`.

A test that needs a child process, a worker or the console to get somewhere
asks `check` (a store read, a file, a screen's text) until it answers
something true, and is handed that answer. It never sleeps a fixed time
and hopes: the first look comes at once, the next after 5 ms, growing to
`every`, so a fast machine waits milliseconds and a loaded one waits as long
as it needs, up to `timeout`. The timeouts are generous (the machines are
shared); reaching one is a failure that names what was waited for and what
`check` last answered, never a timing assertion.

`until_async` is the same for a coroutine (a Textual Pilot test), yielding
to the event loop between looks instead of blocking it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: The first pause between two looks; it doubles up to the caller's `every`.
FIRST = 0.005
#: How long a test waits before it gives up, unless it says otherwise.
TIMEOUT = 60.0


class TimedOut(AssertionError):
    """What `until` raises when the deadline passes: an assertion, so pytest
    reports it as the test's failure, with what was waited for."""


def _message(what: str, timeout: float, last: object, error: BaseException | None) -> str:
    said = f"; last error: {type(error).__name__}: {error}" if error is not None else f"; last answer: {last!r}"
    return f"timed out after {timeout:g}s waiting for {what}{said[:400]}"


def until(
    check: Callable[[], T],
    what: str,
    *,
    timeout: float = TIMEOUT,
    every: float = 0.1,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Ask `check()` until it answers something true, and return that answer.

    Args:
        check: what to look at; called at once, then with growing pauses.
        what: what the test waits for, as the failure names it ("the worker to
            finish r1").
        timeout: seconds before giving up.
        every: the longest pause between two looks.
        ignoring: errors `check` may raise while the thing is not there yet
            (a store still being created); they count as "not yet".

    Returns:
        The first true answer of `check`.

    Raises:
        TimedOut: `timeout` passed without one.
    """
    deadline = time.monotonic() + timeout
    pause = min(FIRST, every)
    while True:
        error: BaseException | None = None
        got: T | None = None
        try:
            got = check()
        except ignoring as exc:
            error = exc
        if error is None and got:
            return got
        if time.monotonic() > deadline:
            raise TimedOut(_message(what, timeout, got, error))
        time.sleep(pause)  # sleep: the pause between two looks of a poll with a deadline
        pause = min(pause * 2, every)


async def until_async(
    check: Callable[[], T | Awaitable[T]],
    what: str,
    *,
    timeout: float = TIMEOUT,
    every: float = 0.05,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """`until` for a coroutine: the event loop runs between looks (an app
    under Pilot goes on refreshing). `check` may be a plain callable or return
    an awaitable.

    Args:
        check: what to look at.
        what: what the test waits for, as the failure names it.
        timeout: seconds before giving up.
        every: the longest pause between two looks.
        ignoring: errors `check` may raise that count as "not yet".

    Returns:
        The first true answer of `check`.

    Raises:
        TimedOut: `timeout` passed without one.
    """
    deadline = time.monotonic() + timeout
    pause = min(FIRST, every)
    while True:
        error: BaseException | None = None
        got: T | None = None
        try:
            answer = check()
            got = await answer if isinstance(answer, Awaitable) else answer  # type: ignore[assignment]
        except ignoring as exc:
            error = exc
        if error is None and got:
            return got
        if time.monotonic() > deadline:
            raise TimedOut(_message(what, timeout, got, error))
        await asyncio.sleep(pause)
        pause = min(pause * 2, every)
