"""Building the demo database: real runs of the sample workflows, really
interrupted.

Every state is reached the way it is reached in production: a `phasegate run`
process is started, stopped at a pause point and SIGKILLed from here; the run
is then resumed (which is how an engine notices what happened), an operator's
decision is recorded, and so on. The only direct edits are the two accidents
an engine cannot cause itself: a byte flipped in the database file on disk
(integrity) and a stored output that went missing (below floor).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phasegate import Engine, ExitCode, Outcome, PhasegateError, Workflow

from . import WORKFLOWS, approvals, billing, pipeline, research
from ._points import BEACON_ENV, PAUSE_ENV
from ._spare import Spare, start_time
from .gateway import Gateway

#: The marker that says a folder (and the database beside it) was built by the
#: demo, so `--force` never deletes anything else.
MARKER = "PHASEGATE_DEMO"
LIVE_PID = "live-run.pid"
"""In the working folder: the pid and start time of the slow background run
(for `--force` and tests: a pid alone may have been reused)."""
KILLED_PROCESSES = 9
"""How many scenarios SIGKILL a `phasegate run` (one spare process each)."""


class DemoError(PhasegateError):
    """A scenario did not reach the state it was built to show."""

    title = "demo build failed"
    exit_code = ExitCode.FAILED


Step = Callable[[str], None]


@dataclass
class Demo:
    """One demo database and its working folder."""

    db: Path
    work: Path
    operator: str = "demo"
    live_seconds: float = 180.0
    _spares: list[Spare] = field(default_factory=list)
    _running: list[Any] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- processes ----------------------------------------------------------------

    def prefork(self, n: int = KILLED_PROCESSES + 1) -> None:
        """Fork the processes the scenarios will kill, now, while this process
        has no other thread (forking a threaded process is not safe)."""
        if hasattr(os, "fork"):
            self._spares = [Spare() for _ in range(n)]

    def _start(self, argv: list[str], env: dict[str, str], log: Path, *, detach: bool = False) -> Any:
        """`phasegate ARGV` in another process: a spare if one is left, else a fresh interpreter."""
        with self._lock:
            spare = self._spares.pop() if self._spares else None
        if spare is not None:
            spare.run(argv, env=env, log=log, detach=detach)
            proc: Any = spare
        else:
            with log.open("ab") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "phasegate", *argv],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=detach,
                )
        if not detach:
            with self._lock:
                self._running.append(proc)
        return proc

    def stop_children(self) -> None:
        """Kill whatever is still paused (a failed or interrupted build), dismiss unused spares."""
        with self._lock:
            running, spares = list(self._running), list(self._spares)
            self._running, self._spares = [], []
        for proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for spare in spares:
            spare.dismiss()

    # -- the tools scenarios use ------------------------------------------------

    def workdir(self, run_id: str) -> Path:
        return self.work / run_id

    def kill_at(self, workflow: str, run_id: str, inputs: dict[str, Any], point: str) -> None:
        """Run `phasegate run` in another process until it pauses at `point`,
        then SIGKILL it: no cleanup, no last write, as in a crash."""
        beacon = self.work / f".{run_id}.paused"
        log = self.work / f".{run_id}.log"
        beacon.unlink(missing_ok=True)
        env = {**os.environ, PAUSE_ENV: point, BEACON_ENV: str(beacon)}
        argv = ["run", WORKFLOWS[workflow], "--run-id", run_id, "--input", json.dumps(inputs), "--db", str(self.db)]
        proc = self._start(argv, env, log)
        deadline = time.monotonic() + 60
        try:
            while not beacon.exists():
                if proc.poll() is not None:
                    err = log.read_text(errors="replace").strip() if log.exists() else ""
                    raise DemoError(f"{run_id} ended (exit {proc.returncode}) before reaching {point}: {err[-300:]}")
                if time.monotonic() > deadline:
                    raise DemoError(f"{run_id} did not reach {point} within 60 s")
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            with self._lock:
                self._running.remove(proc)
            beacon.unlink(missing_ok=True)
            log.unlink(missing_ok=True)

    def run(self, wf: Workflow, run_id: str, inputs: dict[str, Any] | None = None) -> Outcome:
        """Start or resume a run in this process (the same engine call the CLI makes)."""
        target = WORKFLOWS[wf.name]
        with Engine(self.db) as eng:
            return eng.run(wf, run_id, inputs, target=target)

    def decide(self, run_id: str, action: str, reason: str, **kw: Any) -> None:
        with Engine(self.db) as eng:
            eng.decide(run_id, action, reason=reason, operator=self.operator, **kw)

    @staticmethod
    def expect(o: Outcome, status: str, kind: str | None = None) -> None:
        kinds = [str(b.kind) for b in o.blocked]
        if str(o.status) != status or (kind is not None and kind not in kinds):
            got = f"{o.status}" + (f" ({', '.join(kinds)})" if kinds else "") + (f": {o.error}" if o.error else "")
            raise DemoError(f"run {o.run_id}: expected {status}{f' ({kind})' if kind else ''}, got {got}")

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Straight at the file, as a disk or an operator's mistake would be."""
        conn = sqlite3.connect(self.db, timeout=60)
        try:
            rows = conn.execute(statement, params).fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()


