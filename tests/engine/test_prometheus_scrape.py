"""A real Prometheus server (Debian's `prometheus` package; .ci/run installs
it) scrapes `phasegate metrics`, and its HTTP API answers a query for the
runs-by-status gauge. No Prometheus: skipped with the reason, except under
CI=true, where a missing server is a broken setup and fails the test."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from engine_harness import HERE_WORKFLOWS, ROOT, Harness

from tests.support.waiting import until

pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")


def _prometheus() -> str:
    found = shutil.which("prometheus")
    if found is None:
        reason = "no prometheus server installed (apt-get install prometheus)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {reason}")
        pytest.skip(reason)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            got = json.loads(resp.read())
    except OSError:
        return []  # not listening yet
    assert got["status"] == "success", got
    return list(got["data"]["result"])


def test_prometheus_scrapes_the_store_gauges(tmp_path: Path) -> None:
    binary = _prometheus()
    h = Harness(tmp_path)
    assert h.run("c1").returncode == 0
    assert h.run("c2").returncode == 0
    assert h.cli("run", f"{HERE_WORKFLOWS / 'flaky.py'}:wf", "--run-id", "f1").returncode == 1

    gauges = subprocess.Popen(
        [sys.executable, "-m", "phasegate", "metrics", "--listen", "127.0.0.1:0", "--db", h.target],
        env={**os.environ, **h.env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    prom: subprocess.Popen[bytes] | None = None
    try:
        assert gauges.stderr is not None
        m = re.search(r"metrics on http://(127\.0\.0\.1:\d+)/metrics", gauges.stderr.readline())
        assert m, "phasegate metrics did not say where it listens"
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n"
            f"scrape_configs:\n  - job_name: phasegate\n    static_configs:\n      - targets: ['{m.group(1)}']\n"
        )
        port = _free_port()
        prom = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"

        def scraped() -> list[dict[str, Any]]:
            assert prom.poll() is None, "prometheus exited"
            return _query(base, 'phasegate_runs{job="phasegate"}')

        result = until(scraped, "Prometheus to scrape phasegate_runs", timeout=90, every=0.3)
        by_status = {r["metric"]["status"]: float(r["value"][1]) for r in result}
        assert by_status["completed"] == 2 and by_status["failed"] == 1, by_status
        assert by_status["blocked"] == 0
        assert float(_query(base, "phasegate_store_up")[0]["value"][1]) == 1
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(timeout=30)
        gauges.terminate()
        gauges.wait(timeout=30)


MONITORING = ROOT / "monitoring"


def _firing(base: str) -> set[tuple[str, str]]:
    """(alert name, workflow) of every firing alert, by Prometheus's API."""
    try:
        with urllib.request.urlopen(f"{base}/api/v1/alerts", timeout=5) as resp:
            got = json.loads(resp.read())
    except OSError:
        return set()
    return {
        (a["labels"]["alertname"], a["labels"].get("workflow", ""))
        for a in got["data"]["alerts"]
        if a["state"] == "firing"
    }


def test_the_shipped_increase_rules_fire_on_the_first_event(tmp_path: Path) -> None:
    """A real worker, started on a store that knows its workflows, serves its
    counters at 0; Prometheus scrapes that, then the first in-doubt effect,
    the first failure and the first takeover each fire the shipped rule."""
    binary = _prometheus()
    h = Harness(tmp_path)
    # The store knows both workflows before the worker starts.
    assert h.run("c0").returncode == 0
    assert h.cli("run", f"{HERE_WORKFLOWS / 'flaky.py'}:wf", "--run-id", "f0").returncode == 1
    worker = subprocess.Popen(
        [sys.executable, "-m", "phasegate", "worker", "--metrics", "127.0.0.1:0", "--poll", "0.2", "--db", h.target],
        env={**os.environ, **h.env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    prom: subprocess.Popen[bytes] | None = None
    try:
        assert worker.stderr is not None
        m = re.search(r"metrics on http://(127\.0\.0\.1:\d+)/metrics", worker.stderr.readline())
        assert m, "the worker did not say where it listens"
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 500ms\n  evaluation_interval: 500ms\n"
            f"rule_files: ['{MONITORING / 'alerts.yml'}']\n"
            f"scrape_configs:\n  - job_name: worker\n    static_configs:\n      - targets: ['{m.group(1)}']\n"
        )
        port = _free_port()
        prom = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"

        def values(promql: str) -> list[float]:
            assert prom is not None and prom.poll() is None, "prometheus exited"
            return [float(r["value"][1]) for r in _query(base, promql)]

        # Before any event: each series Prometheus will need is there, at 0, and scraped twice.
        for series in (
            'phasegate_effects_in_doubt_total{workflow="test-billing"}',
            'phasegate_lease_takeovers_total{workflow="test-billing"}',
            'phasegate_run_attempts_ended_total{workflow="flaky",outcome="failed"}',
        ):
            until(lambda s=series: values(f"count_over_time({s}[1m])") >= [2.0], f"{series} scraped twice")
            assert values(series) == [0.0], series
        assert _firing(base) == set()

        # The events: a run killed just after a charge reached the gateway (the
        # worker takes its dead holder's lease over and finds the charge in
        # doubt), and a failed run rewound (the worker runs it; it fails again).
        assert h.run("d1", kill="after:charge:inv-1").killed
        assert h.cli("run", f"{HERE_WORKFLOWS / 'flaky.py'}:wf", "--run-id", "f1").returncode == 1
        assert h.decide("f1", "rewind", "--phase", "divide", reason="try again").returncode == 0

        want = {
            ("PhasegateEffectInDoubt", "test-billing"),
            ("PhasegateLeaseTakeover", "test-billing"),
            ("PhasegateRunFailed", "flaky"),
        }
        fired = until(lambda: (f := _firing(base)) >= want and f, "the three alerts to fire", timeout=90, every=0.3)
        assert fired == want, fired
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(timeout=30)
        worker.terminate()
        worker.wait(timeout=30)


def test_the_shipped_rules_pass_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        reason = "no promtool installed (apt-get install prometheus)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {reason}")
        pytest.skip(reason)
    check = subprocess.run([promtool, "check", "rules", str(MONITORING / "alerts.yml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 9 rules found" in check.stdout, check.stdout
    tested = subprocess.run(
        [promtool, "test", "rules", "alerts-test.yml"], cwd=MONITORING, capture_output=True, text=True
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout
