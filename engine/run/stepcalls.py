"""What both phase contexts keep about the steps of one phase execution.

`PhaseContext` (sync phases) and `AsyncPhaseContext` (async phases) compose
one `StepCalls`: the names already used, how many steps finished and which
was last, the stop check, and the refusals that must come before anything is
recorded. It is thread-safe: a sync phase may call `ctx.step` and
`ctx.effect` from several threads at once, and an async phase from several
tasks.

Occurrence numbering under concurrency. A durable step's saved result is
found by its key: its name, and for the name's second and later calls in
one phase execution `name#2`, `name#3`... That is only sound when the calls
come in the same order on every replay. Calls made from the phase's own
thread (or, in an async phase, from the phase's own task) are, because the
phase's code orders them. Calls from worker threads or other tasks are not:
their order is the scheduler's. So a name called from another thread or
task may be called only once: a second call, from anywhere, is refused
(`UsageError`, before anything is recorded), and concurrent work names its
items itself (`f"fetch:{i}"`, or `ctx.map`). A durable map's items are
names of the phase too (`fetch:0`, `fetch:1`...): a step of one of those
names and the map are refused together, since they would share one saved
result.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import typing
from collections.abc import Callable
from inspect import CO_COROUTINE
from types import FunctionType
from typing import Any

from .. import _json
from ..errors import UsageError
from .stopping import Interrupted, StopRequest, where


def is_async_callable(fn: Any) -> bool:
    """Whether calling `fn` gives a coroutine to await: an `async def`
    function or method, a `functools.partial` of one, or an object whose
    `__call__` is `async def`."""
    if type(fn) is FunctionType and not hasattr(fn, "_is_coroutine_marker"):
        # The common case (a function or a lambda), read off its code's flags:
        # ~0.05 us instead of inspect's ~0.5, at every step.
        return bool(fn.__code__.co_flags & CO_COROUTINE)
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    # The class's own `__call__` (inherited too), not the instance's attribute.
    call = None if inspect.isroutine(fn) else getattr(type(fn), "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


#: Results that are plainly not awaitable: checked by type first, at every step.
_PLAIN: frozenset[type] = frozenset({dict, list, str, int, float, bool, tuple, type(None), bytes})


def refuse_coroutine(what: str, result: Any) -> None:
    """A sync phase's function that returned a coroutine: it never ran.
    Closed (no "never awaited" warning) and refused in one line.

    Raises:
        UsageError: `result` is awaitable.
    """
    if type(result) in _PLAIN:
        return
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()
        raise UsageError(
            f"{what} returned a coroutine in a sync phase, so it never ran: declare the phase `async def` "
            "(it then gets an AsyncPhaseContext whose step and effect are awaited)"
        )


def check_effect_options(name: str, *, idempotent: bool, redo_on_rewind: bool, reconcile_timeout: float) -> None:
    """The options of `ctx.effect` that are refused whatever the phase does.

    Raises:
        UsageError: an option is out of range or contradicts another.
    """
    if redo_on_rewind and not idempotent:
        raise UsageError(f"effect {name!r}: redo_on_rewind needs idempotent=True (a new key must be safe to send)")
    if not reconcile_timeout > 0:
        raise UsageError(f"effect {name!r}: reconcile_timeout must be a positive number of seconds")


class StepCalls:
    """The bookkeeping of one phase execution's steps and effects."""

    def __init__(self, phase: str, stop: StopRequest | None, here: Callable[[], object]) -> None:
        """
        Args:
            phase: the phase's name.
            stop: the request that stops the run at its next step, if any.
            here: who is calling now (the thread, or the asyncio task); the
                first caller's identity is the phase's own (see `home`).
        """
        self.phase = phase
        self._stop = stop
        self._here = here
        self.home: object = here()
        """The phase's own thread or task: the only one implicit numbering is sound in."""
        self._lock = threading.Lock()
        self._occurrence: dict[str, tuple[int, bool]] = {}
        """name -> (times called, whether a call came from another thread or task)."""
        self._effects_seen: set[str] = set()
        self.steps_done = 0
        """Steps (of any kind) completed in this execution of the phase."""
        self.last: str | None = None
        """The step or effect that finished last (where a stop says it stopped)."""
        self.closed = False
        """Set when the phase has returned: a thread or task it left behind stops at its next step."""

    def here(self) -> object:
        """Who is calling now: the thread, or the asyncio task."""
        return self._here()

    def at_home(self) -> bool:
        """Whether the caller is the phase's own thread or task."""
        return bool(self._here() == self.home)

    def effects_seen(self) -> frozenset[str]:
        """The effects this phase execution has called so far, by name."""
        with self._lock:
            return frozenset(self._effects_seen)

    def check_stop(self) -> None:
        """Stop here when a stop was requested (before anything is recorded).

        Raises:
            Interrupted: a stop was requested, or the phase already ended.
        """
        stop = self._stop
        if stop is not None and stop.why is not None:
            raise Interrupted(where(stop.why, self.phase, self.last))
        if self.closed:
            raise Interrupted(f"phase {self.phase} has ended; a step called after it is not run")

    def durable_key(self, name: str) -> str:
        """The key a durable step's result is saved under (see the module's note).

        Raises:
            UsageError: the name was already used from another thread or task.
        """
        mine = self._here() == self.home
        with self._lock:
            n, shared = self._occurrence.get(name, (0, False))
            if n and (shared or not mine):
                raise UsageError(
                    f"durable step {name!r} is called more than once in phase {self.phase!r}, not all from the "
                    "phase's own thread or task: concurrent calls get no implicit numbering (their order is "
                    f"not fixed); give each call its own name, for example f'{name}:{{i}}', or use ctx.map"
                )
            self._occurrence[name] = (n + 1, shared or not mine)
        return name if n == 0 else f"{name}#{n + 1}"

    def claim(self, what: str, keys: list[str]) -> None:
        """The keys a durable `map` gives its items (`name:i`): names of the
        phase like any other, so an item and a step of the same name do not
        share one saved result. Refused before any item runs.

        Raises:
            UsageError: one of the keys was already used in the phase.
        """
        with self._lock:
            used = next((k for k in keys if k in self._occurrence), None)
            if used is not None:
                raise UsageError(
                    f"{what}: its item {used!r} is a durable step already called in phase {self.phase!r}; "
                    "two calls cannot share one saved result: give the map or the step another name"
                )
            for k in keys:
                self._occurrence[k] = (1, True)

    def wait(self, seconds: float) -> None:
        """A sync step's or phase's wait before its retry, cut short by a stop request.

        Raises:
            Interrupted: a stop was requested (before the wait or during it).
        """
        end = time.monotonic() + seconds
        while True:
            self.check_stop()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))  # a signal handler cannot safely set an Event: polled

    def effect_name(self, name: str) -> None:
        """Refuse an effect name used twice in the phase.

        Raises:
            UsageError: the name was used before in this phase execution.
        """
        with self._lock:
            if name in self._effects_seen:
                raise UsageError(
                    f"effect {name!r} is called twice in phase {self.phase!r}; effect names must be unique"
                )
            self._effects_seen.add(name)

    def done(self, name: str) -> None:
        """Count a finished step or effect, and remember it as the last one."""
        with self._lock:
            self.steps_done += 1
            self.last = name


