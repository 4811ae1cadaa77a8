"""Every line of every command's `--log-format json` output on stderr is one
JSON object with the keys log pipelines expect: `run`, `resume`, `worker`,
`watch`, `metrics` and `serve`, their start-up lines and their fatal lines
included; an alert's line carries its run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from engine_harness import HERE_WORKFLOWS, ROOT, Harness

from phasegate.observe.logs import KEYS
from tests.support.waiting import until

FLAKY = f"{HERE_WORKFLOWS / 'flaky.py'}:wf"


def _lines(stderr: str, what: str) -> list[dict[str, Any]]:
    out = []
    for line in stderr.splitlines():
        try:
            got = json.loads(line)
        except ValueError:
            raise AssertionError(f"{what}: not a JSON line: {line!r}") from None
        assert isinstance(got, dict) and tuple(got) == KEYS, (what, got)
        assert got["timestamp"].endswith("Z") and got["level"] in ("debug", "info", "warning", "error", "critical")
        out.append(got)
    return out


class Long:
    """A long-lived command whose stderr is collected until it is stopped."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.out = Path(env["LOG_TO"])
        self.fh = self.out.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phasegate", *args],
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.fh,
            text=True,
        )

    def text(self) -> str:
        return self.out.read_text()

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.fh.close()
        return self.text()


def test_every_commands_json_log_lines_parse(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    seen: dict[str, list[dict[str, Any]]] = {}

    # run: a failing run's lines; resume: the same run again after a rewind.
    p = h.cli("run", FLAKY, "--run-id", "f1", "--log-format", "json", real=True)
    assert p.returncode == 1
    seen["run"] = _lines(p.stderr, "run")
    assert h.decide("f1", "rewind", "--phase", "divide", reason="again").returncode == 0
    p = h.cli("resume", "f1", "--log-format", "json", "-v", real=True)
    assert p.returncode == 1
    seen["resume"] = _lines(p.stderr, "resume")
    # A refused command's fatal line, and argparse's refusal, are JSON too.
    p = h.cli(
        "run", FLAKY, "--run-id", "f9", "--input-file", str(tmp_path / "none.json"), "--log-format", "json", real=True
    )
    assert p.returncode == 2
    seen["fatal"] = _lines(p.stderr, "fatal")
    assert seen["fatal"][-1]["logger"] == "phasegate.cli" and seen["fatal"][-1]["level"] == "error"
    p = h.cli("resume", "--log-format", "json", "--no-such-flag", real=True)
    assert p.returncode == 2
    assert _lines(p.stderr, "argparse")

    # worker: one pass over the rewound run, with metrics (its start-up line).
    assert h.decide("f1", "rewind", "--phase", "divide", reason="again").returncode == 0
    p = h.cli("worker", "--once", "--log-format", "json", "--metrics", "127.0.0.1:0", real=True)
    assert p.returncode == 0, p
    seen["worker"] = _lines(p.stderr, "worker")
    assert any(r["message"].startswith("metrics on http://127.0.0.1:") for r in seen["worker"])

    # watch: a webhook that fails, so its alert lines are logged: each names its run.
    p = h.cli(
        "watch",
        "--webhook",
        "http://127.0.0.1:9/nothing",
        "--retries",
        "1",
        "--backoff",
        "0.01",
        "--once",
        "--log-format",
        "json",
        real=True,
    )
    seen["watch"] = _lines(p.stderr, "watch")
    alert_lines = [r for r in seen["watch"] if "webhook" in r["message"]]
    assert alert_lines and all(r["run_id"] == "f1" and r["workflow"] == "flaky" for r in alert_lines), seen["watch"]

    # metrics, on a store that does not exist yet: its start-up and store-down lines.
    env = {**h.env, "LOG_TO": str(tmp_path / "metrics.log")}
    m = Long(["metrics", "--listen", "127.0.0.1:0", "--log-format", "json", "--db", str(tmp_path / "none.db")], env)
    until(lambda: "metrics on http" in m.text(), "metrics to start")
    url = json.loads(m.text().splitlines()[0])["message"].removeprefix("metrics on ")
    urllib.request.urlopen(url, timeout=10).read()
    until(lambda: "store down" in m.text(), "the store-down line")
    seen["metrics"] = _lines(m.stop(), "metrics")

    # serve: the console over HTTP, started and stopped.
    pytest.importorskip("textual_serve", reason="the web extra is not installed")
    env = {**h.env, "LOG_TO": str(tmp_path / "serve.log")}
    s = Long(["serve", "--db", h.target, "--port", "0", "--log-format", "json"], env)
    assert s.proc.stdout is not None
    served = s.proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    assert served.startswith("http://127.0.0.1:"), served
    # A request without the token: refused, and logged.
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen("/".join(served.split("/")[:3]) + "/not-the-token/", timeout=10)
    until(lambda: "no valid token" in s.text(), "serve to log the refusal")
    seen["serve"] = _lines(s.stop(), "serve")

    for name, got in seen.items():
        assert got, f"{name} logged nothing"
    # The run's own lines know the run, its workflow and the phase.
    failed = [r for r in seen["run"] + seen["resume"] + seen["worker"] if r["level"] == "error" and r["run_id"]]
    assert failed and all(r == {**r, "run_id": "f1", "workflow": "flaky", "phase": "divide"} for r in failed), failed


def test_json_lines_carry_the_current_span(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    h = Harness(tmp_path)
    code = (
        "import sys\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "trace.set_tracer_provider(TracerProvider())\n"
        "from phasegate.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "run", FLAKY, "--run-id", "f1", "--log-format", "json", "--db", h.target],
        env={**os.environ, **h.env, "PYTHONPATH": str(ROOT), "PHASEGATE_OTEL": "1"},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1, p.stderr
    lines = _lines(p.stderr, "traced run")
    failed = [r for r in lines if r["run_id"] == "f1" and r["level"] == "error"]
    assert failed and all(len(r["trace_id"] or "") == 32 and len(r["span_id"] or "") == 16 for r in failed), lines
    assert h.status("f1")["trace_id"] == failed[0]["trace_id"]
