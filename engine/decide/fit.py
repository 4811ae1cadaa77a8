"""Which decisions fit a stopped run, and what each would do.

Pure functions over a `RunView`: `fit` is the one rule that `decide`,
`decide --dry-run`, `preview` and the console's offers all ask, so none of
them can accept what another refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .. import _json
from ..errors import AlreadyDecided, DecisionError, HolderStalled, PhasegateError, UsageError
from ..history.seals import UNNAMED, split_key
from ..run.lease import FORCE_RISK
from ..states import ANSWERS, Action, BlockKind, EffectState, RunStatus
from ..views.models import RunView
from . import effectref


@dataclass(frozen=True)
class Preview:
    """What a decision will do, stated before the operator confirms it."""

    action: Action
    summary: str
    rerun: list[str] = field(default_factory=list)
    """Phases that will run (again) at the next run."""
    effects_again: list[str] = field(default_factory=list)
    """Effect keys that could be called again."""
    discarded: list[str] = field(default_factory=list)
    """Outputs or checkpoints set aside (discarded, superseded or archived)."""
    kept: list[str] = field(default_factory=list)
    """What is explicitly kept (completed effects are never repeated)."""
    accepts: list[str] = field(default_factory=list)
    """For an approval: each changed value it accepts, `probe: saved -> current`."""
    env_hash: str | None = None
    """For an approval: the hash of those values; `decide --expect-env` takes it back."""


@dataclass(frozen=True)
class Fit:
    """How a decision fits a run: the block it answers, the effect it names,
    and what it records beside the reason (the result of a confirmation, the
    values an approval accepts)."""

    action: Action
    answers: BlockKind | None = None
    effect_key: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """A decision as recorded (what `Engine.decide` returns)."""

    id: int
    run_id: str
    action: Action
    operator: str
    reason: str
    phase: str | None
    effect: str | None
    state: str
    """"pending" until the run's next start carries it out; "applied" for a reset."""
    batch_id: str | None = None
    """Shared by the decisions one command recorded for a group of runs (`decide --cause`)."""


class _NoResult:
    """The absence of `--result`, told apart from an explicit JSON `null`."""

    _instance: _NoResult | None = None

    def __new__(cls) -> _NoResult:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_RESULT"

    def __bool__(self) -> bool:
        return False


NO_RESULT: Any = _NoResult()
"""`decide(..., result=NO_RESULT)`: no result given (a confirmation needs one)."""

CONFIRM_NEEDS_RESULT = (
    "confirm_effect needs --result JSON: the effect's result as the outside system reports it"
    " (--result null when it returned nothing)"
)

#: Statuses in which a person's confirmation may be corrected: the run is
#: not moving, and a phase that read the confirmed result may have gone wrong.
_CORRECTABLE = (RunStatus.BLOCKED, RunStatus.FAILED, RunStatus.COMPLETED, RunStatus.INTERRUPTED)


def correctable_effects(view: RunView) -> list[str]:
    """Keys of effects a person confirmed whose result may be corrected now."""
    if view.status not in _CORRECTABLE:
        return []
    return [e.key for e in view.effects if e.state is EffectState.DONE and e.confirmed_by is not None]


def parse_action(action: Action | str) -> Action:
    try:
        return Action(action)
    except ValueError:
        raise UsageError(f"unknown action {action!r}; one of: {', '.join(a.value for a in Action)}") from None


def _reasons(view: RunView) -> list[Mapping[str, Any]]:
    """Why the run waits for a decision: its block reasons, or for an
    interrupted run the effects its dead process left in doubt (the operator
    can answer them before the next run has to ask)."""
    if view.status in (RunStatus.INTERRUPTED, RunStatus.STALLED):
        return [
            {"kind": BlockKind.IN_DOUBT_EFFECT.value, "effect": e.key, "detail": f"effect {e.name} in doubt"}
            for e in view.effects
            if e.state is EffectState.IN_DOUBT
        ]
    return list(view.blocked) if view.status is RunStatus.BLOCKED else []


def env_changes(view: RunView) -> list[Mapping[str, Any]]:
    """The changed values an approval of this run would accept."""
    return [c for b in _reasons(view) if b["kind"] == BlockKind.ENV_MISMATCH.value for c in b.get("changes", [])]