# -- the scenarios ----------------------------------------------------------------
# Each returns nothing and raises DemoError when its run is not in the state it
# was built to show. They run concurrently: each touches only its own run.


def billing_completed(d: Demo, step: Step) -> None:
    rid = "billing-acme-2026-11"
    inputs = billing.prepare(d.workdir(rid), customer="acme", idempotent=True)
    step("acme: charging cards; SIGKILL right after the gateway took INV-1002")
    d.kill_at("billing", rid, inputs, "charged:INV-1002")
    step("acme: resumed; the idempotent gateway replays INV-1002 by key")
    d.expect(d.run(billing.wf, rid), "completed")


def billing_in_doubt(d: Demo, step: Step) -> None:
    rid = "billing-globex-2026-11"
    inputs = billing.prepare(d.workdir(rid), customer="globex", idempotent=False)
    step("globex: SIGKILL between a charge and its record (gateway not idempotent)")
    d.kill_at("billing", rid, inputs, "charged:INV-1003")
    # The reconcile hook would settle it from the gateway's ledger; the
    # lookup is down, so the charge stays in doubt for a person.
    Gateway(d.workdir(rid) / "gateway", idempotent=False).set_lookup_down(True)
    step("globex: resumed; the gateway's lookup is down, so the charge is in doubt")
    d.expect(d.run(billing.wf, rid), "blocked", "in_doubt_effect")


def _tax_change(customer: str) -> Callable[[Demo, Step], None]:
    """A billing run priced, killed before charging, and blocked by the tax
    table's change. Three customers meet the same change: one cause for
    three runs, decided as one (`decide --cause`)."""

    def scenario(d: Demo, step: Step) -> None:
        rid = f"billing-{customer}-2026-11"
        inputs = billing.prepare(d.workdir(rid), customer=customer, idempotent=True)
        step(f"{customer}: priced, then SIGKILL before charging")
        d.kill_at("billing", rid, inputs, "start:charge")
        step(f"{customer}: tax rates change on disk; resumed")
        rates = d.workdir(rid) / "config" / "tax_rates.json"
        doc = json.loads(rates.read_text())
        doc["table"], doc["rates"]["standard"] = "EU-2027-Q1", 0.21
        rates.write_text(json.dumps(doc, indent=2) + "\n")
        d.expect(d.run(billing.wf, rid), "blocked", "env_mismatch")

    return scenario


billing_env_mismatch = _tax_change("initech")
#: The same tax-rate change stops two more billing runs (the demo's cause of several runs).
TAX_CHANGE_CUSTOMERS = ("initech", "hooli", "umbrella")


def pipeline_interrupted(d: Demo, step: Step) -> None:
    rid = "pipeline-orders-2026-11-29"
    inputs = pipeline.prepare(d.workdir(rid), batch="2026-11-29", files=6)
    step("orders 11-29: SIGKILL mid-transform, 3 of 6 files done")
    d.kill_at("pipeline", rid, inputs, "transformed:orders-2026-11-29-02.csv")


def pipeline_prunable(d: Demo, step: Step) -> None:
    rid = "pipeline-orders-2026-11-28"
    inputs = pipeline.prepare(d.workdir(rid), batch="2026-11-28", files=6)
    step("orders 11-28: transformed, SIGKILL before publishing")
    d.kill_at("pipeline", rid, inputs, "start:publish")
    step("orders 11-28: rewound to transform, re-run, published (old outputs now prunable)")
    d.decide(
        rid, "rewind", "re-run the transform after the min_cents fix (PIPE-231) before publishing", phase="transform"
    )
    d.expect(d.run(pipeline.wf, rid), "completed")


def pipeline_failed(d: Demo, step: Step) -> None:
    rid = "pipeline-orders-2026-11-27"
    inputs = pipeline.prepare(d.workdir(rid), batch="2026-11-27", files=6, missing=("3",))
    step("orders 11-27: a file vanished from the source (404)")
    d.expect(d.run(pipeline.wf, rid, inputs), "failed")


