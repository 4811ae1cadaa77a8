"""A run's frontier: where a resume picks up. The one rule, from the verified
chain alone; the runner writes it to the run row at every stop, the views
show it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..history import chain
from ..history.keys import SealKey
from ..shapes import EffectRow

if TYPE_CHECKING:  # the views read a frontier without SQLAlchemy
    from ..store._runs import RunChange


@dataclass(frozen=True)
class Frontier:
    """Where a resume picks up: the first phase not done."""

    phase: str | None
    """The first phase not done; None when every phase is."""
    index: int
    """How many phases are done (the frontier's position, from 0)."""
    of: int
    """How many phases the workflow has."""
    steps_done: int
    """Steps recorded in the frontier phase (durable steps and finished effects)."""


def frontier_of(shape: list[Any], state: chain.Folded, steps: list[Any], effects: Sequence[EffectRow]) -> Frontier:
    """Where a resume picks up, from the trusted (verified) chain alone: the
    first phase neither done nor skipped, and the steps and finished effects
    recorded in it. The one rule for a run's frontier: the detail, `status
    RUN` and `--json` build it here, and the runs list reads the run row's
    frontier columns, which every stop writes from here (`frontier_columns`)."""
    for i, p in enumerate(shape):
        name = p["name"]
        if name not in state.done and name not in state.skipped:
            n_steps = sum(1 for s in steps if s.phase == name) + sum(
                1 for e in effects if e.phase == name and e.state == "done"
            )
            return Frontier(phase=name, index=i, of=len(shape), steps_done=n_steps)
    last = state.done.get(shape[-1]["name"]) if shape else None
    return Frontier(
        phase=shape[-1]["name"] if shape else None,
        index=len(shape),
        of=len(shape),
        steps_done=int(last.entry.env.get("steps_done", 0)) if last else 0,
    )


def trusted_frontier(
    run: Any, rows: list[Any], steps: list[Any], effects: list[Any], shape: list[Any], key: SealKey | None
) -> Frontier:
    """`frontier_of` a run's stored rows: nothing past an integrity failure
    counts (checked under the store's seal `key`)."""
    return frontier_of(shape, chain.fold(chain.verify_run(run, rows, key=key).entries), steps, effects)


def frontier_columns(fr: Frontier) -> RunChange:
    """The run row's frontier columns (what the runs list shows) for `fr`."""
    return {"frontier_phase": fr.phase, "frontier_index": fr.index, "steps_done": fr.steps_done}
