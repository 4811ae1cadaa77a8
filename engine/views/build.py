"""A run's view (`models.RunView`) built from its rows in the store alone,
without the workflow's code, so the console and `phasegate status` work
anywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from .. import _json
from ..authoring import runbooks as _runbooks
from ..history import chain
from ..history.keys import SealKey
from ..history.prune import PruneCandidate
from ..run import holds
from ..run.frontier import frontier_of
from ..run.lease import HolderState, holder_name, holder_state
from ..shapes import BlockedReason, EffectRow, EnvCheck, IntegrityReason, ReconcileAnswer, RunError
from ..states import PhaseState, RunStatus
from ..timefmt import iso
from .codeview import code_view
from .liveness import Liveness
from .models import RESULT_SHOWN, DecisionView, EffectView, LeaseView, OutputView, PhaseView, RunView
from .progress import ProgressView
from .questions import questions_of
from .status import effect_state, effective_status, shown_state, status_text


def _reconcile_answer(text: str | None) -> ReconcileAnswer | None:
    """The stored answer of a reconcile hook; shown, never trusted to parse.
    An object is shown as stored, whatever its keys."""
    if not text:
        return None
    try:
        got = _json.loads(text)
    except ValueError:
        return {"answer": "unreadable", "why": "the stored answer is not JSON"}
    if not isinstance(got, dict):
        return {"answer": "unreadable", "why": "the stored answer is not an object"}
    return cast(ReconcileAnswer, got)


def _result(e: EffectRow) -> dict[str, str | None]:
    """An effect's recorded result for its view: the stored JSON text when
    small and readable, else its hash; nothing while it is not done."""
    text = getattr(e, "result_json", None)
    if e.state != "done" or text is None:
        return {}
    if len(text.encode()) <= RESULT_SHOWN:
        try:
            _json.loads(text)
            return {"result_text": text}
        except ValueError:
            pass  # damaged: its hash says which bytes are there, never parsed
    return {"result_hash": getattr(e, "result_hash", None) or _json.sha256(text)}


def _integrity(verified: chain.Verified, blocked: Sequence[BlockedReason]) -> list[IntegrityReason]:
    """Why the run's checkpoints are not trusted: the chain's failure now,
    then each other one an integrity block recorded (a `verify` that found
    it, or the start that stopped on it), once each."""
    found = [verified.failure.as_dict()] if verified.failure else []
    for b in blocked:
        if b["kind"] == "integrity" and (failure := b.get("failure")) and failure not in found:
            found.append(failure)
    return found


def build(
    run: Any,
    rows: list[Any],
    steps: list[Any],
    effects: Sequence[EffectRow],
    decisions: list[Any],
    candidates: list[PruneCandidate],
    now: float,
    verified: chain.Verified | None,
    key: SealKey | None,
) -> RunView:
    status = effective_status(run, now)
    held = holder_state(run, now)
    alive = held is HolderState.LIVE
    verified = verified if verified is not None else chain.verify_run(run, rows, key=key)
    state = chain.fold(verified.entries)
    # The row was checked as it left the store (`_rowcheck`): each column is
    # readable JSON, `blocked_json` and `env_json` lists, each block reason an
    # object with a text kind. Beyond that the types are what the engine
    # writes (shapes.py), and the reads below check what they rely on.
    blocked: list[BlockedReason] = _json.loads(run.blocked_json or "[]")
    env: list[EnvCheck] = _json.loads(run.env_json or "[]")
    error: RunError | None = _json.loads(run.error_json) if run.error_json else None
    integrity = _integrity(verified, blocked)
    shape = _json.loads(run.shape_json)

    fr = frontier_of(shape, state, steps, effects)
    frontier_phase = fr.phase if fr.index < fr.of else None
    started = {s.phase for s in steps} | {e.phase for e in effects}
    phases = []
    for p in shape:
        name = p["name"]
        d = state.done.get(name)
        if name in state.skipped:
            ps, missing = PhaseState.DEGRADED, list(p["needs"])
        elif d is not None:
            ps, missing = (PhaseState.DEGRADED if d.missing else PhaseState.DONE), d.missing
        elif status is RunStatus.FAILED and error and error.get("phase") == name:
            ps, missing = PhaseState.FAILED, []
        elif name == frontier_phase and name in started:
            ps, missing = PhaseState.PARTIAL, []
        else:
            ps, missing = PhaseState.OPEN, []
        phases.append(
            PhaseView(
                name=name,
                state=ps,
                needs=tuple(p["needs"]),
                floor=tuple(p.get("floor", p["needs"])),
                probes=tuple(p.get("probes", [])),
                missing=tuple(missing),
                steps_done=int(d.entry.env.get("steps_done", 0)) if d else None,
            )
        )

    effs = tuple(
        EffectView(
            name=e.name,
            key=e.key,
            phase=e.phase,
            state=effect_state(e, holder_alive=alive),
            attempt=int(e.attempt),
            idempotent=bool(e.idempotent),
            atomic=bool(e.atomic),
            retry_approved=bool(e.retry_ok),
            intent_at=iso(e.intent_at),
            done_at=iso(e.done_at),
            confirmed_by=e.confirmed_by,
            reconcile=_reconcile_answer(getattr(e, "reconcile_json", None)),
            redo_on_rewind=bool(getattr(e, "redo_on_rewind", False)),
            **_result(e),
        )
        for e in effects
    )
    decs = tuple(decision_view(d, now) for d in decisions)
    outputs = []
    for d in state.done.values():
        r = d.entry.row
        outputs.append(
            OutputView(
                phase=r.phase,
                seq=int(r.seq),
                bytes=int(r.output_bytes),
                hash=d.entry.env.get("output_hash"),
                state=r.output_state if (r.output_state != "present" or d.entry.output_ok) else "lost",
                verified=bool(d.entry.output_ok),
            )
        )
    outputs.sort(key=lambda o: o.seq)
    lease = None
    if run.lease_owner:
        lease = LeaseView(
            holder=holder_name(run),
            expires_at=iso(run.lease_expires_at),
            alive=alive,
            heartbeat_at=iso(run.heartbeat_at),
            state=held,
            liveness=Liveness.from_row(run),
        )
    attention = status_text(status, run.attention or "")
    waiting = None
    if status is RunStatus.WAITING and getattr(run, "waiting_json", None):
        w = _json.loads(run.waiting_json)  # an object: checked as the row left the store (_rowcheck)
        # ("tried": the attempts a parked retry carries for the next execution, not a view.)
        waiting = {k: v for k, v in w.items() if k != "tried"} if isinstance(w, dict) else None
    hold = holds.read(getattr(run, "held_json", None))
    hold_view: dict[str, Any] | None = None
    if hold is not None:
        hold_view = {"action": hold.action.value, "state": hold.state, "by": hold.by, "reason": hold.reason}
        hold_view["at"] = hold.at
        if hold.was is not None:
            hold_view["was"] = hold.was.get("status")
    return RunView(
        run_id=run.run_id,
        workflow=run.workflow,
        status=status,
        target=run.target,
        inputs=_json.loads(run.inputs_json),
        created_at=run.created_at,
        updated_at=run.updated_at,
        last_checkpoint_at=run.last_checkpoint_at,
        frontier=fr,
        phases=tuple(phases),
        blocked=tuple(blocked) if status is RunStatus.BLOCKED else (),
        env=tuple(env),
        effects=effs,
        decisions=decs,
        prune_candidates=tuple(candidates),
        outputs=tuple(outputs),
        integrity=tuple(integrity),
        lease=lease,
        error=error,
        notes=tuple(_json.loads(run.notes_json or "[]")),
        attention=attention,
        epoch=int(run.epoch),
        trace_id=_trace_part(getattr(run, "trace_id", None)),
        code=code_view(getattr(run, "code_json", None)),
        progress=ProgressView.from_row(run),
        pending_decisions=tuple(d for d in decs if d.state == "pending"),
        degraded=status is RunStatus.COMPLETED and any(p.state is PhaseState.DEGRADED for p in phases),
        runbooks=tuple(
            _runbooks.for_stop(
                shape,
                blocked if status is RunStatus.BLOCKED else [],
                error if status is RunStatus.FAILED else None,
                frontier_phase,
            )
        ),
        waiting=waiting,
        held=hold_view,
        questions=questions_of(steps, decisions),
    )


def decision_view(d: Any, now: float) -> DecisionView:
    """A decision row as the operator sees it (a lapsed proposal as "expired")."""
    return DecisionView(
        id=int(d.id),
        action=d.action,
        operator=d.operator,
        reason=d.reason,
        at=iso(d.at),
        state=shown_state(d, now),
        phase=d.phase,
        effect=d.effect_key,
        answers=d.answers,
        applied_at=iso(d.applied_at),
        account=getattr(d, "account", None),
        expires_at=iso(getattr(d, "expires_at", None)),
        seconded_by=getattr(d, "seconded_by", None),
        batch_id=getattr(d, "batch_id", None),
        policy_id=getattr(d, "policy_id", None),
    )


def _trace_part(stored: object) -> str | None:
    """The trace id of the run row's `trace_id` column, which holds
    `TRACE-SPAN` (the span the next attempt links to) or, from before, `TRACE`."""
    if not isinstance(stored, str) or not stored:
        return None
    return stored.split("-", 1)[0]