def research_below_floor(d: Demo, step: Step) -> None:
    rid = "research-battery-storage"
    inputs = research.prepare(d.workdir(rid), topic="grid-scale battery storage")
    step("battery storage: sources gathered, SIGKILL before analysis")
    d.kill_at("research", rid, inputs, "start:analyze")
    step("battery storage: the gathered sources are lost; resumed")
    d.sql(
        "UPDATE phasegate_checkpoints SET output_json = NULL WHERE run_id = ? AND phase = 'gather' AND status = 'live'",
        (rid,),
    )
    d.expect(d.run(research.wf, rid), "blocked", "below_floor")


def research_to_damage(d: Demo, step: Step) -> None:
    rid = "research-heat-pumps"
    inputs = research.prepare(d.workdir(rid), topic="heat pumps in old buildings")
    step("heat pumps: analysed, SIGKILL before the report")
    d.kill_at("research", rid, inputs, "start:write_report")


def research_completed(d: Demo, step: Step) -> None:
    rid = "research-sodium-ion"
    inputs = research.prepare(d.workdir(rid), topic="sodium-ion batteries", questions=5)
    step("sodium-ion: report published")
    d.expect(d.run(research.wf, rid, inputs), "completed")


def _expect_waiting(o: Outcome, kind: str) -> None:
    waiting = o.waiting or {}
    if str(o.status) != "waiting" or waiting.get("kind") != kind:
        raise DemoError(
            f"run {o.run_id}: expected waiting ({kind}), got {o.status} {waiting.get('kind') or ''}".strip()
        )


def approvals_asking(d: Demo, step: Step) -> None:
    rid = "approvals-checkout-oom"
    inputs = approvals.prepare(d.workdir(rid), service="checkout")
    step("checkout agent: plans to drop cache tables; asks a person first (waiting for an answer)")
    _expect_waiting(d.run(approvals.wf, rid, inputs), "answer")


def approvals_rate_limited(d: Demo, step: Step) -> None:
    rid = "approvals-search-429"
    inputs = approvals.prepare(d.workdir(rid), service="search", risky=False, limited=1, retry_after=5400)
    step("search agent: the model API answers 429, retry after 90 min (waiting, no process held)")
    _expect_waiting(d.run(approvals.wf, rid, inputs), "retry_later")


def approvals_cooling_down(d: Demo, step: Step) -> None:
    rid = "approvals-billing-restart"
    inputs = approvals.prepare(d.workdir(rid), service="billing-api", risky=False, settle=7200)
    step("billing-api agent: restarted the service; a two-hour durable cool-down (waiting on a timer)")
    _expect_waiting(d.run(approvals.wf, rid, inputs), "timer")


def approvals_paused(d: Demo, step: Step) -> None:
    rid = "approvals-payments-oom"
    inputs = approvals.prepare(d.workdir(rid), service="payments")
    step("payments agent: asks to drop cache tables; an operator pauses it to look first")
    _expect_waiting(d.run(approvals.wf, rid, inputs), "answer")
    d.decide(rid, "pause", "looking at the payments cache before anything is dropped (OPS-412)")


def approvals_cancelled(d: Demo, step: Step) -> None:
    rid = "approvals-ledger-oom"
    inputs = approvals.prepare(d.workdir(rid), service="ledger")
    step("ledger agent: asks to drop cache tables; an operator cancels it (never on the ledger)")
    _expect_waiting(d.run(approvals.wf, rid, inputs), "answer")
    d.decide(rid, "cancel", "the ledger's cache is never dropped by an agent; done by hand (OPS-413)")


def refunds_agent_asking(d: Demo, step: Step) -> None:
    try:
        from . import refunds_agent
    except ImportError:
        step("pydantic-ai refunds agent: skipped (pip install 'phasegate[pydantic-ai]')")
        return
    rid = "refunds-agent-a1042"
    inputs = refunds_agent.prepare(d.workdir(rid))
    step("pydantic-ai refunds agent: looked the order up; its refund tool waits for approval")
    _expect_waiting(d.run(refunds_agent.wf, rid, inputs), "answer")


