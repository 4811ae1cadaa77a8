"""Pause points: where a test freezes this process (SIGSTOP to itself) to
play a VM migration, a long GC or a laptop lid at an exact moment.

`PHASEGATE_PAUSE_AT` names the points, comma-separated:
  after-intent:EFFECT   the effect's intent is committed, its function not yet called
  in-phase:PHASE        the phase's function is about to be called
  in-commit:PHASE       inside the phase's checkpoint transaction, before it commits;
                        where the checkpoint is one statement that commits itself
                        (PostgreSQL, no effect completion riding with it), just
                        before that statement is sent: nothing is held there
  in-verify:RUN         `verify` is checking the run, its read of the store under way
Each point pauses once per process. The variable is read at the first point
a process reaches (again in a forked child, which a test gives its own
environment after the fork), so unset, as in production, a point costs one
truth test, not an `os.environ` lookup (~1 us: the key is encoded and the
value decoded each time, at every phase and effect). The test that set it
continues the process (SIGCONT).

`watch` hands every point reached to a function of this process instead
(`phasegate.testing` counts them, and kills its child at one).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

_done: set[str] = set()
_wanted: frozenset[str] | None = None
"""The points asked for; None until read."""


_watcher: Callable[[str, str], None] | None = None
"""Called with (kind, name) at every point reached (`watch`); None: no one watches."""


def watch(fn: Callable[[str, str], None] | None) -> None:
    """Have `fn(kind, name)` called at every point this process reaches, before
    any pause (None: stop).

    Args:
        fn: The watcher, or None.
    """
    global _watcher
    _watcher = fn


def _forget() -> None:
    global _wanted
    _wanted = None


os.register_at_fork(after_in_child=_forget)


def _read() -> frozenset[str]:
    global _wanted
    _wanted = frozenset(p for p in os.environ.get("PHASEGATE_PAUSE_AT", "").split(",") if p)
    return _wanted


def pause_point(kind: str, name: str) -> None:
    if _watcher is not None:
        _watcher(kind, name)
    wanted = _wanted if _wanted is not None else _read()
    if not wanted:
        return
    point = f"{kind}:{name}"
    if point in _done or point not in wanted:
        return
    _done.add(point)
    os.kill(os.getpid(), signal.SIGSTOP)
