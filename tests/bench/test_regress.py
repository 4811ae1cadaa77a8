"""The quick bench's regression report (#43): every ratio more than 20%
worse than the committed baseline is printed, in either direction a line
improves, and nothing else; it never fails a run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import regress
from tests.support.cli import ROOT, child_env


def _row(name: str, value: float | None, target: str | None = None, unit: str = "x") -> dict[str, object]:
    return {"name": name, "value": value, "unit": unit, "target": target, "met": None, "skipped": None}


def test_lines_more_than_a_fifth_worse_are_reported_whichever_way_they_improve(tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    regress.write_baseline(
        base,
        [
            _row("checkpoint 1KB: phasegate / raw FULL", 1.5, "<= 1.3x"),
            _row("verify throughput / hashlib", 0.5, ">= 0.7x"),
            _row("effect alone", 2.0, "<= 2.3x"),
            _row("resume: 100 / 10", 1.0),
            _row("verify throughput", 800.0, unit="MB/s"),  # not a ratio: not in the baseline
        ],
    )
    assert [b["name"] for b in regress.read_baseline(base)] == [
        "checkpoint 1KB: phasegate / raw FULL",
        "verify throughput / hashlib",
        "effect alone",
        "resume: 100 / 10",
    ]
    now = [
        _row("checkpoint 1KB: phasegate / raw FULL", 1.9, "<= 1.3x"),  # 27% worse
        _row("verify throughput / hashlib", 0.4, ">= 0.7x"),  # 25% worse (lower)
        _row("effect alone", 2.3, "<= 2.3x"),  # 15% worse: within the noise
        _row("resume: 100 / 10", None),  # skipped this time
        _row("a new line", 9.0),  # no baseline yet
    ]
    found = regress.regressions(now, regress.read_baseline(base))
    assert [r.name for r in found] == ["checkpoint 1KB: phasegate / raw FULL", "verify throughput / hashlib"]
    text = regress.report(now, base)
    assert "2 of 4 ratios" in text and "1.90x, baseline 1.50x (+27% worse" in text and "effect alone" not in text
    assert "none of 1 ratios" in regress.report([_row("effect alone", 1.0, "<= 2.3x")], base)


def test_a_missing_or_damaged_baseline_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    assert regress.report([], tmp_path / "bad.json").startswith("regression report: no baseline")
    assert regress.report([], tmp_path / "absent.json").startswith("regression report: no baseline")


def test_the_committed_baseline_holds_ratios_and_the_saved_run_report_exits_zero(tmp_path: Path) -> None:
    rows = regress.read_baseline(regress.BASELINE)
    assert rows and all(r["better"] in ("lower", "higher") for r in rows)
    run = tmp_path / "run.json"
    run.write_text(
        json.dumps([_row(rows[0]["name"], rows[0]["value"] * 10 if rows[0]["better"] == "lower" else 0.001)])
    )
    proc = subprocess.run(
        [sys.executable, "-m", "bench.regress", str(run)],
        cwd=ROOT,
        env=child_env({}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert rows[0]["name"] in proc.stdout and "1 of 1 ratios" in proc.stdout