def env_hash(view: RunView) -> str | None:
    """The world an approval accepts, as one short hash of every change the
    run is blocked on (probe, saved, current). The operator's preview shows
    it; `decide --expect-env` (and the console) hand it back, so an approval
    is refused if the run was blocked again on other values in between."""
    rows = sorted(
        ({"probe": c["probe"], "saved": c.get("saved"), "current": c.get("current")} for c in env_changes(view)),
        key=lambda r: str(r["probe"]),
    )
    return _json.sha256(_json.dumps(rows))[:16] if rows else None


def fit(
    view: RunView,
    action: Action | str,
    *,
    phase: str | None = None,
    effect: str | None = None,
    result: Any = NO_RESULT,
    force: bool = False,
    expect_env: str | None = None,
) -> Fit:
    """The one rule for "does this decision fit this run now". `decide`
    records only what fits, `--dry-run` and `preview` refuse what it would
    refuse, and the console offers only what fits. Raises the error the
    operator sees: UsageError, DecisionError or AlreadyDecided."""
    act = parse_action(action)
    run_id = view.run_id
    if expect_env is not None and act is not Action.APPROVE:
        raise UsageError("--expect-env is for approve: it names the environment the approval accepts")
    if view.lease is not None and view.lease.alive:
        raise DecisionError(f"run {run_id!r} is running (held by {view.lease.holder}); decide once it stops")
    # An option the action does not take is refused, not silently recorded.
    if phase is not None and act is not Action.REWIND:
        raise UsageError(f"--phase is for rewind, not {act.value}")
    if effect is not None and act not in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT):
        raise UsageError(f"--effect is for confirm_effect and retry_effect, not {act.value}")
    if result is not NO_RESULT and act is not Action.CONFIRM_EFFECT:
        raise UsageError(f"--result is for confirm_effect, not {act.value}")
    if view.status is RunStatus.STALLED and act in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT) and not force:
        # Its process may wake inside the very call this decision answers.
        holder = view.lease.holder if view.lease else "?"
        raise HolderStalled(run_id, holder, f"decide {act.value}", FORCE_RISK)
    reasons = _reasons(view)
    kinds = list(dict.fromkeys(BlockKind(b["kind"]) for b in reasons))
    shape = [p.name for p in view.phases]
    pending = view.pending_decisions

    if act is Action.RESET:
        if view.status is RunStatus.RESET:
            raise AlreadyDecided(f"run {run_id!r} has already been reset")
        return Fit(act)
    if act is Action.REWIND:
        if not phase:
            raise UsageError("rewind needs --phase NAME: the phase to re-run from")
        if phase not in shape:
            raise UsageError(f"run {run_id!r} has no phase {phase!r} (phases: {', '.join(shape)})")
        if view.status is RunStatus.RESET:
            raise DecisionError(f"run {run_id!r} was reset; there is nothing to rewind")
        heavy = (BlockKind.INTEGRITY, BlockKind.ENV_MISMATCH, BlockKind.BELOW_FLOOR)
        answered: BlockKind | None = next((k for k in heavy if k in kinds), None)
        if any(d.action == act.value for d in pending):
            raise AlreadyDecided(f"run {run_id!r} already has a rewind waiting; it has already been decided")
        return Fit(act, answered)

    if act in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT) and effect is not None:
        corr = _match(view.run_id, correctable_effects(view), effect)
        if corr is not None:
            return _correction(view, act, corr, result)

    damaged = _damaged(reasons)
    if damaged and act in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT):
        return _repair(view, act, damaged, effect, result)
    if damaged and act is Action.DEGRADE and all(b.get("what") == "effect" for b in reasons):
        raise DecisionError(
            f"degrade does not fit run {run_id!r}: its effect records are damaged; answer each"
            " with confirm_effect --result JSON (it happened) or retry_effect (it did not)"
        )

    fits = [k for k in kinds if act in ANSWERS[k]]
    if not fits:
        why = ", ".join(sorted(k.value for k in kinds)) or f"it is {view.status.value}, not blocked"
        raise DecisionError(f"{act.value} does not fit run {run_id!r}: {why}")
    answers = fits[0]
    detail: dict[str, Any] = {}
    key: str | None = None
    if act in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT):
        doubts = [str(b["effect"]) for b in reasons if b["kind"] == BlockKind.IN_DOUBT_EFFECT.value]
        if effect is None:
            if len(doubts) != 1:
                raise UsageError(f"name the effect (--effect KEY); in doubt: {', '.join(doubts)}")
            effect = doubts[0]
        key = effectref.resolve(run_id, doubts, effect)
        if act is Action.CONFIRM_EFFECT and result is not NO_RESULT:
            detail["result"] = _json.loads(_json.dumps(result))
    if act is Action.APPROVE:
        changes = next(b for b in reasons if b["kind"] == BlockKind.ENV_MISMATCH.value).get("changes", [])
        detail["accepted"] = [{"probe": c["probe"], "current": c.get("current")} for c in changes]
        now_hash = env_hash(view)
        if expect_env is not None and expect_env != now_hash:
            raise DecisionError(
                f"the environment of run {run_id!r} moved since the preview (expected {expect_env}, now {now_hash}):"
                " preview again (--dry-run) and approve what it shows"
            )
        detail["env_hash"] = now_hash
    for d in pending:
        if d.answers == answers.value and (key is None or d.effect == key):
            raise AlreadyDecided(
                f"run {run_id!r} has already been decided: {d.action} by {d.operator} (decision {d.id})"
            )
    return Fit(act, answers, key, detail)


