"""OpenTelemetry as its conventions say, read from the SDK's in-memory
exporter: a failed, a blocked and an in-doubt run end with status ERROR, an
`exception` event and `error.type`; an effect's span is current while its
function runs, so an instrumented HTTP client's request to a loopback server
carries that span's id in `traceparent`; `opentelemetry-instrument -- phasegate
...` traces a run; tracing asked for without a provider says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from engine_harness import BILLING_FILE, HERE_WORKFLOWS, ROOT, Harness

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from phasegate import Engine  # noqa: E402
from phasegate.authoring.loader import load  # noqa: E402
from phasegate.ops import trace_runs  # noqa: E402


class Traced:
    """Runs in this process, traced into memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self._stop = trace_runs(self.provider)

    def close(self) -> None:
        self._stop()
        self.provider.shutdown()

    def spans(self, name: str) -> list[Any]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Traced, Harness]]:
    h = Harness(tmp_path)
    for k, v in h.env.items():
        monkeypatch.setenv(k, v)
    t = Traced()
    yield t, h
    t.close()


def _exception_event(span: Any) -> dict[str, Any]:
    (event,) = [e for e in span.events if e.name == "exception"]
    return dict(event.attributes)


def test_a_failed_run_and_its_phase_are_errors(traced: tuple[Traced, Harness]) -> None:
    t, h = traced
    with Engine(h.target) as eng:
        outcome = eng.run(load(f"{HERE_WORKFLOWS / 'flaky.py'}:wf"), "f1")
    assert outcome.status.value == "failed"
    (run,) = t.spans("phasegate.run flaky")
    (phase,) = t.spans("phasegate.phase divide")
    for span in (run, phase):
        assert span.status.status_code is StatusCode.ERROR, span.name
        assert "division by zero" in (span.status.description or "")
        assert span.attributes["error.type"] == "ZeroDivisionError"
        ev = _exception_event(span)
        assert ev["exception.type"] == "ZeroDivisionError" and "division by zero" in ev["exception.message"]
    (ok,) = t.spans("phasegate.phase gather")
    assert ok.status.status_code is StatusCode.UNSET and not ok.events


STEPS = """
from phasegate import Workflow

wf = Workflow("steps")


def lookup(n: int) -> int:
    if n == 2:
        raise LookupError(f"no row {n}")
    return n


@wf.phase()
def read(ctx) -> list[int]:
    return [ctx.step(f"row:{n}", lookup, n, durable=True) for n in (1, 2)]
"""


def test_a_failed_durable_step_is_an_error(traced: tuple[Traced, Harness]) -> None:
    t, h = traced
    (h.tmp / "steps.py").write_text(STEPS)
    with Engine(h.target) as eng:
        outcome = eng.run(load(f"{h.tmp / 'steps.py'}:wf"), "s1")
    assert outcome.status.value == "failed"
    steps = {s.attributes["phasegate.step.key"]: s for s in t.spans("phasegate.step")}
    assert set(steps) == {"row:1", "row:2"}
    assert steps["row:1"].status.status_code is StatusCode.UNSET
    bad = steps["row:2"]
    assert bad.status.status_code is StatusCode.ERROR and bad.attributes["error.type"] == "LookupError"
    assert _exception_event(bad)["exception.type"] == "LookupError"
    (phase,) = t.spans("phasegate.phase read")
    assert bad.parent is not None and bad.parent.span_id == phase.context.span_id


def test_a_blocked_in_doubt_run_is_an_error_of_its_kind(traced: tuple[Traced, Harness]) -> None:
    t, h = traced
    assert h.run("d1", kill="after:charge:inv-1").killed
    with Engine(h.target, create=False) as eng:
        outcome = eng.run(load(f"{BILLING_FILE}:wf"), "d1")
    assert outcome.status.value == "blocked"
    (run,) = t.spans("phasegate.run test-billing")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "in_doubt_effect"
    assert _exception_event(run)["exception.type"] == "in_doubt_effect"
    (doubt,) = [s for s in t.spans("phasegate.effect") if s.attributes.get("phasegate.effect.in_doubt")]
    assert doubt.status.status_code is StatusCode.ERROR and doubt.attributes["error.type"] == "in_doubt_effect"
    assert doubt.attributes["phasegate.effect.key"] == "d1/charge/charge:inv-1"
    # Span names carry no ids: those are attributes.
    names = {s.name for s in t.exporter.get_finished_spans()}
    assert not [n for n in names if "d1" in n or "inv-" in n], names


EDITED = """
from phasegate import Workflow

wf = Workflow("edited")


@wf.phase()
def load(ctx) -> int:
    return LOADED


@wf.phase()
def use(ctx) -> int:
    return ctx.inputs["n"] // 0
"""


