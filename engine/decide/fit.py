"""Which decisions fit a stopped run.

Pure functions over a `RunView`: `fit` is the one rule that `decide`,
`decide --dry-run`, `preview` (`preview.py`) and the console's offers all
ask, so none of them can accept what another refuses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
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
    "confirm_effect needs the effect's result as the outside system reports it, as JSON"
    " (JSON null when it returned nothing)"
)
"""The words of the refusal of a confirmation given no result (its option: `result`)."""

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


@dataclass(frozen=True)
class Asked:
    """A decision's options as `fit` was given them, handed to the function of its action."""

    phase: str | None = None
    """For a rewind: the phase to re-run from."""
    effect: str | None = None
    """For an effect's answer: the effect, as `effectref` names it."""
    result: Any = NO_RESULT
    """For a confirmation: the effect's result (`NO_RESULT`: none given)."""
    force: bool = False
    """Answer an effect although the run's holder is stalled."""
    expect_env: str | None = None
    """For an approval: the environment's hash the operator saw."""
    question: str | None = None
    """For an answer: the question it answers."""
    value: Any = NO_VALUE
    """For an answer: the value (`NO_VALUE`: none given)."""
    now: float | None = None
    """For an answer: the time its deadline is checked against (None: the clock's)."""

    def given(self) -> dict[str, bool]:
        """Which of the options an action may refuse were given, by their API names."""
        return {
            "phase": self.phase is not None,
            "effect": self.effect is not None,
            "result": self.result is not NO_RESULT,
            "expect_env": self.expect_env is not None,
            "question": self.question is not None,
            "value": self.value is not NO_VALUE,
        }


#: The options each action takes; every other one given is refused, not silently recorded.
TAKES: dict[Action, frozenset[str]] = {
    Action.APPROVE: frozenset({"expect_env"}),
    Action.REWIND: frozenset({"phase"}),
    Action.CONFIRM_EFFECT: frozenset({"effect", "result"}),
    Action.RETRY_EFFECT: frozenset({"effect"}),
    Action.ANSWER: frozenset({"question", "value"}),
}