def _damaged(reasons: list[Mapping[str, Any]]) -> list[str]:
    """Keys of effects whose records are damaged (an integrity block naming them)."""
    return [
        str(b["effect"]) for b in reasons if b.get("kind") == BlockKind.INTEGRITY.value and b.get("what") == "effect"
    ]


def _repair(view: RunView, act: Action, damaged: list[str], effect: str | None, result: Any) -> Fit:
    """An answer to a damaged effect record: the operator checked the outside
    system and says whether the action happened; the record is rewritten."""
    named = [k for k in damaged if k != UNNAMED]
    if effect is None:
        if len(named) != 1 or UNNAMED in damaged:
            shown = ", ".join(named + (["and records nothing names"] if UNNAMED in damaged else []))
            raise UsageError(f"name the effect (--effect KEY); damaged: {shown}")
        effect = named[0]
    key = _match(view.run_id, named, effect)
    if key is None and UNNAMED in damaged:
        # A deleted record nothing names: the operator names it from the
        # outside system's records. It must be a key of this run, and not
        # one of its records that are still there.
        key = effect if effect.startswith(view.run_id + "/") else f"{view.run_id}/{effect}"
        where = split_key(view.run_id, key)
        if where is None or where[0] not in {p.name for p in view.phases}:
            raise UsageError(f"{effect!r} is not an effect key of run {view.run_id!r} (RUN/PHASE/NAME)")
        if any(e.key == key for e in view.effects):
            raise DecisionError(f"effect {key} has its record; it is not among the damaged records")
    if key is None:
        raise DecisionError(f"effect {effect!r} is not among the damaged records of run {view.run_id!r}")
    _refuse_second_answer(view, key)
    detail: dict[str, Any] = {"repair": True}
    if act is Action.CONFIRM_EFFECT and result is not NO_RESULT:
        detail["result"] = _json.loads(_json.dumps(result))
    return Fit(act, BlockKind.INTEGRITY, key, detail)


def _refuse_second_answer(view: RunView, key: str) -> None:
    """One pending answer per effect: a second one is refused as decided."""
    for d in view.pending_decisions:
        if d.effect == key:
            raise AlreadyDecided(
                f"run {view.run_id!r} has already been decided: {d.action} by {d.operator} (decision {d.id})"
            )


def _match(run_id: str, keys: list[str], effect: str) -> str | None:
    """The one key among `keys` that `effect` names (effectref's rule: the
    key, or the only one whose `phase/name` or name it is); None when none
    does. Naming several is refused, as everywhere."""
    if not keys:
        return None
    try:
        return effectref.resolve(run_id, keys, effect)
    except DecisionError:
        return None


def _correction(view: RunView, act: Action, key: str, result: Any) -> Fit:
    """A second answer for an effect a person already confirmed: a confirmation
    replaces the result; a retry says it did not happen after all (it is
    called again with its key). The phases that read the old result run again."""
    _refuse_second_answer(view, key)
    detail: dict[str, Any] = {"correction": True}
    if act is Action.CONFIRM_EFFECT and result is not NO_RESULT:
        detail["result"] = _json.loads(_json.dumps(result))
    return Fit(act, None, key, detail)


def fits(view: RunView, action: Action, **kw: Any) -> bool:
    try:
        fit(view, action, **kw)
    except PhasegateError:
        return False
    return True


