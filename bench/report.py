"""The results table, printed and as `--json` rows, and the machine it ran on."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ._util import Figure, fs_type


def machine(scratch_dir: Path) -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory": mem,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "filesystem": f"{fs_type(scratch_dir)} ({scratch_dir})",
        "load average at start": load,
        "versions": {
            n: v(n)
            for n in (
                "phasegate",
                "sqlalchemy",
                "sqlmodel",
                "pydantic",
                "textual",
                "langgraph",
                "langgraph-checkpoint-sqlite",
                "dbos",
            )
        },
    }


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    if unit == "x":
        return f"{x:.2f}x"
    if abs(x) >= 100:
        return f"{x:,.0f} {unit}"
    if abs(x) >= 1:
        return f"{x:.2f} {unit}"
    return f"{x:.3f} {unit}"


def _met(f: Figure) -> str:
    if f.skipped:
        return "skipped"
    if f.met is None:
        return ""
    return "met" if f.met else "MISSED"


def table(figs: list[Figure]) -> str:
    """A Markdown table: readable in a terminal and pasted into RESULTS.md as is."""
    lines = ["| # | figure | value | target | met | baseline / detail |", "|---|---|---|---|---|---|"]
    for f in figs:
        note = f"skipped: {f.skipped}" if f.skipped else "; ".join(x for x in (f.baseline, f.detail) if x)
        lines.append(
            f"| {f.group.split()[0]} | {f.name} | {_fmt(f.value, f.unit)} | {f.target or ''} | {_met(f)} | {note} |"
        )
    return "\n".join(lines)


def write_json(path: Path, figs: list[Figure], meta: dict[str, Any]) -> None:
    rows = [f.as_json() for f in figs]
    path.write_text(json.dumps(rows, indent=1) + "\n")
    meta_path = path.with_name(path.stem + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")


def markdown(figs: list[Figure], meta: dict[str, Any]) -> str:
    """The machine and the table, as bench/RESULTS.md begins."""
    v = meta.get("versions", {})
    lines = [
        "## Machine",
        "",
        f"- CPU: {meta['cpu']} x{meta['cpus']}, memory {meta['memory']}; {meta['os']}",
        f"- Python {meta['python']}, SQLite {meta['sqlite']}; scratch stores on {meta['filesystem']}",
        f"- load average when the run started: {meta['load average at start']} (a shared machine: see the ratios, not the absolute times)",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- {meta['mode']} run, {meta['rounds']} runs behind every median, {meta.get('seconds', '?')} s in all",
        "",
        "## Figures",
        "",
        table(figs),
        "",
    ]
    return "\n".join(lines)
