"""Pause points: where a test freezes this process (SIGSTOP to itself) to
play a VM migration, a long GC or a laptop lid at an exact moment.

`PHASEGATE_PAUSE_AT` names the points, comma-separated:
  after-intent:EFFECT   the effect's intent is committed, its function not yet called
  in-phase:PHASE        the phase's function is about to be called
  in-commit:PHASE       inside the phase's checkpoint transaction, before it commits
Each point pauses once per process. The variable is read once, when this
module is imported (a test sets it in the child's environment), so unset, as
in production, a point costs one truth test, not an `os.environ` lookup
(~1 us: the key is encoded and the value decoded each time, at every phase
and effect). The test that set it continues the process (SIGCONT).
"""

from __future__ import annotations

import os
import signal

_done: set[str] = set()
_wanted: frozenset[str] = frozenset(p for p in os.environ.get("PHASEGATE_PAUSE_AT", "").split(",") if p)


def pause_point(kind: str, name: str) -> None:
    if not _wanted:
        return
    point = f"{kind}:{name}"
    if point in _done or point not in _wanted:
        return
    _done.add(point)
    os.kill(os.getpid(), signal.SIGSTOP)