def allowed_actions(view: RunView) -> list[Action]:
    """The decisions that fit the run now, in the console's order: each asked
    of `fit`, for every effect in doubt and (for a rewind) the phases done."""
    if view.status is RunStatus.RUNNING:
        return []
    out: list[Action] = []
    doubts = [str(b["effect"]) for b in _reasons(view) if b["kind"] == BlockKind.IN_DOUBT_EFFECT.value]
    doubts += _damaged(_reasons(view))
    done = [p.name for p in view.phases if p.done]
    for act in (
        Action.APPROVE,
        Action.DEGRADE,
        Action.CONFIRM_EFFECT,
        Action.RETRY_EFFECT,
        Action.REWIND,
        Action.RESET,
    ):
        if UNNAMED in doubts and act in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT):
            ok = True  # a record nothing names: the operator names its key
        elif act is Action.CONFIRM_EFFECT:
            ok = any(fits(view, act, effect=k) for k in doubts + correctable_effects(view))
        elif act is Action.RETRY_EFFECT:
            ok = any(fits(view, act, effect=k) for k in doubts + correctable_effects(view))
        elif act is Action.REWIND:
            ok = bool(done) and fits(view, act, phase=done[0])
        else:
            ok = fits(view, act)
        if ok:
            out.append(act)
    return out


def require_result(action: Action, result: Any) -> None:
    """A confirmation without the result would hand the next phase nothing
    where it expects a receipt: a run that cannot complete."""
    if action is Action.CONFIRM_EFFECT and result is NO_RESULT:
        raise UsageError(CONFIRM_NEEDS_RESULT)


def check_reason(reason: Any) -> str:
    if not reason or not str(reason).strip():
        raise UsageError("a decision needs a reason")
    return str(reason)


def preview(
    view: RunView,
    action: Action | str,
    *,
    phase: str | None = None,
    effect: str | None = None,
    result: Any = NO_RESULT,
    force: bool = False,
    expect_env: str | None = None,
) -> Preview:
    """What the decision would do. Refuses, with `decide`'s own error, what
    `decide` would refuse."""
    chosen = fit(view, action, phase=phase, effect=effect, result=result, force=force, expect_env=expect_env)
    pv = _preview(view, chosen, phase, effect)
    # What this decision leaves unanswered still stops the next run: say so.
    if chosen.action in (Action.APPROVE, Action.DEGRADE, Action.REWIND):
        answered = {d.effect for d in view.pending_decisions if d.effect}
        doubts = [
            str(b["effect"])
            for b in _reasons(view)
            if b["kind"] == BlockKind.IN_DOUBT_EFFECT.value and str(b["effect"]) not in answered
        ]
        if doubts:
            pv = replace(
                pv,
                summary=f"{pv.summary} The run still stops at its next start: effect {', '.join(doubts)} is in "
                "doubt until confirm_effect or retry_effect answers it.",
            )
    return pv