SCENARIOS: list[tuple[str, int, Callable[[Demo, Step], None]]] = [
    ("billing (in doubt)", 2, billing_in_doubt),
    ("research (below floor)", 2, research_below_floor),
    ("billing (environment)", 2, billing_env_mismatch),
    ("billing (environment, hooli)", 2, _tax_change("hooli")),
    ("billing (environment, umbrella)", 2, _tax_change("umbrella")),
    ("research (to damage)", 1, research_to_damage),
    ("pipeline (interrupted)", 1, pipeline_interrupted),
    ("billing (completed)", 2, billing_completed),
    ("pipeline (prunable)", 2, pipeline_prunable),
    ("pipeline (failed)", 1, pipeline_failed),
    ("research (completed)", 1, research_completed),
    ("approvals (asking)", 1, approvals_asking),
    ("approvals (rate limited)", 1, approvals_rate_limited),
    ("approvals (cooling down)", 1, approvals_cooling_down),
    ("approvals (paused)", 2, approvals_paused),
    ("approvals (cancelled)", 2, approvals_cancelled),
    ("refunds agent (asking)", 1, refunds_agent_asking),
]


# -- after the concurrent part: disk damage, then the live run --------------------------


def flip_a_byte(d: Demo, run_id: str, phase: str) -> int:
    """Flip one byte of a stored phase output in the database file itself, the
    way a bad disk would. Nothing else may have the file open."""
    d.sql("PRAGMA wal_checkpoint(TRUNCATE)")
    rows = d.sql(
        "SELECT output_json FROM phasegate_checkpoints WHERE run_id = ? AND phase = ? AND status = 'live'",
        (run_id, phase),
    )
    if not rows or not rows[0][0]:
        raise DemoError(f"run {run_id} has no stored output of {phase} to damage")
    text = rows[0][0].encode("utf-8")
    raw = bytearray(d.db.read_bytes())
    at = raw.find(text)
    if at < 0:
        raise DemoError(f"the output of {phase} in {run_id} is not stored in one piece; cannot damage it")
    # A letter in the middle becomes another letter: still valid JSON, no longer the bytes the chain hashed.
    hits = 0
    while at >= 0:
        i = at + len(text) // 2
        while not chr(raw[i]).isalpha():
            i += 1
        raw[i] = ord("x") if raw[i] != ord("x") else ord("y")
        hits += 1
        at = raw.find(text, at + 1)
    with d.db.open("r+b") as fh:
        fh.write(bytes(raw))
        fh.flush()
        os.fsync(fh.fileno())
    return hits


def damage_and_verify(d: Demo, step: Step) -> None:
    rid = "research-heat-pumps"
    step("heat pumps: one byte of the stored analysis flipped on disk")
    flip_a_byte(d, rid, "analyze")
    step("verify: the damage is found and the run is blocked")
    with Engine(d.db) as eng:
        bad = [r for r in eng.verify() if not r.ok]
    if [r.run_id for r in bad] != [rid]:
        raise DemoError(f"verify found damage in {[r.run_id for r in bad]}, expected only {rid}")


def start_live(d: Demo, step: Step) -> int:
    """A slow pipeline run in a detached process that keeps checkpointing for a
    few minutes, so the console has something moving. Returns its pid."""
    rid = "pipeline-events-live"
    files = 48
    pace = max(d.live_seconds / (files * 0.33), 0.05)
    inputs = pipeline.prepare(d.workdir(rid), batch="2026-11-30", files=files, rows=30, pace=pace)
    step("events (live): started in the background; it runs for a few minutes")
    argv = ["run", WORKFLOWS["pipeline"], "--run-id", rid, "--input", json.dumps(inputs), "--db", str(d.db)]
    proc = d._start(argv, dict(os.environ), d.work / "live-run.log", detach=True)
    (d.work / LIVE_PID).write_text(f"{proc.pid}\n{start_time(proc.pid)}\n{d.db}\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DemoError(f"the live run exited at once (exit {proc.returncode}); see {d.work / 'live-run.log'}")
        rows = d.sql("SELECT lease_pid FROM phasegate_runs WHERE run_id = ?", (rid,))
        if rows and rows[0][0] == proc.pid:
            return int(proc.pid)
        time.sleep(0.05)
    raise DemoError("the live run did not start within 30 s")


def build(d: Demo, progress: Callable[[str, int], Callable[[str], None]] | None = None) -> float:
    """Build every scenario into `d.db`; returns the seconds it took."""
    t0 = time.monotonic()
    d.work.mkdir(parents=True, exist_ok=True)

    def noop_factory(_label: str, _total: int) -> Step:
        return lambda _text: None

    make = progress or noop_factory
    steps = [(fn, make(label, total)) for label, total, fn in SCENARIOS]
    after = make("damage, verify, live run", 3)
    # The store is created once, before the writers start.
    Engine(d.db).close()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = [pool.submit(fn, d, step) for fn, step in steps]
            errors = [f.exception() for f in futures]
        failed = [e for e in errors if e is not None]
        if failed:
            raise failed[0]
        damage_and_verify(d, after)
        start_live(d, after)
    finally:
        d.stop_children()
    return time.monotonic() - t0
