"""What a decision would do, stated before the operator confirms it.

Asked of the fit rule first (`fit.fit`), so a preview refuses exactly what
`decide` would refuse; what it then says is derived from the run's view
alone: no database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .. import _json
from ..states import HOLDS, Action, BlockKind, EffectState
from ..views.models import RunView
from .fit import NO_RESULT, NO_VALUE, Fit, env_changes, env_hash, fit, waiting_reasons


@dataclass(frozen=True)
class Preview:
    """What a decision will do, stated before the operator confirms it."""

    action: Action
    """The decision previewed."""
    summary: str
    """What it will do, in one sentence."""
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


def preview(
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
) -> Preview:
    """What the decision would do. Refuses, with `decide`'s own error, what
    `decide` would refuse."""
    chosen = fit(
        view,
        action,
        phase=phase,
        effect=effect,
        result=result,
        force=force,
        expect_env=expect_env,
        question=question,
        value=value,
        now=now,
    )
    if chosen.action is Action.ANSWER or chosen.action in HOLDS:
        return _preview_wait(view, chosen)
    pv = _preview(view, chosen, phase, effect)
    # What this decision leaves unanswered still stops the next run: say so.
    if chosen.action in (Action.APPROVE, Action.DEGRADE, Action.REWIND):
        answered = {d.effect for d in view.pending_decisions if d.effect}
        doubts = [
            str(b["effect"])
            for b in waiting_reasons(view)
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
        return _preview_repair(act, str(chosen.effect_key))
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
            accepts=[_accepted(c) for c in changes],
            env_hash=env_hash(view),
        )
    if act is Action.DEGRADE:
        return _preview_degrade(view, names, open_phases, kept)
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


def _preview_repair(act: Action, key: str) -> Preview:
    """An answer to a damaged effect record: it is rewritten as done or as not done."""
    if act is Action.CONFIRM_EFFECT:
        return Preview(act, f"Rewrite the damaged record of {key} as done (it happened), with the given result.")
    return Preview(
        act, f"Rewrite the damaged record of {key} as not done: it will be called again with its key.", [], [key]
    )


def _preview_degrade(view: RunView, names: list[str], open_phases: list[str], kept: list[str]) -> Preview:
    """A degrade: past a damaged checkpoint, or without the phases below their floor."""
    act = Action.DEGRADE
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


def _preview_wait(view: RunView, chosen: Fit) -> Preview:
    """An answer, a pause, an unpause or a cancel: what it does to the run."""
    act = chosen.action
    live = view.lease is not None and view.lease.alive
    kept = [f"{sum(1 for e in view.effects if e.state is EffectState.DONE)} completed effect(s) and every saved step"]
    if act is Action.ANSWER:
        q = chosen.detail
        said = f"Answer {q['question']!s} with {_shown(q['value'])}: a worker resumes the run, and phase {q['phase']!s}"
        said += " receives the answer."
        return Preview(act, said, rerun=[str(q["phase"])], kept=kept)
    if act is Action.UNPAUSE:
        was = (view.held or {}).get("was") or "where it was"
        return Preview(act, f"Let the run go on: it is {was} again, and a worker takes it up when it is due.")
    verb = "Pause" if act is Action.PAUSE else "Cancel"
    when = "at its next step (its process is running it)" if live else "now"
    said = f"{verb} the run {when}; nothing resumes it" + (
        " until an operator unpauses it." if act is Action.PAUSE else ", ever: a cancel is final."
    )
    doubts = [e.key for e in view.effects if e.state is EffectState.IN_DOUBT]
    if act is Action.CANCEL and doubts:
        said += f" Effects in doubt stay listed for a check outside: {', '.join(doubts)}."
    return Preview(act, said, kept=kept)


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


def _accepted(c: Any) -> str:
    """`probe: saved -> current`; for an object, only its keys that moved
    (two cut JSON texts that begin alike say nothing)."""
    saved, current = c.get("saved"), c.get("current")
    if isinstance(saved, dict) and isinstance(current, dict):
        keys = sorted({*saved, *current}, key=str)
        moved = [
            f"{k} {_shown(saved.get(k), 40)} -> {_shown(current.get(k), 40)}"
            for k in keys
            if saved.get(k) != current.get(k)
        ]
        return f"{c['probe']}: {', '.join(moved)}"
    return f"{c['probe']}: {_shown(saved)} -> {_shown(current)}"


def _shown(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else _json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _trusted_done(view: RunView, seq: int | None) -> set[str]:
    if seq is None:
        return set()
    return {o.phase for o in view.outputs if o.seq < seq}
