"""Where a run's end is recorded: the last write of an execution.

The runner decides how an execution ended (completed, blocked, failed,
stopped, parked); `RunEnd.record` writes it, in one transaction: the
effects' completions first (they ride with the end), the run row's status
and lease released, fenced by the lease, and, when an operator's pause or
cancel was asked meanwhile, the hold instead of the status it would have had
(holds.py). A stop also rewrites the row's frontier from the verified chain.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..authoring.retry import Attempt
from ..authoring.workflow import Workflow
from ..errors import LeaseLost
from ..outcome import Outcome
from ..safetext import sanitised
from ..states import OutcomeStatus, RunStatus
from ..store.store import LEASE_CLEARED, RunChange, Store
from . import holds, mailbox
from .completions import Completions
from .frontier import frontier_columns, trusted_frontier
from .lease import Fence


class RunEnd:
    """Records one execution's end of one run."""

    def __init__(
        self, store: Store, wf: Workflow, fence: Fence, completions: Completions, clock: Callable[[], float]
    ) -> None:
        self._store = store
        self._wf = wf
        self._fence = fence
        self._completions = completions
        self._clock = clock

    def record(
        self,
        status: RunStatus,
        values: RunChange,
        base: RunChange,
        *,
        stopped: bool,
        retry_pending: bool,
    ) -> RunStatus:
        """Write the run's end.

        Args:
            status: how it ended.
            values: what this ending sets (its reason, its error, its wait).
            base: what every ending sets (the environment, the notes, the shape).
            stopped: rewrite the frontier from the verified chain (a block or a failure).
            retry_pending: a retry it parked for is still to be met (its wait stays on the row).

        Returns:
            The status recorded: `status`, or paused or cancelled.

        Raises:
            LeaseLost: the lease is no longer this process's.
        """
        # The run's end is observable: what its effects did is recorded first.
        self._completions.flush()
        now = self._clock()
        run_id = self._fence.run_id
        row: RunChange = {"status": status.value, "updated_at": now, **LEASE_CLEARED, **base}
        with self._store.write() as conn:
            # Locked: a hold recorded by a decision's transaction is seen here, or sees this end.
            run = self._store.runs.get(conn, run_id, lock=True)
            hold = holds.read(run.held_json) if run is not None else None
            if stopped and run is not None:
                fr = trusted_frontier(
                    run,
                    self._store.checkpoints.of_run(conn, run_id),
                    self._store.steps.of_run(conn, run_id),
                    self._store.effects.of_run(conn, run_id),
                    self._wf.describe(),
                    self._store.seal_key,
                )
                row.update(frontier_columns(fr))
            row.update(values)
            if "waiting_json" not in row and not retry_pending:
                row["waiting_json"] = None  # a retry it took up was met: nothing is left to wait for
            if status is RunStatus.WAITING and mailbox.queued_for(self._store, conn, run_id, row.get("waiting_json")):
                row["wake_at"] = now  # a message came as it parked: a worker takes it up now
            if hold is not None and hold.state == holds.ASKED:
                status = holds.at_end(self._store, conn, run_id, hold, status, row, now)
            if not self._store.runs.record_end(conn, run_id, row, self._fence.owner, now):
                raise LeaseLost(f"run {run_id!r}: lease lost before the run could record its end")
        return status

    def held(self, final: RunStatus, phases_run: list[str]) -> Outcome:
        """The outcome of an execution an operator's hold ended (paused or cancelled)."""
        run_id = self._fence.run_id
        with self._store.read() as conn:
            row = self._store.runs.get(conn, run_id)
        line = str(row.attention) if row is not None else final.value
        status = OutcomeStatus.PAUSED if final is RunStatus.PAUSED else OutcomeStatus.CANCELLED
        return Outcome(run_id, status, phases_run=phases_run, stopped=line)


def failure(phase: str, exc: BaseException, attempts: Sequence[Attempt]) -> dict[str, Any]:
    """A failed run's stored error: the phase, the exception, its message and
    last frames, and the phase's failed attempts. A message neither backend can
    store (a lone surrogate, a NUL) is kept with those characters escaped:
    lost, it would leave the run "running"."""
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    err: dict[str, Any] = {
        "phase": phase,
        "type": type(exc).__name__,
        "message": sanitised(str(exc)),
        "traceback": sanitised("".join(tb[-6:])),
    }
    tried = [a.as_dict() for a in attempts if a.phase == phase]
    if tried:
        err["attempts"] = tried
    return err


def gaps(wf: Workflow, state: Any, ran_without: Mapping[str, list[str]]) -> str:
    """What a completion lacks: phases skipped by a degrade, and phases (now
    or at an earlier start) run without some of their needs."""
    skipped = [p.name for p in wf.phases if state is not None and p.name in state.skipped]
    without = {n: list(d.missing) for n, d in (state.done.items() if state is not None else ())}
    without.update(ran_without)
    parts = [f"{n} skipped" for n in skipped]
    parts += [f"{p.name} ran without {', '.join(without[p.name])}" for p in wf.phases if without.get(p.name)]
    return "; ".join(parts)
