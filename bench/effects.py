"""Figures 3 and 4: one effect (intent + completion) against raw commits, and
the overhead of an ordinary `ctx.step` against a plain call."""

from __future__ import annotations

import time
from typing import Any

from phasegate import Engine, Workflow

from . import raw
from ._util import Figure, at_most, below, median, scratch
from .workloads import Paired, effects_workflow

RESULT = {"charge_id": "ch_00000000", "amount": 1234, "currency": "EUR"}


def run(quick: bool, rounds: int) -> list[Figure]:
    figs = [_effects(quick, rounds, alone=False), _effects(quick, rounds, alone=True)]
    figs.extend(_steps(quick, rounds))
    return figs


def _effects(quick: bool, rounds: int, *, alone: bool) -> Figure:
    """Back to back, each effect's completion rides with the next one's
    intent (one commit an effect). Alone, nothing follows for it to ride
    with, so it commits by itself: measured with `effect_flush=0`, which
    commits every completion before `ctx.effect` returns (two commits)."""
    count = 12 if quick else 30
    ratios: list[float] = []
    eff: list[float] = []
    one: list[float] = []
    small = "x" * 300  # about what an effect's intent row holds
    for _ in range(rounds):
        with scratch() as d:
            conn = raw.connect(d / "raw.db", "FULL")
            try:
                # Each effect's function makes one raw commit beside it (timed and
                # subtracted), so every effect is compared with a commit made
                # within the same millisecond: fsync latency drifts 10x here.
                paired = Paired(raw.committer(conn, small))
                with Engine(d / "pg.db", effect_flush=0.0 if alone else None) as eng:
                    eng.run(effects_workflow("warm", 2, lambda: None, RESULT), "warm")
                    eng.run(effects_workflow("effects", count, paired.enter, RESULT), "r1")
            finally:
                conn.close()
            pairs = paired.pairs()
            eff.append(median([e for e, _ in pairs]))
            one.append(median([c for _, c in pairs]))
            ratios.append(median([e / c for e, c in pairs]))
    E, R, ratio = median(eff), median(one), median(ratios)
    tgt, met = at_most(ratio, 2.3 if alone else 1.3)
    how = (
        "alone: its completion committed by itself (effect_flush=0: before ctx.effect returns), two commits"
        if alone
        else "back to back: each completion committed with the next effect's intent, one commit an effect"
    )
    return Figure(
        f"effect (intent + completion) / one raw FULL commit, {'alone' if alone else 'amortised'}",
        ratio,
        "x",
        tgt,
        met,
        group="3 effect",
        baseline=f"one raw FULL commit of a small row: {R * 1e6:.0f} us (two: {2 * R * 1e6:.0f} us)",
        detail=f"{how}; one effect {E * 1e6:.0f} us (medians); ratio = median of per-effect ratios, each effect "
        f"paired with the raw commit made inside its function; {count} effects a run",
        samples=ratios,
    )


def _trivial(x: int) -> int:
    return x


def _steps(quick: bool, rounds: int) -> list[Figure]:
    n = 50_000 if quick else 200_000
    over: list[float] = []
    ratio: list[float] = []
    plain_us: list[float] = []
    wf = Workflow("steps")

    @wf.phase()
    def loop(ctx: Any) -> Any:
        for _ in range(rounds):
            f = _trivial
            t0 = time.perf_counter()
            for i in range(n):
                f(i)
            t1 = time.perf_counter()
            step = ctx.step
            for i in range(n):
                step("trivial", f, i)
            t2 = time.perf_counter()
            plain, stepped = (t1 - t0) / n, (t2 - t1) / n
            over.append((stepped - plain) * 1e6)
            ratio.append(stepped / plain)
            plain_us.append(plain * 1e6)
        return None

    with scratch() as d, Engine(d / "steps.db") as eng:
        eng.run(wf, "steps")
    over_us = median(over)
    tgt, met = below(over_us, 5.0, " us")
    return [
        Figure(
            "ordinary ctx.step overhead",
            over_us,
            "us",
            tgt,
            met,
            group="4 step",
            baseline=f"plain call of a trivial function: {median(plain_us):.3f} us",
            detail=f"ctx.step / plain call = {median(ratio):.2f}x; {n} calls per run",
            samples=over,
        ),
        Figure(
            "ordinary ctx.step / plain call",
            median(ratio),
            "x",
            None,
            None,
            group="4 step",
            baseline=f"plain call {median(plain_us):.3f} us",
            samples=ratio,
        ),
    ]
