"""Which decisions fit a stopped run, and what each would do.

Pure functions over a `RunView`, so the console's confirmation modal and
`phasegate decide --dry-run` say exactly the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._states import ANSWERS, Action, BlockKind, RunStatus
from .views import RunView


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


def allowed_actions(view: RunView) -> list[Action]:
    """The decisions that fit why the run is stopped, in the console's order."""
    if view.status in (RunStatus.RUNNING,):
        return []
    pending = {(d["answers"], d.get("effect")) for d in view.pending_decisions}
    pending_actions = {d["action"] for d in view.pending_decisions}
    out: list[Action] = []
    if view.status is RunStatus.BLOCKED:
        kinds = [BlockKind(b["kind"]) for b in view.blocked]
        doubts = [b.get("effect") for b in view.blocked if b["kind"] == BlockKind.IN_DOUBT_EFFECT.value]
        for k in kinds:
            for a in sorted(ANSWERS[k], key=list(Action).index):
                if a in (Action.REWIND, Action.RESET):
                    continue
                if a in (Action.CONFIRM_EFFECT, Action.RETRY_EFFECT):
                    if all((k.value, e) in pending for e in doubts):
                        continue
                elif (k.value, None) in pending:
                    continue
                if a not in out:
                    out.append(a)
    if view.status is RunStatus.INTERRUPTED:
        doubts = [e["key"] for e in view.effects if e["state"] == "in_doubt"]
        if doubts and not all(("in_doubt_effect", e) in pending for e in doubts):
            out += [Action.CONFIRM_EFFECT, Action.RETRY_EFFECT]
    if view.status is not RunStatus.RESET and any(p["state"] in ("done", "degraded") for p in view.phases):
        if Action.REWIND.value not in pending_actions:
            out.append(Action.REWIND)
    if view.status is not RunStatus.RESET:
        out.append(Action.RESET)
    return out


def preview(view: RunView, action: Action | str, *, phase: str | None = None, effect: str | None = None) -> Preview:
    act = Action(action)
    names = [p["name"] for p in view.phases]
    open_phases = [p["name"] for p in view.phases if p["state"] not in ("done", "degraded")]
    done_effects = [e["key"] for e in view.effects if e["state"] == "done"]
    kept = (
        [f"{len(done_effects)} completed effect(s) keep their results and are not called again"] if done_effects else []
    )
    if act is Action.APPROVE:
        changed = [r["probe"] for b in view.blocked if b["kind"] == "env_mismatch" for r in b.get("changes", [])]
        return Preview(
            act,
            f"Accept the changed environment ({', '.join(changed) or 'as shown'}) and continue from {view.frontier['phase']}.",
            rerun=open_phases,
            kept=kept,
        )
    if act is Action.DEGRADE:
        integ = [b for b in view.blocked if b["kind"] == "integrity"]
        if integ:
            f = integ[0].get("failure") or {}
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
        doubt = [e["key"] for e in view.effects if e["phase"] in again and e["state"] != "done"]
        return Preview(
            act,
            f"Re-run from {phase}: {', '.join(again)} run again with the current environment.",
            rerun=again,
            effects_again=doubt,
            discarded=[
                f"output of {n} (superseded, prunable)" for n in again if n in {o["phase"] for o in view.outputs}
            ],
            kept=kept,
        )
    if act is Action.RESET:
        return Preview(
            act,
            "Archive every checkpoint and start over from the original inputs.",
            rerun=names,
            effects_again=[e["key"] for e in view.effects if e["state"] != "done"],
            discarded=[f"output of {o['phase']} (archived)" for o in view.outputs] or ["nothing saved yet"],
            kept=kept,
        )
    doubts = [
        e for e in view.effects if e["state"] == "in_doubt" and (effect is None or effect in (e["key"], e["name"]))
    ]
    keys = [e["key"] for e in doubts]
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


def _trusted_done(view: RunView, seq: int | None) -> set[str]:
    if seq is None:
        return set()
    return {o["phase"] for o in view.outputs if o["seq"] < seq}
