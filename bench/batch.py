"""Figure 10: one decision for a group. Deciding every run of one cause
(`decide --cause`: the cause looked up, each run checked by `decisions.fit`
on its own view, all recorded in one transaction) against the same runs
decided one at a time (`decide RUN`, one transaction each), on copies of
one store. The issue's goal: 300 runs of one cause well under a second."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from phasegate import Engine, Workflow

from ._util import Figure, at_most, below, median

_world = {"tax": "vat-2026-v1"}

wf = Workflow("bench-billing")


@wf.probe("tax_table")
def _tax() -> str:
    return _world["tax"]


@wf.phase(probes=["tax_table"])
def price(ctx: Any) -> Any:
    return [{"id": f"inv-{i}", "total": 200 + i} for i in range(4)]


@wf.phase(needs=["price"])
def charge(ctx: Any, price: Any) -> Any:
    return [{"id": r["id"], "charged": r["total"]} for r in price]


def build(path: Path, n: int) -> None:
    """`n` runs priced under one tax table, stopped before their charges,
    then blocked on the same change of the table: one cause."""
    _world["tax"] = "vat-2026-v1"
    with Engine(path) as eng:
        for i in range(n):
            asked = iter([False, True])  # stop after the first phase, as a worker's shutdown does
            eng.should_stop = lambda asked=asked: next(asked, True)
            out = eng.run(wf, f"bill-{i:04d}", {"customer": i})
            assert out.status == "interrupted", out
        eng.should_stop = None
        _world["tax"] = "vat-2026-v2"
        for i in range(n):
            out = eng.run(wf, f"bill-{i:04d}")
            assert out.status == "blocked", out
    _world["tax"] = "vat-2026-v1"


def _copy(src: Path, dst: Path) -> Path:
    """A copy of the store as one file (the WAL folded in first)."""
    con = sqlite3.connect(src)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    shutil.copy(src, dst)
    return dst


def run(quick: bool, rounds: int, d: Path, *, runs: int | None = None) -> list[Figure]:
    n = runs or (100 if quick else 300)
    src = d / "batch.db"
    build(src, n)
    group_s: list[float] = []
    single_s: list[float] = []
    raw_s: list[float] = []
    list_s: list[float] = []
    for r in range(rounds):
        with Engine(_copy(src, d / f"group-{r}.db")) as eng:
            t0 = time.perf_counter()
            causes = eng.triage.causes()
            list_s.append(time.perf_counter() - t0)
            assert len(causes) == 1 and len(causes[0].runs) == n, causes
            t0 = time.perf_counter()
            res = eng.triage.decide_many([], "approve", reason="the new tax table is right", cause=causes[0].cause)
            group_s.append(time.perf_counter() - t0)
            assert len(res.decided) == n and not res.skipped
        with Engine(_copy(src, d / f"single-{r}.db")) as eng:
            ids = list(causes[0].runs)
            t0 = time.perf_counter()
            for rid in ids:
                eng.decide(rid, "approve", reason="the new tax table is right")
            single_s.append(time.perf_counter() - t0)
        raw_s.append(_raw_inserts(_copy(src, d / f"raw-{r}.db"), ids))
    G, S, R, L = median(group_s), median(single_s), median(raw_s), median(list_s)
    tgt, met = at_most(G / S, 0.5)
    ms_tgt, ms_met = below(G * 1000, 1000, " ms")
    return [
        Figure(
            f"decide --cause, {n} runs / {n} single decides",
            G / S,
            "x",
            tgt,
            met,
            group="10 batch",
            baseline=f"the same {n} runs decided one at a time (Engine.decide, a transaction each): {S * 1000:.0f} ms",
            detail=(
                f"Engine.triage.decide_many(cause=...): {G * 1000:.0f} ms for {n} runs ({G / n * 1e6:.0f} us a run): the "
                f"cause looked up, each run's view built and fitted, {n} decision rows in one transaction; a raw "
                f"sqlite3 transaction of {n} decision inserts and run updates: {R * 1000:.1f} ms"
            ),
            samples=[a / b for a, b in zip(group_s, single_s, strict=True)],
        ),
        Figure(
            f"decide --cause, {n} runs",
            G * 1000,
            "ms",
            ms_tgt,
            ms_met,
            group="10 batch",
            detail="in-process, without the command line's start (`phasegate status cold start` is that figure)",
            samples=[s * 1000 for s in group_s],
        ),
        Figure(
            f"status --by-cause, {n} blocked runs",
            L * 1000,
            "ms",
            None,
            None,
            group="10 batch",
            detail="Engine.triage.causes(): one indexed read of the runs that need attention, a view per run for what fits",
            samples=[s * 1000 for s in list_s],
        ),
    ]


def _raw_inserts(path: Path, ids: list[str]) -> float:
    """The least a group decision must write: one transaction of a decision
    row and a run update per run, through sqlite3, nothing checked."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA synchronous=FULL")
        t0 = time.perf_counter()
        con.execute("BEGIN IMMEDIATE")
        now = time.time()
        for rid in ids:
            con.execute(
                "INSERT INTO phasegate_decisions (run_id, action, reason, operator, at, state, detail_json, batch_id)"
                " VALUES (?, 'approve', 'raw', 'bench', ?, 'pending', '{}', 'b-raw')",
                (rid, now),
            )
            con.execute("UPDATE phasegate_runs SET updated_at = ?, attention = 'decided' WHERE run_id = ?", (now, rid))
        con.execute("COMMIT")
        return time.perf_counter() - t0
    finally:
        con.close()
