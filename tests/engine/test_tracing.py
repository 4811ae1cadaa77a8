"""OpenTelemetry spans of a run killed with SIGKILL and resumed: the first
attempt's process exports each span as it ends (to a file: it dies without a
chance to flush), the resume runs in this process inside an application's
span with the SDK's in-memory exporter. Two attempts, each with its phases,
durable steps and effects under it, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from engine_harness import BILLING_FILE, ROOT, Harness

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from phasegate import Engine  # noqa: E402
from phasegate.authoring.loader import load  # noqa: E402
from phasegate.ops import trace_runs  # noqa: E402

#: The first attempt: `phasegate run` in a child traced from its start, each
#: span written down as it ends (a SIGKILL leaves no time for a batch).
CHILD = textwrap.dedent(
    """
    import json, os, sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from phasegate.cli.main import main
    from phasegate.ops import trace_runs

    class ToFile(SpanExporter):
        def export(self, spans):
            with open(sys.argv[1], "a") as fh:
                for s in spans:
                    fh.write(json.dumps({
                        "name": s.name,
                        "trace": format(s.context.trace_id, "032x"),
                        "span": format(s.context.span_id, "016x"),
                        "parent": format(s.parent.span_id, "016x") if s.parent else None,
                        "attrs": dict(s.attributes),
                    }) + "\\n")
                fh.flush()
                os.fsync(fh.fileno())
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ToFile()))
    trace_runs(provider)
    sys.exit(main(sys.argv[2:]))
    """
)


def _tree(spans: list[dict[str, Any]]) -> dict[str, list[str]]:
    """parent span id -> the names of its children, sorted."""
    out: dict[str, list[str]] = {}
    for s in spans:
        out.setdefault(s["parent"], []).append(s["name"])
    return {k: sorted(v) for k, v in out.items()}


def test_a_killed_and_resumed_run_is_two_attempts(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    first = h.tmp / "first-attempt.jsonl"
    target = f"{BILLING_FILE}:wf"
    # An idempotent gateway: the charge killed after its call is simply made again on resume.
    argv = ["run", target, "--run-id", "r1", "--input", h.inputs(idempotent=True), "--db", h.target]
    env = {**h.env, "PHASEGATE_TEST_KILL_AT": "after:charge:inv-1", "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", CHILD, str(first), *argv], env=env, cwd=ROOT, capture_output=True)
    assert p.returncode == -9, p.stderr.decode()[-2000:]

    spans1 = [json.loads(line) for line in first.read_text().splitlines()]
    by_name = {s["name"]: s for s in spans1}
    # The attempt's own span never ended (its process was killed); what did end hangs under it.
    assert "phasegate.run test-billing" not in by_name
    (trace1,) = {s["trace"] for s in spans1}
    attempt1 = by_name["phasegate.phase load"]["parent"]
    assert _tree(spans1)[attempt1] == ["phasegate.lease", "phasegate.phase load", "phasegate.phase price"]
    price, step = by_name["phasegate.phase price"], by_name["phasegate.step"]
    assert step["attrs"]["phasegate.step.key"] == "price_all"
    assert step["parent"] == price["span"] and step["attrs"]["phasegate.phase"] == "price"
    # The charge phase and its second effect never ended; its first effect did, under it.
    (effect,) = [s for s in spans1 if s["name"] == "phasegate.effect" and s["attrs"].get("phasegate.outcome")]
    assert effect["attrs"]["phasegate.effect.key"] == "r1/charge/charge:inv-0"
    assert effect["attrs"]["phasegate.outcome"] == "done" and effect["attrs"]["phasegate.effect.in_doubt"] is False
    assert effect["parent"] not in {s["span"] for s in spans1}  # the charge phase's span, unended
    assert all(s["attrs"]["phasegate.run_id"] == "r1" for s in spans1)
    assert h.status("r1")["trace_id"] == trace1  # stored when the attempt took the lease

    # The resume: in this process, inside an application's span.
    for k, v in h.env.items():
        monkeypatch.setenv(k, v)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stop = trace_runs(provider)
    try:
        with provider.get_tracer("app").start_as_current_span("app: nightly billing") as app:
            with Engine(h.target, create=False) as eng:
                outcome = eng.run(load(target), "r1")
    finally:
        stop()
        provider.shutdown()
    assert outcome.status.value == "completed", outcome

    spans2 = exporter.get_finished_spans()
    names = {s.name: s for s in spans2}
    run = names["phasegate.run test-billing"]
    assert run.parent is not None and run.parent.span_id == app.get_span_context().span_id
    assert run.context.trace_id == app.get_span_context().trace_id
    assert run.attributes["phasegate.outcome"] == "completed"
    assert run.attributes["phasegate.resumed"] is True and run.attributes["phasegate.takeover"] is True
    # The link names the first attempt's lease span: one its process exported.
    lease1 = by_name["phasegate.lease"]
    assert [(format(link.context.trace_id, "032x"), format(link.context.span_id, "016x")) for link in run.links] == [
        (trace1, lease1["span"])
    ]
    children = sorted(s.name for s in spans2 if s.parent is not None and s.parent.span_id == run.context.span_id)
    assert children == ["phasegate.lease", "phasegate.phase charge", "phasegate.phase report"]
    charge = names["phasegate.phase charge"]
    under = sorted(s.name for s in spans2 if s.parent is not None and s.parent.span_id == charge.context.span_id)
    # inv-0 was done and recorded: read back, not performed again, so no span.
    assert under == ["phasegate.effect", "phasegate.effect"]
    assert sorted(str(s.attributes["phasegate.effect.key"]) for s in spans2 if s.name == "phasegate.effect") == [
        "r1/charge/charge:inv-1",
        "r1/charge/charge:inv-2",
    ]
    assert all(s.attributes["phasegate.run_id"] == "r1" for s in spans2 if s.name.startswith("phasegate."))
    trace2 = format(run.context.trace_id, "032x")
    assert trace2 != trace1 and h.status("r1")["trace_id"] == trace2


def test_untraced_runs_store_no_trace_id(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    assert h.run("r1").returncode == 0
    assert "trace_id" not in h.status("r1")
    # Asked to trace, with no tracer provider set up: spans record nothing, no id is stored.
    assert h.run("r2", env={"PHASEGATE_OTEL": "1"}).returncode == 0
    assert "trace_id" not in h.status("r2")
