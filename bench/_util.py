"""What every figure group shares: the row format, medians, scratch folders."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: At least this many runs behind every median (the issue's floor).
RUNS = 5


@dataclass
class Figure:
    """One row of the results table and of `--json`."""

    name: str
    value: float | None
    unit: str
    target: str | None = None
    """The target as printed ("<= 1.3x"), None where the issue sets none."""
    met: bool | None = None
    """True or False against the target; None without a target or when skipped."""
    group: str = ""
    baseline: str | None = None
    """What the value is a ratio of, or what it was measured beside."""
    detail: str = ""
    """The absolute numbers behind a ratio, durability, how it was measured."""
    skipped: str | None = None
    """Why the figure could not be measured (a peer not installed, ...)."""
    samples: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["samples"] = [round(s, 6) for s in self.samples]
        return d


def at_most(value: float | None, limit: float, unit: str = "x") -> tuple[str, bool | None]:
    return f"<= {limit:g}{unit}", None if value is None else value <= limit


def at_least(value: float | None, limit: float, unit: str = "") -> tuple[str, bool | None]:
    return f">= {limit:g}{unit}", None if value is None else value >= limit


def below(value: float | None, limit: float, unit: str = "") -> tuple[str, bool | None]:
    return f"< {limit:g}{unit}", None if value is None else value < limit


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def repeat(fn: Callable[[], float], runs: int = RUNS) -> list[float]:
    """`runs` results of `fn` (each itself a per-run figure), in order."""
    return [fn() for _ in range(runs)]


def now() -> float:
    return time.perf_counter()


@contextmanager
def scratch(prefix: str = "pgbench-") -> Iterator[Path]:
    """A scratch folder on the same disk as the real stores would be (not tmpfs),
    because fsync cost is the thing measured."""
    with scratch_in(Path(os.environ.get("PHASEGATE_BENCH_DIR") or _disk_tmp()), prefix) as path:
        yield path


@contextmanager
def scratch_in(base: Path, prefix: str = "pgbench-") -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _disk_tmp() -> str:
    """/tmp unless it is a tmpfs (where fsync is free and the figures lie)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return tempfile.gettempdir()
    fs = {line.split()[1]: line.split()[2] for line in mounts if len(line.split()) > 2}
    tmp = tempfile.gettempdir()
    if fs.get(tmp) == "tmpfs":
        here = Path(__file__).resolve().parent.parent / ".bench-tmp"
        here.mkdir(exist_ok=True)
        return str(here)
    return tmp


def fs_type(path: Path) -> str:
    """The filesystem a path lives on, for the machine section of the report."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    best = ("", "unknown")
    p = str(path.resolve())
    for m in mounts:
        if len(m) > 2 and p.startswith(m[1]) and len(m[1]) > len(best[0]):
            best = (m[1], m[2])
    return best[1]
