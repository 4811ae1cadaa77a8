"""Figure 5: resume cost as history grows. phasegate: from `run()` to the
first phase function being entered, for a run stopped after its third phase,
with N other runs (and their checkpoints) in the store. LangGraph: `get_state`
with 10 and 10,000 checkpoints in the thread. DBOS: recovery of a workflow
with 10 and 10,000 finished steps."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from phasegate import Engine

from . import fixture
from ._util import Figure, at_most, median, scratch
from .peers import dbos as dbos_peer
from .peers import langgraph as lg_peer
from .workloads import Marks, resume_workflow

log = logging.getLogger("bench")


def _resume_times(
    engines: dict[int, Engine], marks: dict[int, Marks], wfs: dict[int, object], reps: int
) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {n: [] for n in engines}
    order = list(engines)
    for i in range(reps):
        # Round-robin, so every size sees the same disk weather; the order
        # rotates each round, so no size always follows the same one.
        k = i % len(order)
        for n in order[k:] + order[:k]:
            eng = engines[n]
            m = marks[n]
            t0 = time.perf_counter()
            eng.run(wfs[n], "resume-me")  # type: ignore[arg-type]
            out[n].append(m.t[-1] - t0)
    return out


def run(quick: bool, rounds: int, stores: dict[int, Path]) -> list[Figure]:
    """`stores` maps a number of other runs to a fixture store holding them."""
    engines: dict[int, Engine] = {}
    marks: dict[int, Marks] = {}
    wfs: dict[int, object] = {}
    try:
        for n, path in stores.items():
            marks[n] = Marks()
            wfs[n] = resume_workflow("resume", marks[n])
            engines[n] = Engine(path)
            out = engines[n].run(wfs[n], "resume-me", {"bench": True})  # type: ignore[arg-type]
            assert out.status == "failed" and out.phases_run == ["load", "price", "charge", "report"], out
            engines[n].run(wfs[n], "resume-me")  # warm: statements prepared, pages cached  # type: ignore[arg-type]
        times = _resume_times(engines, marks, wfs, max(rounds, 40))
    finally:
        for e in engines.values():
            e.close()
    sizes = sorted(times)
    figs = [
        Figure(
            f"resume with {n:,} other runs",
            median(times[n]) * 1e3,
            "ms",
            group="5 resume",
            detail="run() to the fourth phase entered; the run stopped after its third phase (engine open, warm)",
            samples=[x * 1e3 for x in times[n]],
        )
        for n in sizes
    ]
    lo, hi = sizes[0], sizes[-1]
    # Each round resumes every size once, back to back: the ratio of the
    # round's pair, then the median over rounds, so disk drift cancels.
    ratio = median([a / b for a, b in zip(times[hi], times[lo], strict=True)])
    tgt, met = at_most(ratio, 1.2)
    figs.append(
        Figure(
            f"resume: {hi:,} other runs / {lo:,}",
            ratio,
            "x",
            tgt,
            met,
            group="5 resume",
            baseline=f"with {lo:,} other runs: {median(times[lo]) * 1e3:.2f} ms",
            detail=f"with {hi:,}: {median(times[hi]) * 1e3:.2f} ms; {len(times[hi])} rounds, each resuming every size once; "
            "ratio = median of the per-round ratios",
            samples=[a / b for a, b in zip(times[hi], times[lo], strict=True)],
        )
    )
    figs.extend(_peers(quick, rounds))
    return figs


def _peers(quick: bool, rounds: int) -> list[Figure]:
    figs: list[Figure] = []
    skip = "--quick runs no peers" if quick else lg_peer.available()
    name = "resume: LangGraph get_state, 10,000 checkpoints / 10"
    if skip is None:
        with scratch() as d:
            for n in (10, 10_000):
                lg_peer.build_history(d / f"lg{n}.db", "t", n)
            counts = {n: lg_peer.count(d / f"lg{n}.db", "t") for n in (10, 10_000)}
            t: dict[int, list[float]] = {10: [], 10_000: []}
            for _ in range(max(rounds, 5)):
                for n in t:
                    t[n].append(median(lg_peer.get_state_time(d / f"lg{n}.db", "t", 20)))
        a, b = median(t[10]), median(t[10_000])
        figs.append(
            Figure(
                name,
                b / a,
                "x",
                None,
                None,
                group="5 resume",
                baseline=f"get_state with {counts[10]} checkpoints: {a * 1e3:.2f} ms",
                detail=f"with {counts[10_000]} checkpoints: {b * 1e3:.2f} ms; the thread's latest checkpoint read through SqliteSaver",
                samples=[y / x for x, y in zip(t[10], t[10_000], strict=True)],
            )
        )
    else:
        figs.append(Figure(name, None, "x", None, None, group="5 resume", skipped=skip))
    skip = "--quick runs no peers" if quick else dbos_peer.available()
    name = "resume: DBOS recovery, 10,000 finished steps / 10"
    if skip is None:
        try:
            with scratch() as d:
                for n in (10, 10_000):
                    dbos_peer.build_pending(d / f"dbos{n}.db", n)
                r: dict[int, list[float]] = {10: [], 10_000: []}
                for _ in range(max(rounds, 5)):
                    for n in r:
                        r[n].append(dbos_peer.recover_time(d / f"dbos{n}.db", n))
            a, b = median(r[10]), median(r[10_000])
            figs.append(
                Figure(
                    name,
                    b / a,
                    "x",
                    None,
                    None,
                    group="5 resume",
                    baseline=f"recovery with 10 finished steps: {a * 1e3:.0f} ms",
                    detail=f"with 10,000: {b * 1e3:.0f} ms: {(b - a) / 9990 * 1e3:.2f} ms per replayed step; "
                    "from DBOS.launch() in a fresh process to the next step entered (rollback journal, synchronous=FULL)",
                    samples=[y / x for x, y in zip(r[10], r[10_000], strict=True)],
                )
            )
        except Exception as exc:  # noqa: BLE001 - reported as skipped, with why
            figs.append(Figure(name, None, "x", None, None, group="5 resume", skipped=f"failed: {exc}"[:300]))
    else:
        figs.append(Figure(name, None, "x", None, None, group="5 resume", skipped=skip))
    return figs


def build_stores(base: Path, sizes: list[int]) -> tuple[dict[int, Path], dict[int, dict[str, object]]]:
    paths: dict[int, Path] = {}
    info: dict[int, dict[str, object]] = {}
    for n in sizes:
        t0 = time.perf_counter()
        paths[n] = base / f"store-{n}.db"
        info[n] = fixture.build(paths[n], n)
        info[n]["seconds"] = round(time.perf_counter() - t0, 1)
        log.info("fixture with %d runs built in %.1fs", n, time.perf_counter() - t0)
    return paths, info
