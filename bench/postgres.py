"""Figure 10: PostgreSQL.

- A phasegate checkpoint against the raw limit there: one psycopg INSERT +
  COMMIT of the same bytes on a reused connection to the same local server.
  Paired as the SQLite figure is (`workloads.Paired`): each phase makes one
  raw commit on entry, and the boundary is the gap between phase entries net
  of it.
- Runs drained per second by 4 worker processes against 1 (`phasegate
  worker`), over runs whose phases wait on I/O (`drain_flow.py`): the ratio
  measures coordination (pick-up under SKIP LOCKED, leases, heartbeats,
  checkpoints from several connections), not CPU.

The server is the one `PHASEGATE_TEST_PG` names (the test suite's default
otherwise); without one the figures are skipped, with why."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phasegate import Engine
from phasegate.authoring.loader import load

from . import payload
from ._util import Figure, at_least, at_most, median
from .workloads import Marks, Paired, chain_workflow, paired_workflow

PG = os.environ.get("PHASEGATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
NAME = "PostgreSQL checkpoint 1KB: phasegate / raw psycopg commit"
DRAIN = "PostgreSQL runs drained per second: 4 workers / 1 worker"
FLOW = Path(__file__).with_name("drain_flow.py")


def _skipped(why: str) -> list[Figure]:
    return [
        Figure(NAME, None, "x", "<= 1.3x", None, group="10 postgres", skipped=why),
        Figure(DRAIN, None, "x", ">= 3.2x", None, group="10 postgres", skipped=why),
    ]


def run(quick: bool, rounds: int) -> list[Figure]:
    try:
        import psycopg
    except ImportError:
        return _skipped("psycopg not installed: pip install '.[postgres]'")
    where = re.sub(r"://([^:@/]+):[^@/]*@", r"://\1:***@", PG)
    try:
        admin = psycopg.connect(PG, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        return _skipped(f"no PostgreSQL at {where}: {str(exc).strip().splitlines()[0]}")
    figs: list[Figure] = []
    try:
        for measure in (_measure, _drain):
            schema = f"pgbench_{uuid.uuid4().hex[:12]}"
            admin.execute(f'CREATE SCHEMA "{schema}"')
            url = f"{PG}{'&' if '?' in PG else '?'}options=-csearch_path%3D{schema}"
            try:
                figs.extend(measure(psycopg, url, where, quick, rounds))
            finally:
                admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        admin.close()
    return figs


def _measure(psycopg: Any, url: str, where: str, quick: bool, rounds: int) -> list[Figure]:
    state = payload.state(1024)
    text = payload.text(1024)
    conn = psycopg.connect(url)
    conn.execute("CREATE TABLE raw_limit (id serial PRIMARY KEY, run_id text, payload text)")
    conn.commit()

    def commit() -> None:
        conn.execute("INSERT INTO raw_limit (run_id, payload) VALUES (%s, %s)", ("r", text))
        conn.commit()

    phases = 7 if quick else 13
    bound: list[float] = []
    raws: list[float] = []
    ratios: list[float] = []
    try:
        with Engine(url) as eng:
            eng.run(chain_workflow("warm", 2, state, Marks()), "warm")
            for r in range(rounds):
                pairs = _pairs(eng, state, phases, commit, r)
                bound.append(median([b for b, _ in pairs]))
                raws.append(median([c for _, c in pairs]))
                ratios.append(median([b / c for b, c in pairs]))
    finally:
        conn.close()
    ratio = median(ratios)
    tgt, met = at_most(ratio, 1.3)
    return [
        Figure(
            NAME,
            ratio,
            "x",
            tgt,
            met,
            group="10 postgres",
            baseline=f"raw psycopg INSERT+COMMIT of the same {len(text)} bytes: {median(raws) * 1e6:.0f} us (median)",
            detail=(
                f"phasegate boundary {median(bound) * 1e6:.0f} us (median), {where}; ratio = median of per-boundary "
                f"ratios, each boundary paired with the raw commit made beside it, {phases} phases a run"
            ),
            samples=ratios,
        )
    ]


def _pairs(eng: Engine, state: Any, phases: int, commit: Callable[[], None], r: int) -> list[tuple[float, float]]:
    paired = Paired(commit)
    eng.run(paired_workflow("paired", phases, state, paired), f"paired-{r}")
    return paired.pairs()


# -- the drain ----------------------------------------------------------------

#: Seconds each phase of a drained run waits on "I/O".
WAIT = 0.05
#: What a worker process is told: its poll, its lease.
_WORKER_ENV = {"PHASEGATE_BENCH_WAIT": str(WAIT), "PHASEGATE_LEASE_SECONDS": "10"}


def _drain(psycopg: Any, url: str, where: str, quick: bool, rounds: int) -> list[Figure]:
    runs = 16 if quick else 32
    target = f"{FLOW}:wf"
    rates: dict[int, list[float]] = {1: [], 4: []}
    ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pgdrain-") as tmp:
        for r in range(rounds):
            for workers in (1, 4):
                rates[workers].append(_drain_once(psycopg, url, target, runs, workers, f"{r}-{workers}", Path(tmp)))
            ratios.append(rates[4][-1] / rates[1][-1])
    ratio = median(ratios)
    tgt, met = at_least(ratio, 3.2, "x")
    one, four = median(rates[1]), median(rates[4])
    ideal = 1 / (3 * WAIT)
    return [
        Figure(
            DRAIN,
            ratio,
            "x",
            tgt,
            met,
            group="10 postgres",
            baseline=f"1 worker: {one:.2f} runs/s ({one / ideal:.0%} of the {ideal:.2f} runs/s its waits allow)",
            detail=(
                f"4 workers: {four:.2f} runs/s; {runs} runs of 3 phases that each sleep {WAIT * 1000:.0f} ms, released at "
                f"once to `phasegate worker --poll 0.05` processes already watching {where} (each warmed by two "
                "runs first); from the release to the last run completed; ratio = median of the per-round ratios"
            ),
            samples=ratios,
        )
    ]


def _drain_once(psycopg: Any, url: str, target: str, runs: int, workers: int, tag: str, tmp: Path) -> float:
    """Runs drained per second by `workers` worker processes: the runs are
    made interrupted and held by a lease nobody works under, the workers
    start and settle, then every lease is cleared in one commit."""
    ids = _interrupted(url, target, runs, tag)
    # Two runs a worker first, not timed: a worker's first resume pays for
    # imports and its first connections, and four workers would pay it four times.
    warm = _interrupted(url, target, 2 * workers, f"{tag}-warm")
    conn = psycopg.connect(url, autocommit=True)
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        # Held: a live lease on another host, which no worker takes over.
        conn.execute(
            "UPDATE phasegate_runs SET lease_owner = 'bench:1', lease_host = 'bench-elsewhere', lease_pid = 1,"
            " lease_expires_at = EXTRACT(EPOCH FROM clock_timestamp()) + 3600 WHERE run_id = ANY(%s)",
            (ids + warm,),
        )
        env = {**os.environ, **_WORKER_ENV}
        for i in range(workers):
            log = tmp / f"worker-{tag}-{i}.log"
            logs.append(log)
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "phasegate", "worker", "--db", url, "--poll", "0.05"],
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        deadline = time.monotonic() + 60
        while not all("watching" in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"the workers did not start: {logs[0].read_text(errors='replace')[-500:]}")
            time.sleep(0.05)
        time.sleep(0.3)  # every worker past its first look
        _release(conn, warm, logs)
        time.sleep(0.2)
        t0 = time.perf_counter()
        _release(conn, ids, logs)
        return len(ids) / (time.perf_counter() - t0)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        conn.close()


def _release(conn: Any, ids: list[str], logs: list[Path]) -> None:
    """Clear the runs' leases in one commit and wait until all completed."""
    conn.execute(
        "UPDATE phasegate_runs SET lease_owner = NULL, lease_host = NULL, lease_pid = NULL,"
        " lease_expires_at = NULL WHERE run_id = ANY(%s)",
        (ids,),
    )
    deadline = time.monotonic() + 300
    while True:
        row = conn.execute(
            "SELECT count(*) FROM phasegate_runs WHERE run_id = ANY(%s) AND status = 'completed'", (ids,)
        ).fetchone()
        if row is not None and row[0] == len(ids):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the workers did not drain the runs: {logs[0].read_text(errors='replace')[-500:]}")
        time.sleep(0.005)


def _interrupted(url: str, target: str, runs: int, tag: str) -> list[str]:
    """`runs` runs of the drain flow, each stopped in its first phase (as a
    deploy would), its lease released: waiting for a worker."""
    wf = load(target)
    first = wf.phases[0]
    original = first.fn

    def stop(ctx: Any) -> Any:
        raise KeyboardInterrupt

    ids = [f"drain-{tag}-{i:03d}" for i in range(runs)]
    object.__setattr__(first, "fn", stop)
    try:
        with Engine(url) as eng:
            for rid in ids:
                try:
                    eng.run(wf, rid, {}, target=target)
                except KeyboardInterrupt:
                    pass
    finally:
        object.__setattr__(first, "fn", original)
    return ids
