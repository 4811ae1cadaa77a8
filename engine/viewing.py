"""A run's view from its own rows: the one way the engine, the gate and
triage build a `RunView` (`views/build.py` shapes it; this adds what only the
layers above the views know: prune candidates, the code behind a drift, the
claims on the run)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .authoring import sources as _sources
from .history import chain
from .history import prune as _prune
from .oversight import claims
from .store.store import OwnRows, Store
from .views.build import build
from .views.messages import messages_of
from .views.models import RunView


class Viewer:
    """Builds run views on a store, with the engine's retention setting.

    Args:
        store: The store the rows are read from.
        retention_days: Days a completed run is kept whole before it becomes a
            prune candidate (the view lists its candidates).
    """

    def __init__(self, store: Store, retention_days: float) -> None:
        self._store = store
        self._retention_days = retention_days

    def __call__(
        self,
        conn: Any,
        run: Any,
        now: float,
        *,
        with_candidates: bool = True,
        with_diffs: bool = True,
        own: OwnRows | None = None,
    ) -> RunView:
        """A run's view from its own rows, read on `conn` (or given: `own`,
        read for many runs at once by `Store.own_rows.of_runs`).

        Args:
            conn: A transaction of the store.
            run: The run's row.
            now: The time the view is of.
            with_candidates: Also list what may be pruned (a status needs it; a decision does not).
            with_diffs: Also read the stored code behind a drift.
            own: The run's own rows, read already; None: read them on `conn`.

        Returns:
            The run's view.
        """
        store = self._store
        if own is None:
            own = OwnRows(
                store.checkpoints.of_run(conn, run.run_id),
                store.steps.of_run(conn, run.run_id),
                store.effects.of_run(conn, run.run_id),
                store.decisions.of_run(conn, run.run_id),
            )
        rows, steps, effects, decisions, held = own
        verified = chain.verify_run(run, rows, key=store.seal_key)  # once, for the view and the prune candidates
        cands = (
            _prune.candidates(
                run, rows, steps, now=now, retention_days=self._retention_days, verified=verified, key=store.seal_key
            )
            if with_candidates
            else []
        )
        view = build(run, rows, steps, effects, decisions, cands, now, verified, store.seal_key)
        # The code behind a drift, from the stored sources: read only when a
        # code change is among the reasons the run is blocked.
        diffs = _sources.diffs(store, conn, view.blocked) if with_diffs else []
        if diffs:
            view = replace(view, code_diffs=tuple(diffs))
        sent = store.messages.of_run(conn, run.run_id)
        if sent:
            view = replace(view, messages=messages_of(sent, view.status, store.seal_key))
        if held is None:
            held = store.claims.of_run(conn, run.run_id)
        if held:
            view = replace(view, claim=claims.in_force(held, now), claims=tuple(claims.history(held, now)))
        return view
