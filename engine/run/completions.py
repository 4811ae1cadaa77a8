"""Effect completions not yet committed: one fsync per effect, not two.

An effect's intent must be durable before its function runs (ledger.py); its
completion only before anything depends on it. So a completion is not
committed on its own: it is written in the run's next transaction, whatever
that is (the next effect's intent, a durable step, the phase's checkpoint),
and back-to-back effects cost one commit each. Every hot transaction of the
run (an intent, a durable step, a checkpoint) goes through
`Completions.hot_tx`, which writes the waiting completions in it; the run's
other writes that may depend on a result (an atomic effect, a reconcile, the
run's end, a retry's re-read of the ledger) commit them first (`flush`). So
no record written after an effect finished is durable without that effect's
completion: the records a resume trusts stay a prefix of what happened. (The
heartbeat and the workflow's source texts depend on no result.)

What this does to the in-doubt window. Before, an effect was in doubt after
a crash from its intent's commit until its completion's commit, which came
right after its function returned. Now the completion may wait, up to
`delay` seconds, for a transaction to ride with; when none comes, a timer
commits it alone. A process that dies in that wait leaves the effect as an
intent, in doubt at the next start (reconcile hook, `confirm_effect`,
`retry_effect`; an idempotent effect is called again with its key), exactly
as if it had died during the call. So the window is the call plus at most
`delay`, and the promise is unchanged: an effect is in doubt only when the
process died after its intent was committed and before its completion was
(never repeated silently, never recorded twice).

Why the phase may read the result before it is durable: a phase interrupted
midway is redone from its start, whatever it did with the result outside
phasegate's records (a print, a call that is not an effect) is redone with
it, exactly as after a crash between the completion's commit and the
checkpoint's. What a resume trusts are phasegate's own records, and each of
them carries the waiting completions in its own transaction. The run's end
(completed, failed, blocked) and a retry's re-read of the ledger commit them
first (`flush`).

`delay=0` commits each completion before `ctx.effect` returns (two commits
an effect, the in-doubt window the call alone).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # annotations only: the store's module loads SQLAlchemy
    from ..store.store import HotTx, Store
    from .lease import Fence
    from .progress import Progress

log = logging.getLogger("phasegate.effects")

#: How long a completion may wait for a transaction to ride with (seconds).
DEFAULT_DELAY = 0.02

_DONE = ("key", "done_at", "result_json", "result_hash", "seal")


class Completions:
    """The run's effect completions waiting to be committed, and the timer
    that commits them when nothing else does within `delay`."""

    def __init__(self, store: Store, fence: Fence, delay: float = DEFAULT_DELAY) -> None:
        self._store = store
        self._fence = fence
        self.delay = delay
        self._waiting: dict[str, tuple[dict[str, Any], float]] = {}
        """key -> (the completion's columns, when it began to wait: monotonic)."""
        self._cond = threading.Condition()
        self._armed = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.progress: Progress | None = None
        """The run's progress reports (progress.py): a due one rides with every hot transaction."""

    def __bool__(self) -> bool:
        return bool(self._waiting)

    # -- writing ----------------------------------------------------------------

    def add(self, done: dict[str, Any]) -> None:
        """A completion to commit with the run's next transaction. With no
        delay it is committed now, before the effect's result is handed on."""
        values = {k: done[k] for k in _DONE}
        with self._cond:
            self._waiting[values["key"]] = (values, time.monotonic())
            if self.delay > 0 and not self._armed:
                self._armed = True
                self._start()
                self._cond.notify()
        if self.delay <= 0:
            self.flush()

    def hot_tx(self) -> Carried:
        """The store's hot transaction with the waiting completions written
        first: they commit with whatever the caller writes, or not at all.
        The caller's fence check covers them (every caller makes one)."""
        return Carried(self)

    def flush(self) -> None:
        """Commit the waiting completions now, alone, fenced by the lease."""
        if not self._waiting:
            return
        with self.hot_tx() as tx:
            self._fence.check_hot(tx)

    def _committed(self, batch: list[tuple[dict[str, Any], float]]) -> None:
        with self._cond:
            for entry in batch:
                key = entry[0]["key"]
                if self._waiting.get(key) is entry:
                    del self._waiting[key]

    # -- the timer ----------------------------------------------------------------

    def _start(self) -> None:
        """(under the lock) The timer thread, started with the first completion."""
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(
                target=self._loop, name=f"phasegate-completions-{self._fence.run_id}", daemon=True
            )
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._armed:
                    self._cond.wait()
                if self._closed:
                    return
                if not self._waiting:
                    self._armed = False
                    continue
                due = min(at for _, at in self._waiting.values()) + self.delay
                left = due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - the run's own next write fails (or commits them) visibly
                log.warning("run %s: could not commit an effect's completion yet: %s", self._fence.run_id, exc)
                with self._cond:
                    self._armed = False

    def close(self) -> None:
        """Stop the timer; the caller flushed what it could."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout=5)


class Carried:
    """`Completions.hot_tx`: the store's transaction, carrying the
    completions that were waiting when it began (a class: entered at every
    boundary and effect, where a generator's context manager costs more)."""

    __slots__ = ("_owner", "_batch", "_scope")

    def __init__(self, owner: Completions) -> None:
        self._owner = owner

    def __enter__(self) -> HotTx:
        owner = self._owner
        with owner._cond:
            self._batch = list(owner._waiting.values())
        self._scope = scope = owner._store.hot_tx([("effect_done", values) for values, _ in self._batch])
        tx = scope.__enter__()
        if owner.progress is not None:
            try:
                owner.progress.ride(tx)
            except BaseException as exc:
                scope.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        self._scope.__exit__(kind, exc, tb)
        if exc is None and self._batch:
            self._owner._committed(self._batch)
        return False
