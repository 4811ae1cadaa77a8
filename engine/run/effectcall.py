"""How an effect's function is called: with what it asks for.

An effect's function may take the idempotency key (`fn(key)`), nothing
(`fn()`), and for an atomic effect the database session too
(`fn(key, session)` or `fn(session)`); a parameter named `fence` gets the
run's `FenceToken`, so a target can refuse a holder frozen past its lease.
Which of these a function takes is read off its signature once per code
object: `inspect.signature` costs ~10 us, a tenth of an effect's CPU.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import FunctionType
from typing import Any

from .lease import Fence, FenceToken


def call_effect(fn: Callable[..., Any], key: str, session: Any = None, *, fence: Fence, attempt: int) -> Any:
    """Call an effect's function with what it asks for: the idempotency key
    (`fn(key)`), and for an atomic effect the session too (`fn(key, session)`,
    or `fn(session)` when it takes one argument); `fn()` when it takes none.
    A function with a parameter named `fence` gets the fencing token there
    (made only then: a frozen dataclass costs ~1.5 us, at every effect)."""
    params, varargs, wants_fence = _shape(fn)
    kw = {"fence": FenceToken(fence.run_id, fence.epoch, attempt, key)} if wants_fence else {}
    args: tuple[Any, ...] = (key,) if session is None else (key, session)
    if varargs or params >= len(args):
        return fn(*args, **kw)
    if session is not None and params == 1:
        return fn(session, **kw)
    return fn(*args[:params], **kw)


_shapes: dict[tuple[Any, ...], tuple[int, bool, bool]] = {}


def _shape(fn: Callable[..., Any]) -> tuple[int, bool, bool]:
    """(required positional parameters other than `fence`, takes *args,
    takes `fence`). A plain function's answer depends only on its code and
    which parameters have defaults, so it is kept: inspect.signature costs
    ~10 us, a tenth of an effect's CPU (effect functions are often lambdas,
    a new object each call, with the same code)."""
    key: tuple[Any, ...] | None = None
    if type(fn) is FunctionType and not hasattr(fn, "__wrapped__") and not hasattr(fn, "__signature__"):
        key = (fn.__code__, len(fn.__defaults__ or ()), tuple(fn.__kwdefaults__ or ()))
        got = _shapes.get(key)
        if got is not None:
            return got
    try:
        sig = inspect.signature(fn).parameters
        params = [
            p
            for n, p in sig.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty and n != "fence"
        ]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.values())
        wants_fence = "fence" in sig and sig["fence"].kind is not inspect.Parameter.POSITIONAL_ONLY
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        return 0, True, False
    shape = (len(params), varargs, wants_fence)
    if key is not None and len(_shapes) < 4096:
        _shapes[key] = shape
    return shape
