"""The long-lived processes beside the runs, and the list of them: `worker`,
`workers`, `watch`."""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING

from ..errors import ExitCode, UsageError
from ..safetext import safe, safe_json
from ..timefmt import iso
from . import observing
from .args import open_engine

if TYPE_CHECKING:
    from ..engine import Engine


def cmd_worker(args: argparse.Namespace) -> int:
    from .daemon import Worker, open_patiently

    # A worker's log is its output (what it picked up, how each run ended), so
    # it is shown without -v; -v adds the engine's own lines.
    if not args.verbose:
        logging.getLogger("phasegate.worker").setLevel(logging.INFO)
    stop = observing.start(args)
    try:
        # A store that does not exist yet is waited for (not with --once); a
        # dropped connection while opening is tried again (open_patiently).
        def opener() -> Engine:
            return open_patiently(lambda: open_engine(args))

        eng = opener() if args.once else observing.open_when_there(opener, "worker")
        if eng is None:
            return ExitCode.OK
        with eng:
            return Worker(eng, poll=args.poll, jobs=args.jobs, heartbeat=args.heartbeat).serve(once=args.once)
    finally:
        stop()


def cmd_workers(args: argparse.Namespace) -> int:
    from ..views.workers import ALIVE_BEATS

    with open_engine(args) as eng:
        found = eng.workers()
    if args.json:
        print(safe_json(json.dumps([w.to_json() for w in found], indent=2, ensure_ascii=False)))
        return ExitCode.OK
    if not found:
        print("no worker has recorded a heartbeat in this store: start one with `phasegate worker`")
        return ExitCode.OK
    for w in found:
        state = "alive" if w.alive else ("stopped" if w.state == "stopped" else "not alive")
        busy = f"  resuming {safe(', '.join(w.resuming))}" if w.resuming else ""
        print(
            f"{state:<10} {safe(w.host)}:{w.pid}  started {iso(w.started_at)}  last seen {w.seen_ago:.0f}s ago"
            f"  jobs {w.jobs}  resumed {w.resumed}{busy}"
        )
    alive = sum(w.alive for w in found)
    print(
        f"{alive} alive of {len(found)}; alive = a heartbeat within {ALIVE_BEATS} of its intervals, its process not dead"
    )
    return ExitCode.OK


def cmd_watch(args: argparse.Namespace) -> int:
    import signal
    import threading

    from ..alerts.hooks import Hooks
    from ..alerts.signing import load_secret
    from ..alerts.watch import run_watch

    hooks = Hooks(
        command=args.exec_cmd,
        webhook=args.webhook,
        secret=load_secret(args.webhook_secret_file) if args.webhook_secret_file is not None else None,
        retries=args.retries,
        backoff=args.backoff,
        timeout=args.timeout,
    )
    if args.poll <= 0:
        raise UsageError("--poll must be > 0")
    # Its log is its output (what it announced, which hook failed), as a worker's.
    logging.getLogger("phasegate.watch").setLevel(logging.INFO)
    if not args.verbose:
        logging.getLogger("phasegate.watch.skip").setLevel(logging.WARNING)
    stop = threading.Event()
    # SIGTERM (a service manager) and SIGINT (Ctrl-C) both end the watch
    # cleanly: a send in progress finishes or is left for the next watch.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    undo = observing.start(args)
    try:
        eng = open_engine(args) if args.once else observing.open_when_there(lambda: open_engine(args), "watch", stop)
        if eng is None:
            return ExitCode.OK
        with eng:
            return run_watch(
                eng, hooks, stop, poll=args.poll, use_events=not args.no_events, once=args.once, messages=args.messages
            )
    finally:
        undo()
