"""OpenTelemetry spans (the `otel` extra): one per run attempt, and under it
one per phase, durable step and effect, named with low cardinality (a
workflow's or a phase's name at most; keys and ids are attributes).

A run started inside an application's span is that span's child. Each
attempt is a trace of its own: an attempt that takes a run's lease ends a
short `phasegate.lease` span at once (exported before the run goes on,
whatever becomes of its process) and stores its trace and span id with the
run (the run row's `trace_id` column, `TRACE-SPAN`); the attempt after it
links to that span, which a trace back end has, so a run killed and resumed
reads as two traces joined by a link to a real span. (One trace per run is
not possible honestly across processes: the killed attempt's run span never
ends, so the second attempt would hang under a parent no back end receives.)

A failed run, phase or effect, and a blocked run, end with status ERROR, an
`exception` event and `error.type` (a block's kind for a blocked run), as
OpenTelemetry's conventions say, so a back end's error filters count them.
An effect's span is current while its function runs: an instrumented HTTP
client's request carries it in `traceparent`. Spans use the application's
tracer provider unless given one; without the SDK configured they cost next
to nothing.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from ..outcome import Outcome
from ..states import BlockKind, OutcomeStatus
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
WORKFLOW = "phasegate.workflow"
"""The workflow's name, on a run's span."""
ERROR_TYPE = "error.type"
"""OpenTelemetry's attribute of what went wrong: the exception's type, or a block's kind."""
STEP_KEY = "phasegate.step.key"
"""The durable step's key, on a step's span."""


def _error(span: Any, kind: str, message: str, *, event: bool = True) -> None:
    """Mark `span` failed as OpenTelemetry's conventions say: status ERROR
    with the message, an `exception` event (unless `record_exception` made
    one already) and `error.type`."""
    span.set_status(Status(StatusCode.ERROR, message))
    span.set_attribute(ERROR_TYPE, kind)
    if event:
        span.add_event("exception", {"exception.type": kind, "exception.message": message})


def _outcome_error(span: Any, outcome: Outcome) -> None:
    """A failed or blocked outcome marked on its span (other outcomes left alone)."""
    if outcome.status is OutcomeStatus.FAILED:
        err = outcome.error or {}
        _error(span, str(err.get("type") or "error"), str(err.get("message") or "failed"))
    elif outcome.status is OutcomeStatus.BLOCKED and outcome.blocked:
        first = outcome.blocked[0]
        _error(span, first.kind.value, "; ".join(str(r) for r in outcome.blocked))


def stored_ids(text: Any) -> tuple[int, int] | None:
    """The trace and span id a run row's `trace_id` column holds (`TRACE-SPAN`,
    32 and 16 hex digits), or None: the column is stored data, so anything
    else (an older row's bare trace id included) links to nothing.

    Args:
        text: The column's value.

    Returns:
        (trace id, span id), or None.
    """
    if not isinstance(text, str) or len(text) != 49 or text[32] != "-":
        return None
    trace_hex, span_hex = text[:32], text[33:]
    if not all(c in "0123456789abcdef" for c in trace_hex + span_hex):
        return None
    ids = int(trace_hex, 16), int(span_hex, 16)
    return ids if all(ids) else None


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
        self._effects: dict[tuple[str, str], Any] = {}
        """(run id, effect key) -> the span of an effect whose function was called, until it ends."""

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
        attrs = {RUN_ID: run_id, WORKFLOW: workflow}
        with self.tracer.start_as_current_span(
            f"phasegate.run {workflow}", attributes=attrs, record_exception=True
        ) as span:
            self._runs[run_id] = span
            try:
                got = call()
                if isinstance(got, Outcome):
                    span.set_attribute(OUTCOME, got.status.value)
                    _outcome_error(span, got)
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
            span = self.tracer.start_span("phasegate.effect", context=ctx, attributes=attrs)
            _error(span, BlockKind.IN_DOUBT_EFFECT.value, str(reason))
            span.end()

    def acquired(self, run_id: str, row: Any, owner: str, record: Callable[[str], None]) -> None:
        span = self._runs.get(run_id)
        if span is None or not span.get_span_context().is_valid:
            return  # no tracer provider set up: the spans record nothing, and have no trace id
        resumed = row.lease_owner != owner
        span.set_attribute("phasegate.resumed", resumed)
        if resumed and row.lease_owner is not None:
            span.set_attribute("phasegate.takeover", True)
        before = stored_ids(getattr(row, "trace_id", None))
        if resumed and before is not None and hasattr(span, "add_link"):
            link = trace.SpanContext(before[0], before[1], is_remote=True, trace_flags=trace.TraceFlags(1))
            span.add_link(link, {"phasegate.link": "previous attempt"})
        # Ended at once, so exported however this attempt ends: what the next attempt links to.
        marker = self.tracer.start_span(
            "phasegate.lease",
            context=trace.set_span_in_context(span),
            attributes={RUN_ID: run_id, "phasegate.resumed": resumed},
        )
        marker.end()
        ids = marker.get_span_context()
        try:
            record(f"{ids.trace_id:032x}-{ids.span_id:016x}")
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
                if isinstance(got, Outcome):
                    _outcome_error(span, got)
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
        self._child(run_id, "phasegate.step", began, {RUN_ID: run_id, PHASE: phase, STEP_KEY: key})

    def step_failed(self, run_id: str, phase: str, key: str, began: float, error: BaseException) -> None:
        parent = self._phases.get(run_id) or self._runs.get(run_id)
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(
            "phasegate.step",
            context=ctx,
            attributes={RUN_ID: run_id, PHASE: phase, STEP_KEY: key},
            start_time=min(_ns(began), time.time_ns()),
        )
        span.record_exception(error)
        _error(span, type(error).__name__, str(error), event=False)
        span.end()

    def effect_call(self, run_id: str, phase: str, key: str, call: Callable[[], T]) -> T:
        parent = self._phases.get(run_id) or self._runs.get(run_id)
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(
            "phasegate.effect", context=ctx, attributes={RUN_ID: run_id, PHASE: phase, EFFECT_KEY: key}
        )
        here = trace.set_span_in_context(span)
        token = otel_context.attach(here)
        try:
            got = call()
        except BaseException as exc:
            span.record_exception(exc)
            _error(span, type(exc).__name__, str(exc), event=False)
            span.end()
            raise
        finally:
            otel_context.detach(token)
        self._effects[(run_id, key)] = span
        if inspect.iscoroutine(got):
            # An `async def` effect runs when awaited: its span is current there too.
            return cast(T, _current_while_awaited(got, here))
        return got

    def effect(self, run_id: str, phase: str, key: str, outcome: str, began: float) -> None:
        attrs = {
            RUN_ID: run_id,
            PHASE: phase,
            EFFECT_KEY: key,
            OUTCOME: outcome,
            IN_DOUBT: outcome.startswith("reconciled_"),
        }
        live = self._effects.pop((run_id, key), None)
        if live is not None:
            live.set_attributes(attrs)
            live.end()
            return
        self._child(run_id, "phasegate.effect", began, attrs)


async def _current_while_awaited(coro: Any, ctx: Any) -> Any:
    token = otel_context.attach(ctx)
    try:
        return await coro
    finally:
        otel_context.detach(token)


def has_provider() -> bool:
    """Whether the process has a tracer provider that records (the SDK's, set
    by the application or by `opentelemetry-instrument`), not the API's no-op.

    Returns:
        True when spans would be recorded somewhere.
    """
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


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
