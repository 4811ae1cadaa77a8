"""The monitoring flags of the long-lived commands (`--metrics`,
`--allow-remote`, `--log-format`), and `phasegate metrics`, the store-wide
gauges' server."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ExitCode, PhasegateError, StoreMissing, UsageError
from ..observe import hooks, logs, serving
from .args import open_engine

if TYPE_CHECKING:
    from ..engine import Engine

#: Seconds between two looks for a store that does not exist yet.
STORE_POLL = 0.5

#: Set to 1, the worker, `watch` and `run` trace each run attempt (the otel
#: extra, and a tracer provider configured by the OpenTelemetry SDK's own
#: variables or `opentelemetry-instrument`).
OTEL_ENV = "PHASEGATE_OTEL"

log = logging.getLogger("phasegate.observe")

#: Said once at a start with `PHASEGATE_OTEL=1` and no tracer provider: nothing would be traced.
NO_PROVIDER = (
    f"{OTEL_ENV}=1 but no OpenTelemetry tracer provider is set up, so nothing is traced: "
    "run the command under `opentelemetry-instrument -- phasegate ...` (the SDK and an exporter installed)"
)


def add_metrics_flags(p: argparse.ArgumentParser) -> None:
    """`--metrics ADDR` and `--allow-remote`, for a worker or a watch."""
    p.add_argument(
        "--metrics",
        default=None,
        metavar="ADDR",
        help="serve this process's Prometheus metrics at http://ADDR/metrics (HOST:PORT, loopback unless "
        "--allow-remote; port 0 picks one; needs the metrics extra)",
    )
    p.add_argument("--allow-remote", action="store_true", help="allow --metrics on an address other than loopback")


def add_log_format(p: argparse.ArgumentParser) -> None:
    """`--log-format text|json`."""
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines as text (default) or as one JSON object a line (timestamp, level, logger, message, run_id, "
        "workflow, phase, trace_id, span_id)",
    )


def start(args: argparse.Namespace) -> Callable[[], None]:
    """Set up what the command's flags ask: JSON logs, the metrics server,
    tracing (`PHASEGATE_OTEL=1`).

    Args:
        args: The command's arguments.

    Returns:
        What stops them again (the server shut, the observers removed).

    Raises:
        UsageError: a bad address, or a missing extra.
    """
    if getattr(args, "log_format", "text") == "json":
        logs.use_json(tracebacks=bool(getattr(args, "debug", False)))
    undo: list[Callable[[], None]] = []
    addr = getattr(args, "metrics", None)
    if addr is not None:
        address = serving.parse_address(addr, "--metrics", allow_remote=args.allow_remote)
        serving.require_metrics()
        from ..observe.metrics import MetricsObserver

        observer = MetricsObserver()
        server = serving.serve(observer.registry, address)
        hooks.install(observer)
        undo += [lambda: hooks.uninstall(observer), server.shutdown]
    if os.environ.get(OTEL_ENV) == "1":
        try:
            from ..observe.tracing import TracingObserver, has_provider
        except ImportError:
            raise UsageError(f"{OTEL_ENV}=1 needs the otel extra: pip install 'phasegate[otel]'") from None
        if not has_provider():
            said = logging.getLogger("phasegate.tracing")
            said.setLevel(logging.WARNING)  # shown without -v: tracing was asked for
            said.warning(NO_PROVIDER)
        tracer = TracingObserver()
        hooks.install(tracer)
        undo.append(lambda: hooks.uninstall(tracer))

    def stop() -> None:
        for f in reversed(undo):
            f()

    return stop


def open_when_there(opener: Callable[[], Engine], what: str, stop: threading.Event | None = None) -> Engine | None:
    """The engine, once its store exists: a worker, `watch` or `metrics`
    started before the first run wait for it (one line said once) instead
    of exiting. SIGTERM or SIGINT while waiting ends the wait.

    Args:
        opener: Opens the engine (without creating the store).
        what: The command, for the log line.
        stop: Set to end the wait (default: one set by SIGTERM or SIGINT here).

    Returns:
        The engine, or None when stopped before the store appeared.

    Raises:
        StoreError: The store cannot be opened for any other reason than not existing yet.
    """
    own = stop is None
    event = threading.Event() if stop is None else stop
    previous: dict[signal.Signals, Any] = {}
    if own and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: event.set())
    said = False
    out = logging.getLogger(f"phasegate.{what}")
    try:
        while True:
            try:
                return opener()
            except StoreMissing as exc:
                if not said:
                    out.warning("%s; waiting for it (the first run creates it)", exc)
                    said = True
            if event.wait(STORE_POLL):
                return None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if said and not event.is_set():
            out.info("the store is there now; starting")


def cmd_metrics(args: argparse.Namespace) -> int:
    """`phasegate metrics --listen ADDR`: the store-wide gauges, read at each scrape.

    Served from the start, before the store exists (`phasegate_store_up 0`);
    each time the store becomes unreadable, why is logged once.
    """
    address = serving.parse_address(args.listen, "--listen", allow_remote=args.allow_remote)
    serving.require_metrics()
    if getattr(args, "log_format", "text") == "json":
        logs.use_json(tracebacks=bool(getattr(args, "debug", False)))
    from prometheus_client import CollectorRegistry, ProcessCollector

    from ..observe.gauges import StoreCollector, build_version
    from ..states import BlockKind, WaitKind
    from ..views import gauges

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    mlog = logging.getLogger("phasegate.metrics")
    mlog.setLevel(logging.INFO)
    lock = threading.Lock()
    state: dict[str, Any] = {"eng": None, "down": None}

    def read() -> Any:
        # Scrapes arrive on the server's threads; the engine's connections are used by one at a time.
        with lock:
            try:
                if state["eng"] is None:
                    state["eng"] = open_engine(args)
                eng = state["eng"]
                got = gauges.read(eng.store, eng.clock(), eng.clock)
            except Exception as exc:
                why = f"{exc.title}: {exc}" if isinstance(exc, PhasegateError) else f"{type(exc).__name__}: {exc}"
                if state["down"] != why:
                    mlog.error("store down (phasegate_store_up 0): %s", why)
                    state["down"] = why
                raise
            if state["down"] is not None:
                mlog.info("store up (phasegate_store_up 1)")
                state["down"] = None
            return got

    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    registry.register(
        StoreCollector(
            read,
            gauges.STATUSES,
            [k.value for k in BlockKind],
            [k.value for k in WaitKind],
            version=build_version(),
        )
    )
    server = serving.serve(registry, address)
    try:
        stop.wait()
    finally:
        server.shutdown()
        with lock:
            if state["eng"] is not None:
                state["eng"].close()
    return ExitCode.OK