def test_a_run_blocked_for_a_person_is_an_error_of_its_kind(traced: tuple[Traced, Harness]) -> None:
    """Not only an effect in doubt: a run blocked because the code of a done
    phase changed is an error whose type is that block's kind."""
    t, h = traced
    first, second = h.tmp / "edited_v1.py", h.tmp / "edited_v2.py"
    first.write_text(EDITED.replace("LOADED", "1"))
    second.write_text(EDITED.replace("LOADED", "2"))
    with Engine(h.target) as eng:
        assert eng.run(load(f"{first}:wf"), "e1", inputs={"n": 1}).status.value == "failed"
    with Engine(h.target, create=False) as eng:
        outcome = eng.run(load(f"{second}:wf"), "e1")
    assert outcome.status.value == "blocked", outcome
    assert [b.kind.value for b in outcome.blocked] == ["env_mismatch"], outcome.blocked
    runs = t.spans("phasegate.run edited")
    assert [r.attributes["error.type"] for r in runs] == ["ZeroDivisionError", "env_mismatch"]
    blocked = runs[1]
    assert blocked.status.status_code is StatusCode.ERROR
    assert "code of done phase load changed" in (blocked.status.description or ""), blocked.status
    ev = _exception_event(blocked)
    assert ev["exception.type"] == "env_mismatch" and "load" in ev["exception.message"]


HTTP_WORKFLOW = """
import os
import urllib.request

from phasegate import Workflow

wf = Workflow("notify")


@wf.phase()
def send(ctx) -> str:
    def post(key: str) -> str:
        req = urllib.request.Request(os.environ["NOTIFY_URL"], data=key.encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.read().decode()

    return ctx.effect("notify", post)
"""


class Loopback:
    """An HTTP server on 127.0.0.1 that keeps each request's `traceparent`."""

    def __init__(self) -> None:
        self.traceparents: list[str | None] = []
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                rec.traceparents.append(self.headers.get("traceparent"))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"sent")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/notify"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_effects_http_call_carries_the_effects_span(
    traced: tuple[Traced, Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    urllib_instr = pytest.importorskip("opentelemetry.instrumentation.urllib")
    t, h = traced
    (h.tmp / "notify.py").write_text(HTTP_WORKFLOW)
    server = Loopback()
    monkeypatch.setenv("NOTIFY_URL", server.url)
    instrumentor = urllib_instr.URLLibInstrumentor()
    instrumentor.instrument(tracer_provider=t.provider)
    try:
        with Engine(h.target) as eng:
            outcome = eng.run(load(f"{h.tmp / 'notify.py'}:wf"), "n1")
    finally:
        instrumentor.uninstrument()
        server.close()
    assert outcome.status.value == "completed", outcome
    (effect,) = t.spans("phasegate.effect")
    assert effect.attributes["phasegate.outcome"] == "done"
    (client,) = [s for s in t.exporter.get_finished_spans() if s.name.startswith("POST")]
    # The client's span is the effect's child, and the request names the client's span in that trace.
    assert client.parent is not None and client.parent.span_id == effect.context.span_id
    (tp,) = server.traceparents
    assert tp is not None
    _v, trace_hex, span_hex, _flags = tp.split("-")
    assert int(trace_hex, 16) == effect.context.trace_id
    assert int(span_hex, 16) == client.context.span_id


def test_opentelemetry_instrument_traces_a_run_and_no_provider_is_said(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    env = {**os.environ, **h.env, "PYTHONPATH": str(ROOT), "PHASEGATE_OTEL": "1"}
    flaky = f"{HERE_WORKFLOWS / 'flaky.py'}:wf"
    # Without a provider: one warning line, and the run goes on.
    p = subprocess.run(
        [sys.executable, "-m", "phasegate", "run", flaky, "--run-id", "f0", "--db", h.target],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1
    assert "PHASEGATE_OTEL=1 but no OpenTelemetry tracer provider is set up" in p.stderr, p.stderr

    wrapper = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    if wrapper is None:
        pytest.skip("opentelemetry-distro is not installed")
    # The documented form: the wrapper's own flags, `--`, then phasegate's (whose --metrics it would eat).
    cmd = [wrapper, "--traces_exporter", "console", "--metrics_exporter", "none", "--logs_exporter", "none", "--"]
    cmd += [str(Path(sys.executable).parent / "phasegate"), "run", flaky, "--run-id", "f1", "--db", h.target]
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert "no OpenTelemetry tracer provider" not in p.stderr, p.stderr
    assert '"name": "phasegate.run flaky"' in p.stdout, p.stdout[-2000:]
    assert '"status_code": "ERROR"' in p.stdout
    assert '"error.type": "ZeroDivisionError"' in p.stdout