#: How a refusal names an option in words (the command line adds its flag).
_OPTION_WORDS = {
    "phase": "a phase",
    "effect": "an effect",
    "result": "a result",
    "expect_env": "an expected environment",
    "question": "a question",
    "value": "a value",
}


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
    refuse, and the console offers only what fits.

    The checks every action shares come first (a cancelled run, options the
    action does not take, a live or stalled holder); then the action's own
    function (`_FITS`) says what it answers.

    Args:
        view: The run as it is now.
        action: The decision (an `Action` or its name).
        phase: For a rewind: the phase to re-run from.
        effect: For confirm_effect and retry_effect: the effect (its key,
            `phase/name` or name).
        result: For confirm_effect: the effect's result (`NO_RESULT`: none).
        force: Answer an effect although the run's holder is stalled.
        expect_env: For an approval: the environment's hash the preview showed.
        question: For an answer: the question (its name or `phase/name`).
        value: For an answer: the value (`NO_VALUE`: none; JSON null is one).
        now: For an answer: the time its deadline is checked at (None: the clock's).

    Returns:
        How the decision fits: the block it answers, the effect it names and
        what it records beside the reason.

    Raises:
        UsageError: An unknown action, or an option missing, not taken by the
            action or naming nothing (the error's `options` say which).
        DecisionError: The decision does not fit the run as it is.
        AlreadyDecided: It answers what a pending decision already answers.
        HolderStalled: An effect's answer while the run's holder is stalled, without `force`.
    """
    act = parse_action(action)
    asked = Asked(phase, effect, result, force, expect_env, question, value, now)
    _refuse_first(view, act, asked)
    if act is not Action.ANSWER and act not in HOLDS:
        # A pause, a cancel or an answer fits a running run too (it is asked of its process).
        _refuse_moving(view, act)
        _refuse_untaken(act, asked)
        _refuse_stalled(view, act, force)
    return _FITS[act](view, act, asked)


def _refuse_first(view: RunView, act: Action, asked: Asked) -> None:
    """What refuses every decision alike: an expected environment not for an
    approval, a cancelled run, an answer's question or value given to another
    action (and for an answer or a hold, any option it does not take)."""
    if asked.expect_env is not None and act is not Action.APPROVE:
        raise UsageError(
            "an expected environment is for approve: it names the environment the approval accepts",
            options=("expect_env",),
        )
    if view.status is RunStatus.CANCELLED:
        raise DecisionError(f"run {view.run_id!r} is cancelled: a cancelled run is final, and no decision changes it")
    if act is not Action.ANSWER and (asked.question is not None or asked.value is not NO_VALUE):
        raise UsageError(f"a question and a value are for answer, not {act.value}", options=("question", "value"))
    if act is Action.ANSWER or act in HOLDS:
        _refuse_untaken(act, asked)


def _refuse_moving(view: RunView, act: Action) -> None:
    """A run that is paused (for a reset, which would start it over past its
    pause) or held by a live process is decided once it stops."""
    if act is Action.RESET and view.status is RunStatus.PAUSED:
        raise DecisionError(f"run {view.run_id!r} is paused; unpause it before a reset (or cancel it)")
    if view.lease is not None and view.lease.alive:
        raise DecisionError(f"run {view.run_id!r} is running (held by {view.lease.holder}); decide once it stops")


def _refuse_untaken(act: Action, asked: Asked) -> None:
    """An option the action does not take is refused, not silently recorded."""
    takes = TAKES.get(act, frozenset())
    for name, given in asked.given().items():
        if not given or name in takes or name in ("expect_env", "question", "value"):
            continue  # those three are refused first, for every action alike
        takers = " and ".join(a.value for a, opts in TAKES.items() if name in opts)
        raise UsageError(f"{_OPTION_WORDS[name]} is for {takers}, not {act.value}", options=(name,))


def _refuse_stalled(view: RunView, act: Action, force: bool) -> None:
    """An effect's answer while the run's holder is stalled: its process may
    wake inside the very call this decision answers."""
    if view.status is RunStatus.STALLED and act in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT) and not force:
        holder = view.lease.holder if view.lease else "?"
        raise HolderStalled(view.run_id, holder, f"decide {act.value}", FORCE_RISK)


def _fit_answer(view: RunView, act: Action, asked: Asked) -> Fit:
    """An answer to the question the run asked (decide/answers.py)."""
    _q, said = _answers.fit_answer(view, asked.question, asked.value, time.time() if asked.now is None else asked.now)
    return Fit(act, None, None, said)


def _fit_reset(view: RunView, act: Action, asked: Asked) -> Fit:
    """A reset fits any stopped run but one already reset (a paused one is
    refused before: `_refuse_moving`)."""
    if view.status is RunStatus.RESET:
        raise AlreadyDecided(f"run {view.run_id!r} has already been reset")
    return Fit(act)


def _fit_rewind(view: RunView, act: Action, asked: Asked) -> Fit:
    """A rewind to a phase of the run; it answers the heaviest block it meets."""
    run_id, phase = view.run_id, asked.phase
    if not phase:
        raise UsageError("rewind needs the phase to re-run from", options=("phase",))
    shape = [p.name for p in view.phases]
    if phase not in shape:
        raise UsageError(f"run {run_id!r} has no phase {phase!r} (phases: {', '.join(shape)})", options=("phase",))
    if view.status is RunStatus.RESET:
        raise DecisionError(f"run {run_id!r} was reset; there is nothing to rewind")
    kinds = _kinds(waiting_reasons(view))
    heavy = (BlockKind.INTEGRITY, BlockKind.ENV_MISMATCH, BlockKind.BELOW_FLOOR)
    answered: BlockKind | None = next((k for k in heavy if k in kinds), None)
    if any(d.action == act.value for d in view.pending_decisions):
        raise AlreadyDecided(f"run {run_id!r} already has a rewind waiting; it has already been decided")
    return Fit(act, answered)


def _fit_effect_answer(view: RunView, act: Action, asked: Asked) -> Fit:
    """confirm_effect or retry_effect: a correction of a person's confirmation,
    a repair of a damaged record, or the answer to an effect in doubt."""
    effect, result = asked.effect, asked.result
    reasons = waiting_reasons(view)
    damaged = _damaged(reasons)
    if effect is not None:
        corr = _match(view.run_id, correctable_effects(view), effect)
        # A confirmed effect whose record was damaged since is repaired, not
        # corrected: a correction waits for the record to be whole again.
        if corr is not None and corr not in damaged:
            return _correction(view, act, corr, result)
    if damaged:
        return _repair(view, act, damaged, effect, result)
    answers = _answered(view, act, reasons)
    doubts = [str(b["effect"]) for b in reasons if b["kind"] == BlockKind.IN_DOUBT_EFFECT.value]
    if effect is None:
        if len(doubts) != 1:
            raise UsageError(f"name the effect; in doubt: {', '.join(doubts)}", options=("effect",))
        effect = doubts[0]
    key = effectref.resolve(view.run_id, doubts, effect)
    detail: dict[str, Any] = {}
    if act is Action.CONFIRM_EFFECT and result is not NO_RESULT:
        detail["result"] = _json.loads(_json.dumps(result))
    _refuse_pending(view, answers, key)
    return Fit(act, answers, key, detail)


def _fit_degrade(view: RunView, act: Action, asked: Asked) -> Fit:
    """Going on without what is lost: a damaged checkpoint or a phase below its
    floor; never a damaged effect record, which only the outside system can answer."""
    reasons = waiting_reasons(view)
    if _damaged(reasons) and all(b.get("what") == "effect" for b in reasons):
        raise DecisionError(
            f"degrade does not fit run {view.run_id!r}: its effect records are damaged; answer each"
            " with confirm_effect and the effect's result (it happened) or retry_effect (it did not)",
            options=("result",),
        )
    answers = _answered(view, act, reasons)
    _refuse_pending(view, answers, None)
    return Fit(act, answers)


def _fit_approve(view: RunView, act: Action, asked: Asked) -> Fit:
    """An approval accepts exactly the changed values the run is blocked on,
    and only if they are still those the operator saw (`expect_env`)."""
    reasons = waiting_reasons(view)
    answers = _answered(view, act, reasons)
    env = next(b for b in reasons if b["kind"] == BlockKind.ENV_MISMATCH.value)
    changes = env.get("changes", [])
    detail: dict[str, Any] = {"accepted": [{"probe": c["probe"], "current": c.get("current")} for c in changes]}
    if env.get("what") == "replay_diverged":
        detail["replay"] = _replay_approved(view, env)
    now_hash = env_hash(view)
    if asked.expect_env is not None and asked.expect_env != now_hash:
        raise DecisionError(
            f"the environment of run {view.run_id!r} moved since the preview (expected {asked.expect_env},"
            f" now {now_hash}): preview again and approve what it shows",
            options=("dry_run",),
        )
    detail["env_hash"] = now_hash
    _refuse_pending(view, answers, None)
    return Fit(act, answers, None, detail)


def _replay_approved(view: RunView, reason: Mapping[str, Any]) -> dict[str, Any]:
    """What approving a replay that diverged under new code accepts (run/replay.py):
    the phase goes on under the new code, the saved steps from there on dropped.

    Raises:
        DecisionError: the run took a patch's old path, which its code no
            longer has (`ctx.deprecated_patch`): nothing but a rewind or a reset fits.
    """
    phase = reason.get("phase")
    if reason.get("patch") is not None:
        raise DecisionError(
            f"approve does not fit run {view.run_id!r}: it took the old path of patch {reason['patch']!s}, which "
            f"the code no longer has; rewind phase {phase!s} to do it again under the new code, or reset the run",
            options=("phase",),
        )
    drop = reason.get("drop")
    return {"phase": phase, "drop": [str(k) for k in drop] if isinstance(drop, list) else []}


def _kinds(reasons: list[Mapping[str, Any]]) -> list[BlockKind]:
    """The kinds of block among the reasons, each once, in their order."""
    return list(dict.fromkeys(BlockKind(b["kind"]) for b in reasons))


def _answered(view: RunView, act: Action, reasons: list[Mapping[str, Any]]) -> BlockKind:
    """The first block the run waits on that `act` answers (`ANSWERS`)."""
    kinds = _kinds(reasons)
    fits = [k for k in kinds if act in ANSWERS[k]]
    if not fits:
        why = ", ".join(sorted(k.value for k in kinds)) or f"it is {view.status.value}, not blocked"
        raise DecisionError(f"{act.value} does not fit run {view.run_id!r}: {why}")
    return fits[0]


def _refuse_pending(view: RunView, answers: BlockKind, key: str | None) -> None:
    """A pending decision that answers the same block (or the same effect)
    makes this one a second answer: refused as decided."""
    for d in view.pending_decisions:
        if d.answers == answers.value and (key is None or d.effect == key):
            raise AlreadyDecided(
                f"run {view.run_id!r} has already been decided: {d.action} by {d.operator} (decision {d.id})"
            )


def _fit_hold(view: RunView, act: Action, asked: Asked) -> Fit:
    """A pause, an unpause or a cancel: it fits a running run too (it is
    asked of its process, run/holds.py), never a finished one."""
    run_id, held = view.run_id, view.held or {}
    pending = held.get("state") == "asked"
    if act is Action.UNPAUSE:
        if view.status is RunStatus.PAUSED or (pending and held.get("action") == Action.PAUSE.value):
            return Fit(act)
        raise DecisionError(f"run {run_id!r} is {view.status.value}, not paused; there is nothing to unpause")
    if view.status in (RunStatus.COMPLETED, RunStatus.CANCELLED):
        raise DecisionError(f"run {run_id!r} is {view.status.value}; there is nothing to {act.value}")
    if pending and (held.get("action") == act.value or act is Action.PAUSE):
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
            raise UsageError(f"name the effect; damaged: {shown}", options=("effect",))
        effect = named[0]
    key = _match(view.run_id, named, effect)
    if key is None and UNNAMED in damaged:
        # A deleted record nothing names: the operator names it from the
        # outside system's records. It must be a key of this run, and not
        # one of its records that are still there.
        key = effect if effect.startswith(view.run_id + "/") else f"{view.run_id}/{effect}"
        where = split_key(view.run_id, key)
        if where is None or where[0] not in {p.name for p in view.phases}:
            raise UsageError(
                f"{effect!r} is not an effect key of run {view.run_id!r} (RUN/PHASE/NAME)", options=("effect",)
            )
        if any(e.key == key for e in view.effects):
            raise DecisionError(f"effect {key} has its record; it is not among the damaged records")
    if key is None:
        raise DecisionError(f"effect {effect!r} is not among the damaged records of run {view.run_id!r}")
    # Only a repair waiting already makes this a second answer: one decided
    # before the record was damaged is superseded by this (run/planner.py).
    _refuse_second_answer(view, key, answers=BlockKind.INTEGRITY)
    detail: dict[str, Any] = {"repair": True}
    if act is Action.CONFIRM_EFFECT and result is not NO_RESULT:
        detail["result"] = _json.loads(_json.dumps(result))
    return Fit(act, BlockKind.INTEGRITY, key, detail)


def _refuse_second_answer(view: RunView, key: str, *, answers: BlockKind | None = None) -> None:
    """One pending answer per effect (of what it `answers`, when given): a
    second one is refused as decided."""
    for d in view.pending_decisions:
        if d.effect == key and (answers is None or d.answers == answers.value):
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


_FITS: dict[Action, Callable[[RunView, Action, Asked], Fit]] = {
    Action.APPROVE: _fit_approve,
    Action.DEGRADE: _fit_degrade,
    Action.REWIND: _fit_rewind,
    Action.RESET: _fit_reset,
    Action.CONFIRM_EFFECT: _fit_effect_answer,
    Action.RETRY_EFFECT: _fit_effect_answer,
    Action.ANSWER: _fit_answer,
    Action.PAUSE: _fit_hold,
    Action.UNPAUSE: _fit_hold,
    Action.CANCEL: _fit_hold,
}
"""The function that fits each action, once the checks every action shares have passed."""


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
        raise UsageError(CONFIRM_NEEDS_RESULT, options=("result",))


def check_reason(reason: Any) -> str:
    if not reason or not str(reason).strip():
        raise UsageError("a decision needs a reason")
    return str(reason)
