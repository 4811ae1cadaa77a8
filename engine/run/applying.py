"""Where a decision is applied.

Every operator decision is carried out here, and each application commits
in one transaction with the decision's own `applied` (or `void`) state, so a
kill never leaves a decision half carried out:

- a reset, at once when it is recorded (`apply_reset`): the epoch's
  checkpoints are archived and the run starts over from its inputs;
- the rest at the run's next start, as the planner orders them
  (`DecisionApplier.apply`): setting aside untrusted checkpoints, a rewind,
  an approval or a degrade (each a marker in the run's chain), an answer to
  an effect in doubt (its ledger record).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _json
from ..states import RunStatus
from ..store.store import Store
from . import environment
from .journal import RunJournal
from .lease import Fence
from .ledger import EffectLedger
from .planner import AcceptReplay, AnswerEffect, Application, Approve, Degrade, Refresh, Rewind, SetAside, Void


class DecisionApplier:
    """Carries out a run's pending decisions during its start sequence."""

    def __init__(
        self,
        store: Store,
        journal: RunJournal,
        ledger: EffectLedger,
        fence: Fence,
        clock: Callable[[], float],
        probes: Mapping[str, Any],
    ) -> None:
        self._store = store
        self._fence = fence
        self._journal = journal
        self._ledger = ledger
        self._clock = clock
        self._probes = dict(probes)
        self.notes: list[str] = []
        """What applying said that the run's status should show."""

    def apply(self, app: Application) -> None:
        now = self._clock()
        with self._store.write() as conn:
            if isinstance(app, SetAside):
                self._journal.set_aside(conn, list(app.untrusted), list(app.trusted))
            elif isinstance(app, Rewind):
                self._rewind(conn, app)
            elif isinstance(app, Approve):
                self._journal.marker(
                    conn, "env", {"approved": list(app.probes), "approved_code": dict(app.codes)}, probes=self._probes
                )
            elif isinstance(app, AcceptReplay):
                self._accept_replay(conn, app)
            elif isinstance(app, Degrade):
                self._journal.marker(conn, "degrade", {"skip": list(app.skip)}, probes=self._probes)
            elif isinstance(app, AnswerEffect):
                self._ledger.answer(conn, app.key, app.action, app.result, app.decision, now, repair=app.repair)
                for stale in app.supersedes:
                    self._store.decisions.settle(conn, stale, "void", now)
                if app.supersedes:
                    shown = ", ".join(str(d) for d in app.supersedes)
                    self.notes.append(f"decision {app.decision} answered effect {app.key} anew; {shown} void")
                if app.reopen is not None:
                    self._rewind(conn, app.reopen, correction=app.key)
                self._fence.check(conn, now)
            elif isinstance(app, Void):
                self.notes.append(app.note)
            elif isinstance(app, Refresh):
                self._journal.marker(conn, "env", {"unread": [r["probe"] for r in app.rows]}, probes=self._probes)
                self.notes.append(
                    f"{environment.describe([dict(r) for r in app.rows])}; no finished work read it, so the run goes on with the new value"
                )
                # Shown at once: the run may die before it records its end.
                self._store.runs.set_notes(conn, self._journal.run_id, _json.dumps(self.notes))
            if app.decision is not None:
                self._store.decisions.settle(conn, app.decision, "void" if isinstance(app, Void) else "applied", now)

    def _rewind(self, conn: Any, app: Rewind, *, correction: str | None = None) -> None:
        body: dict[str, Any] = {"reopen": list(app.reopen)}
        if correction is not None:
            body["correction"] = correction
        self._journal.marker(conn, "rewind", body, probes=self._probes, phase=app.phase, index=app.index)
        run_id = self._journal.run_id
        self._store.steps.discard(conn, run_id, list(app.reopen))
        row = self._store.runs.get(conn, run_id)
        if row is not None:
            # Nothing of the re-opened phases is replayed any more: no older
            # code's records to check their replay against (run/replay.py).
            shape = _without_codes(_shape(row), set(app.reopen))
            self._store.runs.set_shape(conn, run_id, _json.dumps(shape), self._fence.owner, self._clock())

    def _accept_replay(self, conn: Any, app: AcceptReplay) -> None:
        """Drop what the old code saved from the divergence on, and keep the
        phase's new code in the run's shape, in the decision's transaction: a
        kill after it never checks the replay against the old code again."""
        run_id = self._journal.run_id
        self._store.steps.discard_keys(conn, run_id, app.phase, list(app.drop))
        row = self._store.runs.get(conn, run_id)
        if row is not None:
            shape = _shape(row)
            for p in shape:
                if p.get("name") == app.phase:
                    p["code"] = app.code
            self._store.runs.set_shape(conn, run_id, _json.dumps(shape), self._fence.owner, self._clock())
        self.notes.append(
            f"phase {app.phase} goes on under its new code (approved); "
            f"{len(app.drop)} saved step{'s' if len(app.drop) != 1 else ''} of the old code dropped"
        )

    def settle(self, decisions: Sequence[int]) -> None:
        """Mark applied the answers this start hands to the phases that asked (parking.py)."""
        now = self._clock()
        with self._store.write() as conn:
            for d in decisions:
                self._store.decisions.settle(conn, d, "applied", now)

    def void(self, decisions: Sequence[int]) -> None:
        """Settle decisions that nothing needed any more (the run goes on without them)."""
        if not decisions:
            return
        now = self._clock()
        with self._store.write() as conn:
            for d in decisions:
                self._store.decisions.settle(conn, d, "void", now)


def apply_reset(store: Store, conn: Any, run: Any, *, pending: Sequence[int], who: str, now: float) -> None:
    """Archive the run's current epoch and start it over from its original
    inputs, in the caller's transaction (the one recording the reset)."""
    shape = [p["name"] for p in _shape(run)]
    store.checkpoints.archive_epoch(conn, run.run_id, int(run.epoch))
    store.steps.discard(conn, run.run_id, None)
    for d in pending:
        store.decisions.settle(conn, d, "void", now)
    store.runs.reset(
        conn,
        run.run_id,
        {
            "epoch": int(run.epoch) + 1,
            "head_seq": -1,
            "head_hash": "",
            "status": RunStatus.RESET.value,
            "frontier_phase": shape[0] if shape else None,
            "frontier_index": 0,
            "steps_done": 0,
            "blocked_json": "[]",
            "error_json": None,
            # A pause or cancel asked of it (its decision void above) and what it waited for go with the rest.
            "held_json": None,
            "waiting_json": None,
            "wake_at": None,
            # The epoch it reported progress in is over (run/progress.py).
            "progress_json": None,
            # Its saved steps are gone: no older code's records to check a replay against.
            "shape_json": _json.dumps(_without_codes(_shape(run), None)),
            "updated_at": now,
            "attention": f"reset by {who}: waiting to start over from its original inputs",
        },
    )


def _shape(run: Any) -> list[dict[str, Any]]:
    shape: list[dict[str, Any]] = _json.loads(run.shape_json)
    return shape


def _without_codes(shape: list[dict[str, Any]], phases: set[str] | None) -> list[dict[str, Any]]:
    """The shape with no recorded code for these phases (None: every phase)."""
    for p in shape:
        if phases is None or p.get("name") in phases:
            p.pop("code", None)
    return shape
