"""The regression report: the quick bench's ratios against a committed
baseline (`bench/baseline.json`), every line more than `WORSE` worse printed.

A report, never a failure: the machines are shared and noisy, so a line that
moved is a question for the change's closing note, not a red build. Only
ratios (unit "x") are compared, since only a ratio taken within one run means
the same thing on another machine or another minute.

    python -m bench --quick --json out.json           # prints the report after the table
    python -m bench.regress out.json                  # the report of a saved run (what .ci/run may call)
    python -m bench --quick --write-baseline bench/baseline.json   # a new baseline, committed on purpose
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

BASELINE = Path(__file__).resolve().parent / "baseline.json"
"""The committed baseline: `--quick` ratios from one run on the reference machine."""
WORSE = 0.20
"""How much worse than its baseline a line must be to be printed: 20%."""

Better = Literal["lower", "higher"]


class BaselineRow(TypedDict):
    """One line of `bench/baseline.json`."""

    name: str
    value: float
    better: Better
    """Which way is an improvement: from the line's target, else from its name
    (`better_of`); edit it by hand where the guess is wrong."""


@dataclass(frozen=True, slots=True)
class Regression:
    """A line that got more than `WORSE` worse than its baseline."""

    name: str
    baseline: float
    now: float
    better: Better

    @property
    def worse_by(self) -> float:
        """How much worse, as a fraction of the baseline (0.25: 25% worse)."""
        if self.better == "lower":
            return self.now / self.baseline - 1.0
        return self.baseline / self.now - 1.0 if self.now > 0 else float("inf")

    def line(self) -> str:
        """The line the report prints."""
        way = "higher is better" if self.better == "higher" else "lower is better"
        return f"  {self.name}: {self.now:.2f}x, baseline {self.baseline:.2f}x ({self.worse_by:+.0%} worse; {way})"


def better_of(name: str, target: str | None) -> Better:
    """Which way a ratio improves: a target says (">= 0.7x": higher); without
    one, a throughput or a rate is better higher, and every other ratio of this
    bench is a cost over its baseline, better lower.

    Args:
        name: The figure's name.
        target: Its target as printed, or None.

    Returns:
        "lower" or "higher".
    """
    if target:
        return "higher" if target.lstrip().startswith(">") else "lower"
    lowered = name.lower()
    if "throughput" in lowered or "per second" in lowered or "/ hashlib" in lowered:
        return "higher"
    return "lower"


def baseline_rows(rows: Iterable[Mapping[str, Any]]) -> list[BaselineRow]:
    """The baseline to commit from a run's `--json` rows: every measured ratio.

    Args:
        rows: The rows `--json` writes (or `Figure.as_json()` of each).

    Returns:
        One `BaselineRow` per ratio that has a value.
    """
    out: list[BaselineRow] = []
    for r in rows:
        if r.get("unit") != "x" or r.get("skipped") or not isinstance(r.get("value"), int | float):
            continue
        out.append(
            {
                "name": str(r["name"]),
                "value": round(float(r["value"]), 4),
                "better": better_of(r["name"], r.get("target")),
            }
        )
    return out


def write_baseline(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write `baseline_rows(rows)` to `path`, one line per row (diffs read line by line)."""
    lines = [json.dumps(b, sort_keys=True) for b in baseline_rows(rows)]
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n")


def read_baseline(path: Path) -> list[BaselineRow]:
    """The baseline at `path`; rows that are not a named ratio with a direction are left out.

    Raises:
        OSError: it cannot be read.
        ValueError: it is not JSON.
    """
    data = json.loads(path.read_text())
    out: list[BaselineRow] = []
    for r in data if isinstance(data, list) else []:
        if (
            isinstance(r, dict)
            and isinstance(r.get("name"), str)
            and isinstance(r.get("value"), int | float)
            and r.get("better") in ("lower", "higher")
        ):
            out.append({"name": r["name"], "value": float(r["value"]), "better": r["better"]})
    return out


def regressions(
    rows: Iterable[Mapping[str, Any]], baseline: Iterable[BaselineRow], worse: float = WORSE
) -> list[Regression]:
    """Lines of this run more than `worse` worse than their baseline.

    Args:
        rows: This run's rows (`--json`'s, or `Figure.as_json()` of each).
        baseline: The baseline's rows.
        worse: The fraction past which a line is printed.

    Returns:
        The regressions, in the run's order; a line absent from either side is not one.
    """
    base = {b["name"]: b for b in baseline}
    out = []
    for r in rows:
        b = base.get(str(r.get("name")))
        v = r.get("value")
        if b is None or r.get("skipped") or not isinstance(v, int | float) or b["value"] <= 0:
            continue
        reg = Regression(b["name"], b["value"], float(v), b["better"])
        if reg.worse_by > worse:
            out.append(reg)
    return out


def report(rows: Iterable[Mapping[str, Any]], path: Path = BASELINE, worse: float = WORSE) -> str:
    """The report as printed: a heading and one line per regression, or a line saying there is none.

    Args:
        rows: This run's rows.
        path: The baseline file.
        worse: The fraction past which a line is printed.

    Returns:
        The report's text (never raises for a missing or unreadable baseline: it says so).
    """
    try:
        baseline = read_baseline(path)
    except (OSError, ValueError) as exc:
        return f"regression report: no baseline to compare with ({path}: {exc})"
    rows = list(rows)
    found = regressions(rows, baseline, worse)
    compared = len({str(r.get("name")) for r in rows} & {b["name"] for b in baseline})
    if not found:
        return f"regression report: none of {compared} ratios is more than {worse:.0%} worse than {path.name}"
    head = (
        f"regression report: {len(found)} of {compared} ratios more than {worse:.0%} worse than {path.name}"
        " (a report, not a failure: a change that moves a line explains it in its closing note)"
    )
    return "\n".join([head, *(r.line() for r in found)])


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.regress RUN.json [--baseline FILE]`: the report of a saved run; exit 0 always
    (2 only when the run's file cannot be read)."""
    ap = argparse.ArgumentParser(prog="python -m bench.regress", description=main.__doc__)
    ap.add_argument("run", type=Path, help="a run's --json file")
    ap.add_argument("--baseline", type=Path, default=BASELINE)
    ap.add_argument("--worse", type=float, default=WORSE, help="the fraction past which a line is printed (0.2)")
    a = ap.parse_args(argv)
    try:
        rows = json.loads(a.run.read_text())
    except (OSError, ValueError) as exc:
        print(f"python -m bench.regress: cannot read {a.run}: {exc}")
        return 2
    print(report(rows if isinstance(rows, list) else [], a.baseline, a.worse))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
