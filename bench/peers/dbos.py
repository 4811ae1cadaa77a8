"""DBOS Transact on SQLite: one step per boundary of a workflow, each step
returning the same state (so every step records it), and its recovery.

DBOS is a process-wide singleton, so every measurement runs in a child
process (`python -m bench.peers.dbos ...`) and reports JSON on stdout."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NAME = "DBOS on SQLite"
ROOT = Path(__file__).resolve().parents[2]


def available() -> str | None:
    try:
        import dbos  # noqa: F401
    except ImportError as exc:
        return f"not installed ({exc.name}); pip install '.[bench]'"
    return None


def version() -> str:
    from importlib.metadata import version as v

    return f"dbos {v('dbos')}"


def _child(*args: str, timeout: float = 900, quiet: bool = False) -> Any:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "DBOS__DISABLE_TELEMETRY": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "bench.peers.dbos", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines and quiet and proc.returncode == 0:
        return {}
    if not lines:
        raise RuntimeError(f"DBOS child {args[0]} failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(lines[-1])


def durability(path: Path) -> str:
    return str(_child("durability", "--db", str(path))["durability"])


def step_costs(path: Path, nbytes: int, rounds: int, small: int, big: int) -> list[float]:
    """Per round, (T(big steps) - T(small steps)) / (big - small): one step's marginal cost."""
    return list(
        _child(
            "steps",
            "--db",
            str(path),
            "--bytes",
            str(nbytes),
            "--rounds",
            str(rounds),
            "--small",
            str(small),
            "--big",
            str(big),
        )["costs"]
    )


def build_pending(path: Path, steps: int) -> None:
    """A workflow that finished `steps` steps and died in the next (the process exits)."""
    _child("build", "--db", str(path), "--steps", str(steps), timeout=3600, quiet=True)


def recover_time(path: Path, steps: int) -> float:
    """Seconds from `DBOS.launch()` in a fresh process to the recovered workflow
    entering the step after its `steps` finished ones."""
    return float(_child("recover", "--db", str(path), "--steps", str(steps))["seconds"])


# -- the child side ------------------------------------------------------------


def _config(db: Path, fast: bool = False) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "name": "pgbench",
        "system_database_url": f"sqlite:///{db}",
        "run_admin_server": False,
        "log_level": "ERROR",
        "console_log_level": "ERROR",
    }
    if fast:
        import sqlalchemy as sa
        from sqlalchemy import event

        eng = sa.create_engine(f"sqlite:///{db}")

        @event.listens_for(eng, "connect")
        def _c(dbapi_conn: Any, _r: Any) -> None:
            dbapi_conn.isolation_level = "IMMEDIATE"
            dbapi_conn.execute("PRAGMA busy_timeout=30000")
            dbapi_conn.execute("PRAGMA synchronous=OFF")  # building a fixture only

        cfg["system_database_engine"] = eng
    return cfg


def _main(argv: list[str]) -> None:
    from dbos import DBOS

    ap = argparse.ArgumentParser()
    ap.add_argument("what")
    ap.add_argument("--db", required=True)
    ap.add_argument("--bytes", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--small", type=int, default=3)
    ap.add_argument("--big", type=int, default=13)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args(argv)
    db = Path(a.db)

    from bench import payload

    state = payload.state(a.bytes)

    @DBOS.step()
    def carry(i: int) -> Any:
        return state

    @DBOS.workflow()
    def chain(k: int) -> int:
        for i in range(k):
            carry(i)
        return k

    @DBOS.step()
    def tick(i: int) -> int:
        return i

    started: list[float] = []

    @DBOS.step()
    def last(i: int) -> int:
        # Entered: report how long recovery took, and die with the step
        # unfinished, so the workflow stays pending for the next measurement.
        seconds = time.perf_counter() - started[0] if started else None
        print(json.dumps({"seconds": seconds}), flush=True)
        os._exit(0)

    @DBOS.workflow()
    def stops(n: int) -> int:
        for i in range(n):
            tick(i)
        return last(n)

    DBOS(config=_config(db, fast=a.what == "build"))  # type: ignore[arg-type]
    if a.what == "recover":
        started.append(time.perf_counter())
        DBOS.launch()
        time.sleep(600)  # `last` exits the process once recovery reaches it
        os._exit(1)
    DBOS.launch()
    if a.what == "durability":
        conn = sqlite3.connect(db)
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        conn.close()
        from dbos._dbos import _get_dbos_instance

        with _get_dbos_instance()._sys_db.engine.connect() as c:
            sync = c.exec_driver_sql("PRAGMA synchronous").scalar()
        names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
        fsync = "fsync on every commit" if sync and sync >= 1 else "no fsync per commit"
        print(json.dumps({"durability": f"journal_mode={mode}, synchronous={names.get(sync, sync)}: {fsync}"}))
    elif a.what == "steps":
        chain(2)  # warm up
        costs = []
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            chain(a.small)
            t1 = time.perf_counter()
            chain(a.big)
            t2 = time.perf_counter()
            costs.append(((t2 - t1) - (t1 - t0)) / (a.big - a.small))
        print(json.dumps({"costs": costs}))
    elif a.what == "build":
        stops(a.steps)  # exits inside `last`
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    _main(sys.argv[1:])
