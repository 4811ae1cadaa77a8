"""OpenTelemetry spans (the `otel` extra): one per run attempt, and under it
one per phase, durable step and effect.

A run started inside an application's span is that span's child. Each
attempt stores its trace id with the run (the run row's `trace_id`), and the
attempt after it links to it, so a run killed and resumed reads as two
attempts joined by a link. Spans use the application's tracer provider
unless given one; without the SDK configured they cost next to nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..outcome import Outcome
from ..states import BlockKind
from .hooks import Observer

T = TypeVar("T")

log = logging.getLogger("phasegate.observe")

RUN_ID = "phasegate.run_id"
"""The run's id, on every span."""
PHASE = "phasegate.phase"
"""The phase's name, on phase, step and effect spans."""
EFFECT_KEY = "phasegate.effect.key"
"""The effect's key, on an effect's span."""
OUTCOME = "phasegate.outcome"
"""How the attempt, phase or effect ended."""
IN_DOUBT = "phasegate.effect.in_doubt"
"""Whether the effect was in doubt (found unfinished after a crash)."""


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def trace_id_of(span: Any) -> str:
    """A span's trace id as 32 hex digits (how trace back ends spell it).

    Args:
        span: An OpenTelemetry span.

    Returns:
        The hex trace id.
    """
    return format(span.get_span_context().trace_id, "032x")


class TracingObserver(Observer):
    """Turns what the engine reports into spans.

    Args:
        tracer_provider: Where spans go (default: the global one the application set).
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        self.tracer = trace.get_tracer("phasegate", tracer_provider=tracer_provider)
        self._runs: dict[str, Any] = {}
        """run id -> its attempt's span."""
        self._phases: dict[str, Any] = {}
        """run id -> the span of the phase it is in."""

    def capture(self, run_id: str) -> Callable[[], None] | None:
        ctx = otel_context.get_current()
        here = threading.get_ident()

        def enter() -> None:
            # Only in the run's own thread, which ends with the run: attached
            # there for good. In the caller's thread its context is current already.
            if threading.get_ident() != here:
                otel_context.attach(ctx)

        return enter

    def attempt(self, run_id: str, workflow: str, call: Callable[[], T]) -> T:
        attrs = {RUN_ID: run_id, "phasegate.workflow": workflow}
        with self.tracer.start_as_current_span(
            f"phasegate.run {workflow}", attributes=attrs, record_exception=True
        ) as span:
            self._runs[run_id] = span
            try:
                got = call()
                if isinstance(got, Outcome):
                    span.set_attribute(OUTCOME, got.status.value)
                    self._in_doubt(span, run_id, got)
                return got
            except BaseException:
                span.set_attribute(OUTCOME, "error")
                raise
            finally:
                self._runs.pop(run_id, None)
                self._phases.pop(run_id, None)

    def _in_doubt(self, parent: Any, run_id: str, outcome: Outcome) -> None:
        """An effect the run stopped on as in doubt: a span of its own, marked."""
        ctx = trace.set_span_in_context(parent)
        for reason in outcome.blocked:
            if reason.kind is not BlockKind.IN_DOUBT_EFFECT:
                continue
            data = reason.data or {}
            attrs: dict[str, Any] = {
                RUN_ID: run_id,
                PHASE: str(data.get("phase", "")),
                EFFECT_KEY: str(data.get("effect", "")),
                OUTCOME: "in_doubt",
                IN_DOUBT: True,
            }
            self.tracer.start_span(f"phasegate.effect {data.get('name', '')}", context=ctx, attributes=attrs).end()

    def acquired(self, run_id: str, row: Any, owner: str, record: Callable[[str], None]) -> None:
        span = self._runs.get(run_id)
        if span is None or not span.get_span_context().is_valid:
            return  # no tracer provider set up: the spans record nothing, and have no trace id
        resumed = row.lease_owner != owner
        span.set_attribute("phasegate.resumed", resumed)
        if resumed and row.lease_owner is not None:
            span.set_attribute("phasegate.takeover", True)
        before = getattr(row, "trace_id", None)
        if resumed and before and hasattr(span, "add_link"):
            try:
                link = trace.SpanContext(int(before, 16), 1, is_remote=True)
                span.add_link(link, {"phasegate.link": "previous attempt"})
            except ValueError:
                pass  # not a trace id this code wrote: nothing to link
        try:
            record(trace_id_of(span))
        except Exception as exc:  # noqa: BLE001 - a trace id not stored must not stop the run
            log.warning("run %s: its trace id was not stored: %s", run_id, exc)

    def phase(self, run_id: str, workflow: str, phase: str, call: Callable[[], T]) -> T:
        parent = self._runs.get(run_id)
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        with self.tracer.start_as_current_span(
            f"phasegate.phase {phase}", context=ctx, attributes={RUN_ID: run_id, PHASE: phase}
        ) as span:
            self._phases[run_id] = span
            try:
                got = call()
                span.set_attribute(OUTCOME, "failed" if isinstance(got, Outcome) else "completed")
                return got
            except BaseException as exc:
                span.set_attribute(OUTCOME, "stopped")
                span.set_attribute("phasegate.stopped_by", type(exc).__name__)
                raise
            finally:
                self._phases.pop(run_id, None)

    def _child(self, run_id: str, name: str, began: float, attrs: dict[str, Any]) -> None:
        parent = self._phases.get(run_id) or self._runs.get(run_id)
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        start = min(_ns(began), time.time_ns())
        self.tracer.start_span(name, context=ctx, attributes=attrs, start_time=start).end()

    def step(self, run_id: str, phase: str, key: str, began: float) -> None:
        self._child(run_id, f"phasegate.step {key}", began, {RUN_ID: run_id, PHASE: phase, "phasegate.step.key": key})

    def effect(self, run_id: str, phase: str, key: str, outcome: str, began: float) -> None:
        attrs = {
            RUN_ID: run_id,
            PHASE: phase,
            EFFECT_KEY: key,
            OUTCOME: outcome,
            IN_DOUBT: outcome.startswith("reconciled_"),
        }
        self._child(run_id, f"phasegate.effect {key.rsplit('/', 1)[-1]}", began, attrs)


def trace_runs(tracer_provider: Any = None) -> Callable[[], None]:
    """Trace every run this process executes from now on: a span per run
    attempt, phase, durable step and effect (the `otel` extra).

    Args:
        tracer_provider: Where the spans go (default: the application's global provider).

    Returns:
        What stops the tracing again.
    """
    from . import hooks

    observer = TracingObserver(tracer_provider)
    hooks.install(observer)
    return lambda: hooks.uninstall(observer)
