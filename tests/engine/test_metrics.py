"""`phasegate worker --metrics 127.0.0.1:0`: a real worker resumes runs that
end completed, failed, and blocked on an effect in doubt; its `/metrics` is
scraped over HTTP and read with Prometheus's own text parser."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from typing import Any

import pytest
from engine_harness import HERE_WORKFLOWS, ROOT, Harness

pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from tests.support.waiting import until

FLAKY = f"{HERE_WORKFLOWS / 'flaky.py'}:wf"


class Served:
    """A long-lived `python -m phasegate ...` whose stderr is read as it comes,
    and the metrics URL it printed there."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phasegate", *args],
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = until(self._url, "the metrics URL on stderr")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def _url(self) -> str | None:
        if self.proc.poll() is not None:
            raise AssertionError(f"exited {self.proc.returncode}: {self.lines}")
        for line in list(self.lines):
            m = re.search(r"metrics on (http://127\.0\.0\.1:\d+/metrics)", line)
            if m:
                return m.group(1)
        return None

    def scrape(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        with urllib.request.urlopen(self.url, timeout=10) as resp:
            text = resp.read().decode()
        out = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        self._reader.join(timeout=5)
        return rc


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_worker_counts_what_it_resumed(tmp_path: Any) -> None:
    h = Harness(tmp_path)
    # Three runs left for the worker: killed before charging (it completes),
    # killed just after a charge reached the gateway (in doubt: blocked), and
    # a failed run rewound by an operator (it fails again).
    assert h.run("c1", kill="start:charge").killed
    assert h.run("d1", kill="after:charge:inv-1").killed
    assert h.cli("run", FLAKY, "--run-id", "f1").returncode == 1
    assert h.decide("f1", "rewind", "--phase", "divide", reason="try the fix").returncode == 0

    # Each charge sleeps, so the worker's heartbeat (every third of a 1.5 s lease) beats.
    env = {**h.env, "PHASEGATE_LEASE_SECONDS": "1.5", "PHASEGATE_TEST_SLOW": "0.4"}
    w = Served(["worker", "--metrics", "127.0.0.1:0", "--poll", "0.2", "--db", h.target], env)
    try:
        until(
            lambda: (
                (h.status("c1")["status"], h.status("d1")["status"], h.status("f1")["status"])
                == ("completed", "blocked", "failed")
            ),
            "the worker to resume the three runs",
        )
        m = until(
            lambda: (
                (s := w.scrape())
                and value(s, "phasegate_run_attempts_ended_total", workflow="flaky", outcome="failed")
                and s
            ),
            "the last run's end to be counted",
        )
    finally:
        assert w.stop() == 0, w.lines

    assert value(m, "phasegate_run_attempts_total", workflow="test-billing") == 2
    assert value(m, "phasegate_run_attempts_total", workflow="flaky") == 1
    assert value(m, "phasegate_runs_resumed_total", workflow="test-billing") == 2
    assert value(m, "phasegate_runs_resumed_total", workflow="flaky") == 1
    # The two killed runs' leases were their dead processes': taken over. The
    # rewound run's lease had been released when it failed.
    assert value(m, "phasegate_lease_takeovers_total", workflow="test-billing") == 2
    assert value(m, "phasegate_lease_takeovers_total", workflow="flaky") == 0
    assert value(m, "phasegate_run_attempts_ended_total", workflow="test-billing", outcome="completed") == 1
    assert value(m, "phasegate_run_attempts_ended_total", workflow="test-billing", outcome="blocked") == 1

    # c1 ran charge and report; d1 stopped at its start (the planner found the doubt).
    assert value(m, "phasegate_phases_run_total", workflow="test-billing", phase="charge") == 1
    assert value(m, "phasegate_phases_run_total", workflow="test-billing", phase="report") == 1
    assert value(m, "phasegate_phases_failed_total", workflow="test-billing", phase="charge") == 0
    assert value(m, "phasegate_phases_run_total", workflow="flaky", phase="divide") == 1
    assert value(m, "phasegate_phases_failed_total", workflow="flaky", phase="divide") == 1

    # c1's three invoices charged through the worker; d1's second charge in doubt.
    assert value(m, "phasegate_effects_performed_total", workflow="test-billing") == 3
    assert value(m, "phasegate_effects_in_doubt_total", workflow="test-billing") == 1
    # The heartbeat counter is named for what it counts; the old name, deprecated, says the same.
    assert value(m, "phasegate_lease_renewals_total") >= 1
    assert value(m, "phasegate_heartbeats_total") == value(m, "phasegate_lease_renewals_total")

    # Histograms: one observation per phase run and per checkpoint, labelled
    # by workflow and phase (never a run id); the slow charges took their time.
    assert value(m, "phasegate_phase_duration_seconds_count", workflow="test-billing", phase="charge") == 1
    assert value(m, "phasegate_phase_duration_seconds_sum", workflow="test-billing", phase="charge") >= 1.2
    assert value(m, "phasegate_phase_duration_seconds_count", workflow="flaky", phase="divide") == 1
    assert value(m, "phasegate_checkpoint_commit_seconds_count", workflow="test-billing", phase="charge") == 1
    assert value(m, "phasegate_checkpoint_commit_seconds_count", workflow="test-billing", phase="report") == 1
    assert value(m, "phasegate_checkpoint_commit_seconds_count", workflow="flaky", phase="divide") == 0
    assert not [k for k in m if any(label == "run_id" for label, _ in k[1])]


def test_metrics_refuse_a_remote_address_without_the_flag(tmp_path: Any) -> None:
    h = Harness(tmp_path)
    p = h.cli("worker", "--once", "--metrics", "0.0.0.0:0")
    assert p.returncode == 2 and "not a loopback address; add --allow-remote" in p.stderr, p
    assert "Traceback" not in p.stderr
    p = h.cli("metrics", "--listen", "nonsense")
    assert p.returncode == 2 and "is not HOST:PORT" in p.stderr, p


def test_a_watch_counts_the_alerts_it_sent(tmp_path: Any) -> None:
    h = Harness(tmp_path)
    out = tmp_path / "alerts.jsonl"
    assert h.cli("run", FLAKY, "--run-id", "f1").returncode == 1
    w = Served(
        ["watch", "--exec", f"cat >> {out}", "--metrics", "127.0.0.1:0", "--poll", "0.2", "--db", h.target], h.env
    )
    try:
        m = until(lambda: (s := w.scrape()) and value(s, "phasegate_alerts_sent_total") and s, "the alert counted")
    finally:
        assert w.stop() == 0, w.lines
    assert value(m, "phasegate_alerts_sent_total") == 1 and value(m, "phasegate_alerts_failed_total") == 0
    assert json.loads(out.read_text())["run_id"] == "f1"


def test_forged_label_values_in_the_store_are_counted_as_other(tmp_path: Any) -> None:
    """Someone who can write the store forges 300 block kinds, a status and a
    wait kind: `phasegate metrics` still serves only the label values the
    code defines, and counts the rest as `other` (300 kinds must not make 300 series)."""
    h = Harness(tmp_path)
    assert h.run("d1", kill="after:charge:inv-1").killed
    assert h.resume("d1").returncode != 0
    assert h.status("d1")["status"] == "blocked"
    assert h.run("c1").returncode == 0
    assert h.run("c2").returncode == 0
    forged = json.dumps([{"kind": f"forged-{i}", "message": "x", "data": {}} for i in range(300)])
    h.sql("UPDATE phasegate_runs SET blocked_json = ? WHERE run_id = 'd1'", (forged,))
    h.sql("UPDATE phasegate_runs SET status = 'forged-status' WHERE run_id = 'c1'")
    h.sql(
        "UPDATE phasegate_runs SET status = 'waiting', waiting_json = ? WHERE run_id = 'c2'",
        (json.dumps({"kind": "forged-wait"}),),
    )

    w = Served(["metrics", "--listen", "127.0.0.1:0", "--db", h.target], h.env)
    try:
        m = until(lambda: (s := w.scrape()) and value(s, "phasegate_store_up") == 1 and s, "a scrape of the store")
    finally:
        assert w.stop() == 0, w.lines

    def label_values(name: str, label: str) -> set[str]:
        return {dict(k[1])[label] for k in m if k[0] == name}

    from phasegate.states import BlockKind, RunStatus, WaitKind

    assert label_values("phasegate_runs_blocked", "kind") == {k.value for k in BlockKind} | {"other"}
    assert value(m, "phasegate_runs_blocked", kind="other") == 300
    assert label_values("phasegate_runs", "status") <= {s.value for s in RunStatus} | {"other", "interrupted"}
    assert value(m, "phasegate_runs", status="other") == 1
    assert label_values("phasegate_oldest_waiting_seconds", "kind") == {k.value for k in WaitKind} | {"other"}
    assert value(m, "phasegate_oldest_waiting_seconds", kind="other") > 0
    assert len(m) < 80, sorted(m)
