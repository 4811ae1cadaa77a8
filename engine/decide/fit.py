"""Which decisions fit a stopped run.

Pure functions over a `RunView`: `fit` is the one rule that `decide`,
`decide --dry-run`, `preview` (`preview.py`) and the console's offers all
ask, so none of them can accept what another refuses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..errors import AlreadyDecided, DecisionError, HolderStalled, PhasegateError, UsageError
from ..history.seals import UNNAMED, split_key
from ..run.lease import FORCE_RISK
from ..states import ANSWERS, HOLDS, Action, BlockKind, EffectState, RunStatus
from ..views.models import RunView
from . import answers as _answers
from . import effectref

NO_VALUE: Any = _answers.NO_VALUE
"""`decide(..., value=NO_VALUE)`: no `--value` given (an answer needs one; JSON null is a value)."""


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
    """The decision's number in the store."""
    run_id: str
    """The run it decides."""
    action: Action
    """What it does."""
    operator: str
    """Who decided, as they named themselves."""
    reason: str
    """Why, in their words."""
    phase: str | None
    """For a rewind: the phase to re-run from."""
    effect: str | None
    """For confirm_effect and retry_effect: the effect's full key."""
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
    """Keys of effects a person confirmed whose result may be corrected now.

    Args:
        view: The run as it is now.

    Returns:
        The full keys of its effects confirmed by hand (`confirm_effect`), when
        the run is in a state that lets a confirmation be corrected (blocked,
        failed, interrupted or completed); else none.
    """
    if view.status not in _CORRECTABLE:
        return []
    return [e.key for e in view.effects if e.state is EffectState.DONE and e.confirmed_by is not None]


def parse_action(action: Action | str) -> Action:
    try:
        return Action(action)
    except ValueError:
        raise UsageError(f"unknown action {action!r}; one of: {', '.join(a.value for a in Action)}") from None


def waiting_reasons(view: RunView) -> list[Mapping[str, Any]]:
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
    return [c for b in waiting_reasons(view) if b["kind"] == BlockKind.ENV_MISMATCH.value for c in b.get("changes", [])]


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
    question: str | None = None,
    value: Any = NO_VALUE,
    now: float | None = None,
) -> Fit:
    """The one rule for "does this decision fit this run now". `decide`
    records only what fits, `--dry-run` and `preview` refuse what it would
    refuse, and the console offers only what fits. Raises the error the
    operator sees: UsageError, DecisionError or AlreadyDecided.

    `question` and `value` are an answer's (`now`: the time its deadline is
    checked against; None: the clock's)."""
    act = parse_action(action)
    run_id = view.run_id
    if expect_env is not None and act is not Action.APPROVE:
        raise UsageError("--expect-env is for approve: it names the environment the approval accepts")
    if view.status is RunStatus.CANCELLED:
        raise DecisionError(f"run {run_id!r} is cancelled: a cancelled run is final, and no decision changes it")
    if act is not Action.ANSWER and (question is not None or value is not NO_VALUE):
        raise UsageError(f"--question and --value are for answer, not {act.value}")
    if act is Action.ANSWER or act in HOLDS:
        for opt, given in (("--phase", phase is not None), ("--effect", effect is not None)):
            if given:
                raise UsageError(f"{opt} is not for {act.value}")
        if result is not NO_RESULT:
            raise UsageError(f"--result is for confirm_effect, not {act.value}")
        if act is Action.ANSWER:
            _q, said = _answers.fit_answer(view, question, value, time.time() if now is None else now)
            return Fit(act, None, None, said)
        return _fit_hold(view, act)
    if act is Action.RESET and view.status is RunStatus.PAUSED:
        # A reset takes effect at once: it would start the run over past its pause.
        raise DecisionError(f"run {run_id!r} is paused; unpause it before a reset (or cancel it)")
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
    reasons = waiting_reasons(view)
    kinds = list(dict.fromkeys(BlockKind(b["kind"]) for b in reasons))
    shape = [p.name for p in view.phases]
    pending = view.pending_decisions

    if act is Action.RESET:
        if view.status is RunStatus.PAUSED:
            # A reset starts the run over at once: that is the unpause's to say.
            raise DecisionError(f"run {run_id!r} is paused: unpause it first (phasegate unpause), then reset it")
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


def _fit_hold(view: RunView, act: Action) -> Fit:
    """A pause, an unpause or a cancel: it fits a running run too (it is
    asked of its process, run/holds.py), never a finished one."""
    run_id, held = view.run_id, view.held or {}
    asked = held.get("state") == "asked"
    if act is Action.UNPAUSE:
        if view.status is RunStatus.PAUSED or (asked and held.get("action") == Action.PAUSE.value):
            return Fit(act)
        raise DecisionError(f"run {run_id!r} is {view.status.value}, not paused; there is nothing to unpause")
    if view.status in (RunStatus.COMPLETED, RunStatus.CANCELLED):
        raise DecisionError(f"run {run_id!r} is {view.status.value}; there is nothing to {act.value}")
    if asked and (held.get("action") == act.value or act is Action.PAUSE):
        raise AlreadyDecided(
            f"run {run_id!r} was already asked to {held.get('action')} by {held.get('by')}; it stops at its next step"
        )
    if act is Action.PAUSE and view.status is RunStatus.PAUSED:
        raise AlreadyDecided(f"run {run_id!r} is already paused by {held.get('by')}")
    return Fit(act)


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
    if view.asking is not None:
        # A waiting run's question is answered; a block's decisions do not fit it.
        return [Action.ANSWER]
    out: list[Action] = []
    doubts = [str(b["effect"]) for b in waiting_reasons(view) if b["kind"] == BlockKind.IN_DOUBT_EFFECT.value]
    doubts += _damaged(waiting_reasons(view))
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
