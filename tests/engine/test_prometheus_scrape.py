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
