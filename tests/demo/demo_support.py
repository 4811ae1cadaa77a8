"""Helpers for the demo, worker and sample-workflow tests: the real command
line in a subprocess, and a way to SIGKILL a run at a named pause point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.support import cli as support
from tests.support.waiting import until

ROOT = support.ROOT
PAUSE_ENV = "PHASEGATE_SAMPLE_PAUSE_AT"
BEACON_ENV = "PHASEGATE_SAMPLE_BEACON"
#: A pause point is set for one child only, never inherited from this process.
_PAUSE = (PAUSE_ENV, BEACON_ENV)
TARGETS = {
    "billing": "phasegate.sample_runs.billing:wf",
    "pipeline": "phasegate.sample_runs.pipeline:wf",
    "research": "phasegate.sample_runs.research:wf",
}


def env(**extra: str) -> dict[str, str]:
    """A child's environment, without a pause point this process may have."""
    return support.child_env(extra, drop=_PAUSE)


def cli(*args: str, timeout: float = 120, **extra: str) -> support.Result:
    """`phasegate ARGS`, as an operator runs it."""
    return support.run(args, env=extra, drop=_PAUSE, timeout=timeout)


def start(*args: str, **extra: str) -> subprocess.Popen[str]:
    """`phasegate ARGS` in the background (a worker); stdout and stderr to one pipe."""
    return support.popen(args, env=extra, drop=_PAUSE, merge_stderr=True)


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 60) -> str:
    """Signal a background process, wait for it, and return what it printed."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def status(db: Path, run_id: str | None = None) -> Any:
    args = ["status", "--json", "--db", str(db)] + ([run_id] if run_id else [])
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def kill_at(db: Path, workflow: str, run_id: str, inputs: dict[str, Any], point: str, tmp: Path) -> None:
    """Start `phasegate run`, wait until it pauses at `point`, SIGKILL it."""
    beacon = tmp / f"{run_id}.paused"
    argv = ["run", TARGETS[workflow], "--run-id", run_id, "--input", json.dumps(inputs), "--db", str(db)]
    proc = support.popen(argv, env={PAUSE_ENV: point, BEACON_ENV: str(beacon)})
    try:

        def paused() -> bool:
            assert proc.poll() is None, f"run ended before {point}: {proc.communicate()}"
            return beacon.exists()

        until(paused, f"the run to reach {point}")
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def wait_for(predicate: Any, *, timeout: float = 90, every: float = 0.2, what: str = "condition") -> Any:
    """tests/support/waiting.py's `until`, in this folder's keyword spelling."""
    return until(predicate, what, timeout=timeout, every=every)


def ledger_keys(gateway_dir: Path) -> list[str]:
    path = gateway_dir / "ledger.jsonl"
    return [json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip()]


def view(db: Path, run_id: str) -> dict[str, Any]:
    """What `phasegate status RUN --json` prints, read in this process (cheap
    enough to poll; the CLI itself is exercised elsewhere)."""
    from phasegate import Engine

    with Engine(db, create=False, readonly=True) as eng:
        return eng.status(run_id).to_json()


def stop_between_phases(db: Path, wf: Any, run_id: str, inputs: dict[str, Any], *, phases: int) -> None:
    """Run `phases` phases in this process, then stop the way a worker's
    shutdown does: checkpointed, lease released, resumable (interrupted)."""
    from phasegate import Engine

    checks = iter(range(10_000))
    with Engine(db) as eng:
        # Asked before each phase: the first `phases` asks say "go on".
        eng.should_stop = lambda: next(checks) >= phases
        outcome = eng.run(wf, run_id, inputs, target=TARGETS[wf.name])
    assert str(outcome.status) == "interrupted", outcome


def read_until(proc: subprocess.Popen[str], text: str, *, timeout: float = 90) -> str:
    """Read a background process's output until a line contains `text`;
    returns what was read (the caller keeps it: `stop` reads only the rest)."""
    import select

    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if text in line:
                return "".join(seen)
    raise AssertionError(f"never saw {text!r} in: {''.join(seen)}")
