"""Figure 9: `phasegate status` cold start. A fresh interpreter runs
`python -m phasegate status --db STORE` (imports, store opened, the runs
listed, exit), against `python -c pass` started beside it: each pair is
measured back to back, the figure is the median of the per-pair ratios."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ._util import Figure, at_most, median


def _once(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def run(quick: bool, rounds: int, store: Path) -> list[Figure]:
    status = [sys.executable, "-m", "phasegate", "status", "--db", str(store)]
    bare = [sys.executable, "-c", "pass"]
    _once(status)  # the page cache warm for both, as for a user's second command
    pairs = 10 if quick else 30
    s: list[float] = []
    b: list[float] = []
    for _ in range(max(pairs, rounds)):
        b.append(_once(bare))
        s.append(_once(status))
    ratios = [x / y for x, y in zip(s, b, strict=True)]
    r = median(ratios)
    tgt, met = at_most(r, 10)
    return [
        Figure(
            "phasegate status cold start / python -c pass",
            r,
            "x",
            tgt,
            met,
            group="9 cli start",
            baseline=f"python -c pass: {median(b) * 1000:.0f} ms (median)",
            detail=(
                f"python -m phasegate status --db STORE: {median(s) * 1000:.0f} ms (median) over a store of "
                f"its own, {len(s)} pairs run back to back; ratio = median of the per-pair ratios"
            ),
            samples=ratios,
        ),
        Figure("phasegate status cold start", median(s) * 1000, "ms", None, None, group="9 cli start", samples=s),
    ]
