"""Where the console opens: a deep link to one run's detail, or the list
already filtered (`phasegate console RUN --show blocked --filter TEXT`),
checked before the screen takes the terminal."""

from __future__ import annotations

from dataclasses import dataclass

from phasegate import Engine, UsageError

from .runs_page import STATUS_FILTERS


@dataclass(frozen=True)
class StartAt:
    """A deep link: the run whose detail opens first, and the list's filters."""

    run_id: str | None = None
    """The run whose detail opens over the list, or None for the list alone."""
    filter_index: int = 0
    """The list's status filter (an index into `STATUS_FILTERS`)."""
    text: str = ""
    """The list's text filter ("": none)."""


def show_index(name: str) -> int:
    """`--show NAME` -> a status filter; one clear error for anything else."""
    want = name.strip().lower().replace("-", " ").replace("_", " ")
    if want == "attention":
        want = "needs attention"
    for i, (label, _statuses) in enumerate(STATUS_FILTERS):
        if label == want:
            return i
    raise UsageError(f"--show {name!r}: one of {', '.join(label.replace(' ', '-') for label, _s in STATUS_FILTERS)}")


def start_at(engine: Engine, run_id: str | None, show: str | None, text: str | None) -> StartAt:
    """Check a deep link before the screen takes the terminal: a run that is
    not there is one line on stderr, not an empty detail."""
    if run_id is not None:
        engine.status(run_id)  # raises RunNotFound
    return StartAt(run_id, show_index(show) if show is not None else 0, (text or "").strip())