#: Resolved return types of functions whose annotations are all strings (the
#: `from __future__ import annotations` case), by code, module and annotations:
#: resolving them compiles each string, ~40 us per effect or durable step.
_hints: dict[tuple[Any, ...], Any] = {}


def returns(fn: Callable[..., Any]) -> Any:
    """The return annotation of a step's or effect's function (`Any` when none)."""
    ann = getattr(fn, "__annotations__", None)
    if type(ann) is dict and not ann and not hasattr(fn, "__wrapped__"):
        return Any  # nothing declared (a lambda): what get_type_hints says, without its ~5 us
    key: tuple[Any, ...] | None = None
    if (
        isinstance(ann, dict)
        and ann
        and all(isinstance(v, str) for v in ann.values())
        and hasattr(fn, "__code__")
        and not hasattr(fn, "__wrapped__")
    ):
        key = (fn.__code__, id(getattr(fn, "__globals__", None)), tuple(ann.items()))
        if key in _hints:
            return _hints[key]
    try:
        hint = typing.get_type_hints(fn).get("return", Any)
    except Exception:  # noqa: BLE001 - lambdas, builtins, unresolved names
        hint = Any
    if key is not None and len(_hints) < 4096:
        _hints[key] = hint
    return hint


def rehydrate(annotation: Any, value: Any) -> Any:
    """Give back the value as its function declared it (pydantic models,
    dataclasses); plain JSON data when the function declared nothing."""
    if annotation is Any or annotation is None:
        return value
    try:
        return _json.adapter(annotation).validate_python(value)
    except Exception:  # noqa: BLE001 - an annotation pydantic cannot build: keep plain data
        return value