def _preview(view: RunView, chosen: Fit, phase: str | None, effect: str | None) -> Preview:
    act = chosen.action
    if chosen.detail.get("correction"):
        return _preview_correction(view, act, str(chosen.effect_key))
    if chosen.detail.get("repair"):
        key = str(chosen.effect_key)
        if act is Action.CONFIRM_EFFECT:
            return Preview(act, f"Rewrite the damaged record of {key} as done (it happened), with the given result.")
        return Preview(
            act, f"Rewrite the damaged record of {key} as not done: it will be called again with its key.", [], [key]
        )
    if chosen.effect_key is not None:
        effect = chosen.effect_key
    names = [p.name for p in view.phases]
    open_phases = [p.name for p in view.phases if not p.done]
    done_effects = [e.key for e in view.effects if e.state is EffectState.DONE]
    kept = (
        [f"{len(done_effects)} completed effect(s) keep their results and are not called again"] if done_effects else []
    )
    if act is Action.APPROVE:
        changes = env_changes(view)
        changed = [str(c["probe"]) for c in changes]
        return Preview(
            act,
            f"Accept the changed environment ({', '.join(changed) or 'as shown'}) and continue from {view.frontier.phase}.",
            rerun=open_phases,
            kept=kept,
            accepts=[f"{c['probe']}: {_shown(c.get('saved'))} -> {_shown(c.get('current'))}" for c in changes],
            env_hash=env_hash(view),
        )
    if act is Action.DEGRADE:
        integ = [b for b in view.blocked if b["kind"] == "integrity"]
        if integ:
            f: Mapping[str, Any] = integ[0].get("failure") or {}
            seq = f.get("seq")
            return Preview(
                act,
                f"Trust only the checkpoints before {seq}; set aside checkpoint {seq} and later, and run on from there.",
                rerun=[n for n in names if n not in _trusted_done(view, seq)],
                discarded=[f"checkpoint {seq} and every later one (kept as evidence, not trusted)"],
                kept=kept,
            )
        below = [b for b in view.blocked if b["kind"] == "below_floor"]
        skip = sorted({str(b.get("phase")) for b in below})
        return Preview(
            act,
            f"Continue without {', '.join(sorted({str(b.get('lost')) for b in below}))}; "
            f"skip {', '.join(skip)} (below its floor) and phases that cannot run without it.",
            rerun=[n for n in open_phases if n not in skip],
            discarded=[f"phase {s} is skipped (degraded)" for s in skip],
            kept=kept,
        )
    if act is Action.REWIND:
        if phase is None or phase not in names:
            return Preview(act, "Choose the phase to re-run from.")
        again = names[names.index(phase) :]
        doubt = [e.key for e in view.effects if e.phase in again and e.state is not EffectState.DONE]
        doubt += _redone(view, again)
        return Preview(
            act,
            f"Re-run from {phase}: {', '.join(again)} run again with the current environment.",
            rerun=again,
            effects_again=doubt,
            discarded=[f"output of {n} (superseded, prunable)" for n in again if n in {o.phase for o in view.outputs}],
            kept=kept,
        )
    if act is Action.RESET:
        return Preview(
            act,
            "Archive every checkpoint and start over from the original inputs.",
            rerun=names,
            effects_again=[e.key for e in view.effects if e.state is not EffectState.DONE] + _redone(view, names),
            discarded=[f"output of {o.phase} (archived)" for o in view.outputs] or ["nothing saved yet"],
            kept=kept,
        )
    doubts = [
        e for e in view.effects if e.state is EffectState.IN_DOUBT and (effect is None or effect in (e.key, e.name))
    ]
    keys = [e.key for e in doubts]
    if act is Action.CONFIRM_EFFECT:
        return Preview(
            act,
            f"Record {', '.join(keys) or 'the effect'} as done (it happened); it will not be called again.",
            rerun=open_phases,
            kept=kept + [f"{k} recorded done" for k in keys],
        )
    return Preview(
        act,
        f"Call {', '.join(keys) or 'the effect'} again with the same idempotency key.",
        rerun=open_phases,
        effects_again=keys,
        kept=kept,
    )


def _preview_correction(view: RunView, act: Action, key: str) -> Preview:
    eff = next(e for e in view.effects if e.key == key)
    names = [p.name for p in view.phases]
    again = names[names.index(eff.phase) :] if eff.phase in names else []
    done = [e.key for e in view.effects if e.state is EffectState.DONE and e.phase in again and e.key != key]
    if act is Action.RETRY_EFFECT:
        said = f"Record {key} as not done after all (decision {eff.confirmed_by} confirmed it): it is called again"
        said += f" with its key, and the run re-runs from {eff.phase}."
    else:
        said = f"Correct the result of {key} (confirmed by decision {eff.confirmed_by}); "
        said += f"re-run from {eff.phase} so the phases that read it see the new one."
    return Preview(
        act,
        said,
        rerun=again,
        effects_again=[key] if act is Action.RETRY_EFFECT else [],
        discarded=[f"output of {n} (superseded, prunable)" for n in again if n in {o.phase for o in view.outputs}],
        kept=[f"{len(done)} completed effect(s) of those phases keep their results and are not called again"]
        if done
        else [],
    )


def _redone(view: RunView, phases: list[str]) -> list[str]:
    """Completed effects of these phases declared `redo_on_rewind`: they act
    again, under a new key, when the phases are re-opened."""
    return [
        f"{e.key} (redo_on_rewind: acts again under a new key)"
        for e in view.effects
        if e.phase in phases and e.redo_on_rewind and e.state is EffectState.DONE
    ]


def _shown(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else _json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _trusted_done(view: RunView, seq: int | None) -> set[str]:
    if seq is None:
        return set()
    return {o.phase for o in view.outputs if o.seq < seq}
