"""The trace id stored with a run's attempt (the run row's `trace_id`), so
that `status --json` and the console's detail name the trace to look up."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store's module loads SQLAlchemy
    from ..store.store import Store


def record(store: Store, run_id: str, trace_id: str) -> None:
    """Store `trace_id` as the run's latest attempt's, in a transaction of its own.

    Called by a tracing observer only (observe/tracing.py), once an attempt
    holds the run's lease: an untraced process writes nothing.

    Args:
        store: The run's store.
        run_id: The run.
        trace_id: `TRACE-SPAN`: the trace's 32 hex digits, a dash, and the
            16 of the span the next attempt links to.
    """
    with store.write() as conn:
        store.runs.set_trace_id(conn, run_id, trace_id)
