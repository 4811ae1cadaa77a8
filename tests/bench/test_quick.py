"""The benchmark harness works end to end: a CI-sized run in a child process
writes one JSON row per figure. Nothing here asserts on time: absolute
figures belong to bench/RESULTS.md, not to a shared CI machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT, child_env

REQUIRED = {"name", "value", "unit", "target", "met"}


def test_quick_run_writes_json_rows(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = child_env({"PHASEGATE_BENCH_DIR": str(tmp_path)})
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert isinstance(rows, list) and rows
    for row in rows:
        assert REQUIRED <= set(row), row
        assert isinstance(row["name"], str) and row["name"]
        assert isinstance(row["unit"], str)
        assert row["value"] is None or isinstance(row["value"], int | float)
        assert row["target"] is None or isinstance(row["target"], str)
        assert row["met"] in (True, False, None)
        if row["target"] is None or row["skipped"]:
            assert row["met"] is None, row
        if row["skipped"]:
            assert row["value"] is None, row
        else:
            assert row["value"] is not None, row
    names = {r["name"] for r in rows}
    # Every group of the issue is present, measured or skipped with a reason.
    for prefix in (
        "raw commit",
        "checkpoint",
        "effect",
        "ordinary ctx.step",
        "resume",
        "verify",
        "console first paint",
        "console peak RSS",
        "live latency",
        "phasegate status cold start",
        "PostgreSQL checkpoint",
        "PostgreSQL runs drained",
        "decide --cause",
        "async ctx.step overhead",
        "pause of a live run",
        "cancel of a live run",
        "20 concurrent durable steps",
        "fan-out of 20 effects",
        "keyed seal",
        "trust checks",
        "1 KB checkpoint, metrics on",
        "1 KB checkpoint, traced",
        "10,000-call ctx.progress loop",
        "commits a 10,000-call ctx.progress run adds",
    ):
        assert any(n.startswith(prefix) for n in names), prefix
    # --quick runs no peers; they are reported as skipped, never faked.
    peers = [r for r in rows if "LangGraph" in r["name"] or "DBOS" in r["name"]]
    assert peers and all(r["skipped"] and r["value"] is None for r in peers)
    assert "|" in proc.stdout  # the table was printed
