"""The phasegate workflows the figures run: real workflows through the real
engine, with phase functions that only note when they were entered."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from phasegate import Workflow


class Marks:
    """perf_counter stamps taken as each phase (or step, effect) is entered."""

    def __init__(self) -> None:
        self.t: list[float] = []

    def mark(self) -> None:
        self.t.append(time.perf_counter())

    def gaps(self, skip: int = 1) -> list[float]:
        """Seconds between consecutive stamps, after the first `skip` gaps
        (the first boundary of a run also pays for warming its statements)."""
        return [b - a for a, b in zip(self.t, self.t[1:], strict=False)][skip:]


def chain_workflow(name: str, phases: int, state: Any, marks: Marks) -> Workflow:
    """`phases` phases, each taking the previous one's state and handing the
    same state on: every boundary checkpoints the full state."""
    wf = Workflow(name)
    prev: str | None = None
    for i in range(phases):
        pname = f"p{i:02d}"

        def fn(ctx: Any, **needs: Any) -> Any:
            marks.mark()
            return state

        wf.phase(pname, needs=[prev] if prev else [])(fn)
        prev = pname
    return wf


class Paired:
    """Each phase entry also makes one raw commit of the same bytes on its own
    connection (timed), so every boundary is measured right next to its
    baseline: on a shared disk fsync latency drifts by 10x within seconds."""

    def __init__(self, commit: Callable[[], None]) -> None:
        self.commit = commit
        self.entries: list[float] = []
        self.raws: list[float] = []

    def enter(self) -> None:
        self.entries.append(time.perf_counter())
        t0 = time.perf_counter()
        self.commit()
        self.raws.append(time.perf_counter() - t0)

    def pairs(self, skip: int = 1) -> list[tuple[float, float]]:
        """(boundary seconds net of the raw commit made inside the phase, that raw commit's seconds)."""
        out = []
        for i in range(len(self.entries) - 1):
            out.append((self.entries[i + 1] - self.entries[i] - self.raws[i], self.raws[i]))
        return out[skip:]


def paired_workflow(name: str, phases: int, state: Any, paired: Paired) -> Workflow:
    wf = Workflow(name)
    prev: str | None = None
    for i in range(phases):
        pname = f"p{i:02d}"

        def fn(ctx: Any, **needs: Any) -> Any:
            paired.enter()
            return state

        wf.phase(pname, needs=[prev] if prev else [])(fn)
        prev = pname
    return wf


class Boom(Exception):
    """Raised by the phase a resume figure stops in, after its entry is stamped."""


def resume_workflow(name: str, marks: Marks, out: Any = None) -> Workflow:
    """Three phases that complete, and a fourth that notes its entry and fails:
    the run stops after its third phase, and every `run()` resumes into the fourth."""
    wf = Workflow(name)
    small = out if out is not None else {"rows": [{"id": i, "amount": 100 + i} for i in range(8)]}

    @wf.phase()
    def load(ctx: Any) -> Any:
        return small

    @wf.phase(needs=["load"])
    def price(ctx: Any, load: Any) -> Any:
        return load

    @wf.phase(needs=["price"])
    def charge(ctx: Any, price: Any) -> Any:
        return price

    @wf.phase(needs=["charge"])
    def report(ctx: Any, charge: Any) -> Any:
        marks.mark()
        raise Boom("stopped here on purpose: the next run() resumes into this phase")

    return wf


def effects_workflow(name: str, count: int, enter: Callable[[], None], result: Any) -> Workflow:
    """One phase calling `count` effects whose functions only call `enter`
    (a stamp, or a stamp and a paired raw commit): the gap between entries is
    one effect's intent and completion commits."""
    wf = Workflow(name)

    @wf.phase()
    def charge(ctx: Any) -> Any:
        for i in range(count):
            ctx.effect(f"charge-{i}", _effect_fn(enter, result))
        enter()
        return None

    return wf


def _effect_fn(enter: Callable[[], None], result: Any) -> Callable[[str], Any]:
    def call(key: str) -> Any:
        enter()
        return result

    return call
