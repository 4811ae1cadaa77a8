"""Which of the console's actions are offered on a run now: the decisions
that fit it (the engine's rule), the holds, a second, a prune, and whether
`e` may resume it. Asked by both screens, so the keys they show agree."""

from __future__ import annotations

from collections.abc import Sequence

from phasegate import DecisionView, Engine, PhasegateError, RunStatus, RunView

HOLDS: tuple[str, ...] = ("pause", "unpause", "cancel")
"""The operator's holds on a run: they fit a running run too (it stops at its next step)."""


def allowed(engine: Engine, view: RunView, second: Sequence[DecisionView] | None = None) -> list[str]:
    """The console actions that fit this run now (decisions, holds, prune).

    Args:
        engine: The engine.
        view: The run, as last read.
        second: The run's proposals this operator may second, when they were
            read with the view (`Engine.runs_page`); None: asked now.

    Returns:
        The names of the actions that fit, in the order the keys are listed.
    """
    names = [str(a) for a in engine.allowed_actions(view)] if view.status is not RunStatus.RUNNING else []
    for hold in HOLDS:
        try:
            engine.preview(view, hold)
        except PhasegateError:
            continue
        names.append(hold)
    if view.status is RunStatus.RUNNING:
        return names
    if second if second is not None else secondable(engine, view):
        names.append("second")
    if view.prune_candidates:
        names.append("prune")
    return names


def secondable(engine: Engine, view: RunView) -> list[DecisionView]:
    """The proposals on this run that this console's operator may second."""
    return engine.oversight.secondable(view)


def claimed_by_other(engine: Engine, view: RunView) -> bool:
    """Someone else claimed the run (a decision on it then asks to be confirmed)."""
    return engine.oversight.claimed_by_other(view)


def can_resume(view: RunView) -> str:
    """Empty when `phasegate resume` would move this run on now; else why not."""
    if view.status is RunStatus.RUNNING:
        return "it is running (its process is alive)"
    if view.status is RunStatus.COMPLETED:
        return "it is completed"
    if view.status is RunStatus.CANCELLED:
        return "it is cancelled (final)"
    if view.status is RunStatus.PAUSED:
        return "it is paused: unpause it (p) and a worker takes it up"
    if view.status is RunStatus.WAITING and not view.pending_decisions:
        # (Answered, it can be resumed now: the answer is pending.)
        return "it is waiting: a worker resumes it once it is answered (i) or due"
    if not view.target:
        return "it has no stored target (it was run from code); resume it there"
    if view.status in (RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.RESET) or view.pending_decisions:
        return ""
    return "it is blocked with nothing decided: decide first"
