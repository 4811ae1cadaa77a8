"""Where a replay under changed code is checked against what the old code saved.

A phase that a run had started is run again from its start when the run
resumes, its durable steps handed back from the store by key. When the
phase's code changed in between (a deploy under a waiting run), a saved
result handed back by name could go to a call that means something else: a
step inserted, removed or reordered before the point where the run waited
would mix old results into new code. So for such a phase every call that
finds or makes a record (a durable step, a question, a timer, an effect) is
checked against the saved sequence, in the order the old code made them:

- the next saved record, asked for again: handed back, as always;
- past the last saved record: new work, as always (a `ctx.patched` branch
  taken by a run at its frontier is here, so its steps are never checked);
- anything else, before the saved sequence is used up: the run stops there,
  before any result is handed over, as `env_mismatch` with `what`
  `replay_diverged`, naming the call the old code made and the one the new
  code asks for.

`approve` goes on under the new code from the divergence, the saved steps
from there on dropped (a completed effect is still never repeated);
`rewind` and `reset` work as for any drift.

Calls from another thread or task than the phase's own (`ctx.map`, a
`gather`) come in the scheduler's order: they are checked by name only, and
only for being saved. A change of comments alone replays the same sequence,
so the run goes on.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._stop import Stop
from ..outcome import BlockReason
from ..states import BlockKind

#: The `what` of the block a divergence raises (run/patches.py's too).
REPLAY_DIVERGED = "replay_diverged"

#: Records a call may look for without having made one: the answer of a
#: patch, the lapse of a question's deadline. Never part of the sequence.
EXEMPT = ("@patch:", "@noanswer:", "@recvwait:")


@dataclass(frozen=True)
class Recoded:
    """An open phase whose code changed since its records were saved."""

    old_code: str | None
    """The fingerprint of the code that made them."""
    new_code: str
    """The fingerprint of the code that runs now."""
    old_fns: Mapping[str, str]
    """What each named function the old code reached did (`Phase.fns`), by qualified name."""
    new_fns: Mapping[str, str]
    """The same, of the code that runs now."""

    def changed(self, fn: Any) -> str | None:
        """The qualified name of a step's function when the fingerprint covers
        it and it changed (None otherwise: a lambda, a nested function, or a
        function of another module is handed its saved result by its place).

        Args:
            fn: The step's function.

        Returns:
            Its qualified name, or None.
        """
        while isinstance(fn, functools.partial):
            fn = fn.func
        name = getattr(fn, "__qualname__", None)
        if not isinstance(name, str) or name not in self.old_fns:
            return None
        return name if self.new_fns.get(name) != self.old_fns[name] else None


@dataclass(frozen=True)
class Call:
    """One record of the saved sequence, or one call of the new code."""

    kind: str
    """`step` (a durable step, a question or a timer) or `effect`."""
    name: str
    """The step's key, or the effect's name."""

    def said(self) -> str:
        """The call in words, for the block's detail."""
        if self.kind == "effect":
            return f"effect {self.name!r}"
        for prefix, what in (("@ask:", "question"), ("@sleep:", "timer")):
            if self.name.startswith(prefix):
                return f"{what} {self.name[len(prefix) :]!r}"
        return f"durable step {self.name!r}"


class ReplayCheck:
    """The saved sequence of one phase, and how far its replay has matched it."""

    def __init__(self, phase: str, saved: Iterable[tuple[float, int, Call]], recoded: Recoded) -> None:
        """
        Args:
            phase: The phase's name.
            saved: Each record as (when it was made, a tie-breaker, the call), in any order.
            recoded: The old code and the new.
        """
        self.phase = phase
        self._seq = [c for _, _, c in sorted(saved, key=lambda t: (t[0], t[1]))]
        self._at = {c: i for i, c in enumerate(self._seq)}
        self._used = [False] * len(self._seq)
        self._cursor = 0
        self._lock = threading.Lock()
        self._recoded = recoded

    def asked(self, call: Call, *, home: bool, fn: Any = None) -> None:
        """A call of the new code, before any record of it is used or made.

        Args:
            call: What the code asks for.
            home: Whether it comes from the phase's own thread or task.
            fn: A durable step's function: a saved result of a function that
                changed is not handed to the new code.

        Raises:
            Stop: the call is not the one the old code made at this point, or
                its function changed.
        """
        with self._lock:
            pos = self._at.get(call)
            if not home:
                if pos is not None:
                    self._used[pos] = True
                    self._refuse_changed(call, fn, pos)
                return
            while self._cursor < len(self._seq) and self._used[self._cursor]:
                self._cursor += 1
            if self._cursor == len(self._seq):
                return  # past everything saved: new work
            if pos == self._cursor:
                self._used[pos] = True
                self._cursor += 1
                self._refuse_changed(call, fn, pos)
                return
            expected = self._seq[self._cursor]
            later = [c.name for c in self._seq[self._cursor :] if c.kind == "step"]
        raise Stop(self._diverged(expected, call, later))

    def _refuse_changed(self, call: Call, fn: Any, pos: int) -> None:
        changed = self._recoded.changed(fn) if fn is not None else None
        if changed is not None:
            later = [c.name for c in self._seq[pos:] if c.kind == "step"]
            raise Stop(self._diverged(call, call, later, function=changed))

    def _diverged(self, expected: Call, asked: Call, later: list[str], *, function: str | None = None) -> BlockReason:
        old, new = self._recoded.old_code, self._recoded.new_code
        if function is None:
            what = f"at this point the old code made {expected.said()}, the new code asks for {asked.said()}"
        else:
            what = f"{asked.said()} is asked for again, but its function {function} changed since it was saved"
        return BlockReason(
            BlockKind.ENV_MISMATCH,
            f"the code of phase {self.phase} changed under the run: {what}. Nothing was handed over: approve "
            "goes on under the new code from here (the later saved steps dropped), or rewind the phase, or reset",
            {
                "what": REPLAY_DIVERGED,
                "phase": self.phase,
                "step": asked.name,
                "saved": {"kind": expected.kind, "name": expected.name},
                "asked": {"kind": asked.kind, "name": asked.name},
                "drop": later,
                **({"function": function} if function is not None else {}),
                "changes": [{"probe": f"code:{self.phase}", "saved": old, "current": new, "changed": True}],
            },
        )


def exempt(key: str) -> bool:
    """Whether a step key is a look-up that is never part of the sequence."""
    return key.startswith(EXEMPT)
