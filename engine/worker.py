"""`phasegate worker`: carries out decisions and picks up dead runs.

It resumes runs that have an operator's decision waiting, runs that were
reset, and `running` runs whose holder died, using each run's stored target
and inputs. SIGTERM or SIGINT asks it to stop: the current phase finishes
and is checkpointed, the run is left resumable, and the worker exits.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Any

from .engine import Engine
from .errors import PhasegateError, RunHeld
from .lease import holder_alive
from .loader import load

log = logging.getLogger("phasegate.worker")


class Worker:
    def __init__(self, engine: Engine, *, poll: float = 1.0) -> None:
        self.engine = engine
        self.poll = poll
        self._stop = threading.Event()
        self._tried: dict[str, float] = {}

    def stop(self, *_: Any) -> None:
        self._stop.set()

    def _install_signals(self) -> None:
        def handler(signum: int, _frame: FrameType | None) -> None:
            log.warning("worker: signal %d; finishing the current phase, then stopping", signum)
            self._stop.set()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, handler)
            signal.signal(signal.SIGINT, handler)

    def waiting(self) -> list[Any]:
        now = self.engine.clock()
        with self.engine.store.read() as conn:
            rows = self.engine.store.runs_waiting(conn, now)
        pending_ids = {r.run_id for r in rows if r.status not in ("running",)}
        out = []
        for r in rows:
            if r.status == "running" and holder_alive(r, now):
                continue
            if not r.target:
                continue
            # A run that was just handled and changed nothing is not retried in a tight loop.
            if r.run_id not in pending_ids and self._tried.get(r.run_id) == r.updated_at:
                continue
            out.append(r)
        return out

    def handle(self, row: Any) -> int:
        try:
            wf = load(row.target)
            self.engine.should_stop = self._stop.is_set
            outcome = self.engine.run(wf, row.run_id, target=row.target)
        except RunHeld as exc:
            log.info("worker: %s", exc)
            return 0
        except PhasegateError as exc:
            log.error("worker: run %s: %s", row.run_id, exc)
            return 1
        finally:
            self.engine.should_stop = None
        log.warning("worker: run %s -> %s%s", row.run_id, outcome.status,
                    "".join(f"; {r}" for r in outcome.blocked))
        with self.engine.store.read() as conn:
            after = self.engine.store.get_run(conn, row.run_id)
        if after is not None:
            self._tried[row.run_id] = after.updated_at
        return 1

    def serve(self, *, once: bool = False) -> int:
        self._install_signals()
        log.warning("worker: watching %s", self.engine.store.path)
        while not self._stop.is_set():
            rows = self.waiting()
            for row in rows:
                if self._stop.is_set():
                    break
                self.handle(row)
            if once:
                break
            self._stop.wait(self.poll)
        log.warning("worker: stopped")
        return 0
