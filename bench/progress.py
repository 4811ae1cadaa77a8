"""Group 15, progress (#42): what `ctx.progress` costs a phase that reports
at every item of a 10,000-item loop, and how many commits it adds.

Two runs of one workflow, alternated on fresh stores: its phase loops over
10,000 items, each a sha256 of 1 KB (the smallest real work an item does:
a parse, a hash, a row built), once with no progress and once with
`ctx.progress(i + 1, 10000, ...)` after every item. The ratio is the median
of the rounds' ratios (whole runs: start, loop, checkpoint). Commits are
counted in the store's write-ahead log, not by phasegate's own code: a WAL
frame that ends a transaction records the database's size (the WAL's
format), so each run's count is every transaction it committed.
"""

from __future__ import annotations

import hashlib
import struct
import time
from pathlib import Path
from typing import Any

from phasegate import Engine, PhaseContext, Workflow

from ._util import Figure, below, median, scratch

ITEMS = 10_000
_BLOB = b"x" * 1024


def _workflow(report: bool) -> Workflow:
    wf = Workflow("bench-progress" if report else "bench-plain")

    @wf.phase()
    def loop(ctx: PhaseContext) -> dict[str, Any]:
        last = ""
        for i in range(ITEMS):
            last = hashlib.sha256(_BLOB + i.to_bytes(4, "little")).hexdigest()
            if report:
                ctx.progress(i + 1, ITEMS, "hashing")
        return {"last": last}

    return wf


def wal_commits(db: Path) -> int:
    """Transactions in an SQLite store's WAL (read while the store is open:
    closing it checkpoints and removes the file). A commit frame's header
    holds the database size after the commit; other frames hold 0. Only the
    WAL's current generation is counted: keep a count under SQLite's
    automatic checkpoint (1,000 pages) or it starts over."""
    wal = Path(str(db) + "-wal")
    if not wal.exists():
        return 0
    data = wal.read_bytes()
    if len(data) < 32:
        return 0
    page = struct.unpack(">I", data[8:12])[0]
    salt = data[16:24]
    n, off = 0, 32
    while off + 24 + page <= len(data):
        size = struct.unpack(">I", data[off + 4 : off + 8])[0]
        if data[off + 8 : off + 16] != salt:
            break  # frames of an earlier generation of the WAL
        n += size != 0
        off += 24 + page
    return n


def _one(d: Path, report: bool, i: int) -> tuple[float, int]:
    db = d / f"{'p' if report else 'plain'}-{i}.db"
    with Engine(str(db)) as eng:
        wf = _workflow(report)
        before = wal_commits(db)
        t0 = time.perf_counter()
        eng.run(wf, f"r{i}", {})
        took = time.perf_counter() - t0
        return took, wal_commits(db) - before


def run(quick: bool, rounds: int) -> list[Figure]:
    ratios: list[float] = []
    plain_t: list[float] = []
    prog_t: list[float] = []
    commits: dict[bool, list[int]] = {False: [], True: []}
    with scratch("pgbench-progress-") as d:
        for i in range(rounds * 2):
            order = [False, True] if i % 2 == 0 else [True, False]
            got: dict[bool, float] = {}
            for report in order:
                t, c = _one(Path(d), report, i)
                got[report] = t
                commits[report].append(c)
            plain_t.append(got[False])
            prog_t.append(got[True])
            ratios.append(got[True] / got[False])
    ratio = median(ratios)
    tgt, met = below(ratio, 2.0, "x")
    per_call_ns = (median(prog_t) - median(plain_t)) / ITEMS * 1e9
    added = max(commits[True]) - min(commits[False])
    ctgt, cmet = below(added, ITEMS / 100, "")
    return [
        Figure(
            f"{ITEMS:,}-call ctx.progress loop / the same loop without progress",
            ratio,
            "x",
            tgt,
            met,
            group="15 progress",
            baseline=f"no progress: {median(plain_t) * 1e3:.1f} ms a run ({ITEMS:,} items, a sha256 of 1 KB each)",
            detail=f"with progress {median(prog_t) * 1e3:.1f} ms a run; about {per_call_ns:.0f} ns a call;"
            f" whole runs (start, loop, checkpoint), alternated on fresh stores, median of {len(ratios)} ratios",
            samples=ratios,
        ),
        Figure(
            f"commits a {ITEMS:,}-call ctx.progress run adds",
            float(added),
            "commits",
            ctgt,
            cmet,
            group="15 progress",
            baseline=f"no progress: {min(commits[False])}-{max(commits[False])} commits a run",
            detail=f"with progress: {min(commits[True])}-{max(commits[True])} commits a run (counted in the WAL's"
            " commit frames); a report is written at most twice a second, riding with the run's next"
            " transaction where there is one",
        ),
    ]
