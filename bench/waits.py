"""Group 13, runs that wait (#27): how soon an operator's pause, and a
cancel, reach a live run whose phase calls a step every 100 ms, with a
worker running on the store (the run's own process polls for a hold,
run/holds.py). Each round is a real `phasegate run` process and a real
`phasegate worker`; the time is from the decision's commit to the status
the store shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from phasegate import Engine

from ._util import Figure, at_most, median, scratch

_FLOW = textwrap.dedent(
    """
    import time
    from phasegate import Workflow

    wf = Workflow("bench-hold")

    @wf.phase()
    def loop(ctx):
        for i in range(100000):
            ctx.step(f"s{i}", time.sleep, 0.1)
        return None
    """
)


def run(quick: bool, rounds: int) -> list[Figure]:
    return [_hold("pause", 2 if quick else rounds), _hold("cancel", 1 if quick else 3)]


def _phasegate(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "phasegate", *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _hold(action: str, rounds: int) -> Figure:
    waits: list[float] = []
    wanted = "paused" if action == "pause" else "cancelled"
    with scratch("pgbench-hold-") as d:
        flow = Path(d) / "flow.py"
        flow.write_text(_FLOW)
        db = str(Path(d) / "hold.db")
        env = {"PHASEGATE_OPERATOR": "bench"}
        with Engine(db):
            pass
        worker = _phasegate(["worker", "--poll", "0.2", "--db", db], env)
        try:
            for i in range(rounds):
                rid = f"{action}-{i}"
                child = _phasegate(["run", f"{flow}:wf", "--run-id", rid, "--db", db], env)
                with Engine(db) as eng:
                    _until(lambda eng=eng, rid=rid: _exists(eng, rid) and eng.status(rid).status.value == "running")
                    time.sleep(0.5)  # a few steps in
                    eng.decide(rid, action, reason="bench")
                    t0 = time.perf_counter()
                    _until(lambda eng=eng, rid=rid: eng.status(rid).status.value == wanted, step=0.005)
                    waits.append(time.perf_counter() - t0)
                child.wait(timeout=60)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    value = median(waits)
    tgt, met = at_most(value, 1.0, " s")
    return Figure(
        f"{action} of a live run reaches status {wanted} (a step every 100 ms, a worker running)",
        value,
        "s",
        tgt,
        met,
        group="13 waits",
        baseline="the decision's commit",
        detail=f"{len(waits)} real runs; worst {max(waits):.3f} s; samples {json.dumps([round(w, 3) for w in waits])}",
        samples=waits,
    )


def _exists(eng: Engine, run_id: str) -> bool:
    try:
        eng.status(run_id)
    except Exception:  # noqa: BLE001 - not created yet by its child
        return False
    return True


def _until(check: object, timeout: float = 60.0, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("bench: the run never reached the state")
        time.sleep(step)
