"""Pause points: where a test freezes this process (SIGSTOP to itself) to
play a VM migration, a long GC or a laptop lid at an exact moment.

`PHASEGATE_PAUSE_AT` names the points, comma-separated:
  after-intent:EFFECT   the effect's intent is committed, its function not yet called
  in-phase:PHASE        the phase's function is about to be called
  in-commit:PHASE       inside the phase's checkpoint transaction, before it commits;
                        where the checkpoint is one statement that commits itself
                        (PostgreSQL, no effect completion riding with it), just
                        before that statement is sent: nothing is held there
Each point pauses once per process. Unset (as in production), a point costs
one dictionary lookup. The test that set it continues the process (SIGCONT).
"""

from __future__ import annotations

import os
import signal

_done: set[str] = set()


def pause_point(kind: str, name: str) -> None:
    wanted = os.environ.get("PHASEGATE_PAUSE_AT")
    if not wanted:
        return
    point = f"{kind}:{name}"
    if point in _done or point not in wanted.split(","):
        return
    _done.add(point)
    os.kill(os.getpid(), signal.SIGSTOP)
