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
from typing import Any

from ..errors import ExitCode, UsageError
from ..observe import hooks, logs, serving
from .args import open_engine

#: Set to 1, the worker, `watch` and `run` trace each run attempt (the otel
#: extra, and a tracer provider configured by the OpenTelemetry SDK's own
#: variables or `opentelemetry-instrument`).
OTEL_ENV = "PHASEGATE_OTEL"

log = logging.getLogger("phasegate.observe")


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
        help="log lines as text (default) or as one JSON object a line (time, level, event, run_id, phase, message)",
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
            from ..observe.tracing import TracingObserver
        except ImportError:
            raise UsageError(f"{OTEL_ENV}=1 needs the otel extra: pip install 'phasegate[otel]'") from None
        tracer = TracingObserver()
        hooks.install(tracer)
        undo.append(lambda: hooks.uninstall(tracer))

    def stop() -> None:
        for f in reversed(undo):
            f()

    return stop


def cmd_metrics(args: argparse.Namespace) -> int:
    """`phasegate metrics --listen ADDR`: the store-wide gauges, read at each scrape."""
    address = serving.parse_address(args.listen, "--listen", allow_remote=args.allow_remote)
    serving.require_metrics()
    if getattr(args, "log_format", "text") == "json":
        logs.use_json(tracebacks=bool(getattr(args, "debug", False)))
    from prometheus_client import CollectorRegistry

    from ..observe.gauges import StoreCollector
    from ..states import BlockKind
    from ..views import gauges

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with open_engine(args) as eng:
        lock = threading.Lock()

        def read() -> Any:
            # Scrapes arrive on the server's threads; the engine's connections are used by one at a time.
            with lock:
                return gauges.read(eng.store, eng.clock(), eng.clock)

        registry = CollectorRegistry()
        registry.register(StoreCollector(read, gauges.STATUSES, [k.value for k in BlockKind]))
        server = serving.serve(registry, address)
        try:
            stop.wait()
        finally:
            server.shutdown()
    return ExitCode.OK
