"""Figure 3c (#30): what watching costs on a 1 KB checkpoint. A run's
phases with no observer (the baseline), with this process's Prometheus
metrics on (`worker --metrics`), and traced with OpenTelemetry's SDK (a
batch processor to an in-memory exporter: the spans are built and handed
over; shipping them is the exporter's cost, not phasegate's). The modes
alternate in the same process, each on a fresh store on a tmpfs where there
is one, and each ratio is the median of the rounds' ratios to the baseline
measured beside it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phasegate import Engine
from phasegate.observe import hooks

from ._util import Figure, at_most, median
from .seals import _place, _workflow

Mode = str


def run(quick: bool, rounds: int) -> list[Figure]:
    phases = 15 if quick else 40
    try:
        from phasegate.observe.metrics import MetricsObserver
    except ImportError:
        return [_skipped("metrics on", "the metrics extra (prometheus-client) is not installed")]
    tracer: Callable[[], Any] | None
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from phasegate.observe.tracing import TracingObserver

        def tracer() -> Any:
            provider = TracerProvider()
            provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
            return TracingObserver(provider)

    except ImportError:
        tracer = None
    makers: dict[Mode, Callable[[], Any] | None] = {"baseline": None, "metrics": MetricsObserver}
    if tracer is not None:
        makers["tracing"] = tracer
    times: dict[Mode, list[float]] = {m: [] for m in makers}
    ratios: dict[Mode, list[float]] = {m: [] for m in makers if m != "baseline"}
    for i in range(rounds * 3):
        order = list(makers) if i % 2 == 0 else list(reversed(makers))
        got: dict[Mode, float] = {}
        for mode in order:
            with _place() as d:
                got[mode] = _timed(d, phases, makers[mode]) / phases
        for mode, t in got.items():
            times[mode].append(t)
            if mode != "baseline":
                ratios[mode].append(t / got["baseline"])
    base_us = median(times["baseline"]) * 1e6
    own = {m: _own_cost(make) for m, make in makers.items() if make is not None}
    out = []
    for mode, rs in ratios.items():
        ratio = median(rs)
        tgt, met = at_most(ratio, 1.05) if mode == "metrics" else (None, None)
        out.append(
            Figure(
                f"1 KB checkpoint, {'metrics on' if mode == 'metrics' else 'traced (OpenTelemetry SDK)'} / off",
                ratio,
                "x",
                tgt,
                met,
                group="3c observing",
                baseline=f"no observer: {base_us:.0f} us a checkpoint",
                detail=f"{median(times[mode]) * 1e6:.0f} us a checkpoint; {phases} phases a run, the modes"
                " alternated on fresh stores"
                + ("" if mode == "metrics" else "; a span per attempt and per phase, batch-processed in memory")
                + f"; the observer's own calls: {own[mode]:.1f} us a phase and its checkpoint",
                samples=rs,
            )
        )
    if tracer is None:
        out.append(_skipped("traced (OpenTelemetry SDK)", "the OpenTelemetry SDK is not installed"))
    return out


def _timed(d: Path, phases: int, make: Callable[[], Any] | None) -> float:
    observer = make() if make is not None else None
    if observer is not None:
        hooks.install(observer)
    try:
        with Engine(d / "o.db") as eng:
            # The same phases warm up first: a worker sees its workflows' phases
            # again and again, so a label's first use (a new series) is not the cost measured.
            eng.run(_workflow(phases), "warm")
            t0 = time.perf_counter()
            eng.run(_workflow(phases), "r1")
            return time.perf_counter() - t0
    finally:
        if observer is not None:
            hooks.uninstall(observer)


def _own_cost(make: Callable[[], Any]) -> float:
    """Microseconds the observer's calls for one phase and its checkpoint take, alone."""
    observer = make()
    n = 5_000

    def attempt() -> None:
        for _ in range(n):
            observer.phase("r1", "wf", "p", _nothing)
            observer.checkpoint("r1", "wf", "p", time.monotonic())

    t0 = time.perf_counter()
    observer.attempt("r1", "wf", attempt)
    return (time.perf_counter() - t0) / n * 1e6


def _nothing() -> None:
    return None


def _skipped(what: str, why: str) -> Figure:
    return Figure(f"1 KB checkpoint, {what} / off", None, "x", None, None, group="3c observing", skipped=why)
