"""Crash torture: run the torture workflow in child processes, SIGKILL them
at random instants and at kill points, freeze them (SIGSTOP at a pause point,
then SIGCONT) with a short lease while an operator acts or does not, resume
each time, answer in-doubt effects the way an operator would, and check what
must hold afterwards.

With `redeploy_share`, the workflow runs from a copy of its file that is
redeployed between attempts (issue 41): a comment lands in a phase chosen at
random, under a new `PHASEGATE_CODE_VERSION`. An open phase replays its
saved steps into the new code (replay.py); a done phase's drift is approved
as an operator who shipped it would. Every invariant still holds: no effect
repeated, the outputs an uninterrupted run's, and each attempt's code version
recorded."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.pause import thaw, wait_stopped

from . import proc

WORKFLOWS = proc.ROOT / "tests" / "workflows"
TARGET = f"{WORKFLOWS / 'torture.py'}:wf"


def _pick(text: str, n: int) -> int:
    """A stable choice among n for a name (the same in every process)."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % n


def _wfmod() -> Any:
    from phasegate.authoring.loader import load

    load(TARGET)  # warms the loader's module cache, so forked children start at once
    import sys

    return next(
        m
        for n, m in sys.modules.items()
        if n.startswith("phasegate_target_") and getattr(m, "wf", None) is not None and m.wf.name == "test-torture"
    )


@dataclass
class RunReport:
    run_id: str
    seed: int
    kills: int = 0
    point_kills: int = 0
    pauses: Counter[str] = field(default_factory=Counter)
    """Pauses that landed, by what the operator did while the holder was frozen."""
    attempts: int = 0
    redeploys: int = 0
    """Code changes landed between two of its attempts."""
    versions: int = 0
    """The distinct code versions its attempts recorded (`status --json`'s `code`)."""
    decisions: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    """One line per attempt, printed with a failure so it can be read, not guessed."""

    @property
    def ok(self) -> bool:
        return not self.violations


class Torture:
    """One torture session: a folder, a database, a reference result."""

    def __init__(
        self,
        workdir: Path,
        *,
        items: int = 4,
        pace: float = 0.002,
        mode: str = "fork",
        point_share: float = 0.3,
        pause_share: float = 0.0,
        redeploy_share: float = 0.0,
        log: Any = print,
    ) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db = self.dir / "torture.db"
        self.items = items
        self.pace = pace
        self.mode = mode
        self.point_share = point_share
        self.pause_share = pause_share
        """Of the attempts that would be killed, the share frozen instead."""
        self.redeploy_share = redeploy_share
        """Of the attempts after a run's first, the share that a redeploy precedes."""
        self.target = TARGET
        self.deploys = 0
        if redeploy_share:
            deployed = self.dir / "deployed"
            deployed.mkdir(exist_ok=True)
            self.file = deployed / "torture.py"
            shutil.copyfile(WORKFLOWS / "torture.py", self.file)
            self.target = f"{self.file}:wf"
        self.log = log
        self.mod = _wfmod()
        self.corrections: dict[str, list[tuple[str, str]]] = {}
        """Run -> (effect, right result) confirmed with a wrong result, to correct."""
        self.reference, self.duration = self._reference()

    # -- helpers --------------------------------------------------------------

    def cli(self, *args: str) -> proc.Result:
        """An operator's read or decision: the same `phasegate` code, in this
        process (runs and resumes are always children, so they can be killed)."""
        return proc.inproc(args)

    def inputs(self, run_id: str) -> dict[str, Any]:
        return {
            "items": self.items,
            "pace": self.pace,
            # a third of the runs ask the gateway, a third ask and hear "unknown"
            "reconcile": ("", "ledger", "unknown")[_pick(run_id, 3)],
            "ledger": str(self.dir / f"{run_id}.ledger"),
            "mailbox": str(self.dir / f"{run_id}.mailbox"),
        }

    def status(self, run_id: str) -> dict[str, Any]:
        r = self.cli("status", run_id, "--json", "--db", str(self.db))
        if r.rc != 0:
            raise AssertionError(f"status {run_id} exited {r.rc}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def _reference(self) -> tuple[dict[str, str], float]:
        """Output hashes of an uninterrupted run, and how long one takes."""
        rid = "reference"
        t0 = time.monotonic()
        r = proc.run(
            ["run", self.target, "--run-id", rid, "--input", json.dumps(self.inputs(rid)), "--db", str(self.db)],
            mode=self.mode,
        )
        took = time.monotonic() - t0
        if r.rc != 0:
            raise AssertionError(f"the uninterrupted reference run failed ({r.rc}): {r.stdout}{r.stderr}")
        return _hashes(self.status(rid)), took

    # -- one tortured run ---------------------------------------------------------

    def torture_run(self, run_id: str, seed: int, kills: int, pauses: int = 0) -> RunReport:
        rng = random.Random(seed)
        rep = RunReport(run_id, seed)
        trace = self.dir / f"{run_id}.trace"
        env = {"PHASEGATE_TEST_TRACE": str(trace)}
        first = [
            "run",
            self.target,
            "--run-id",
            run_id,
            "--input",
            json.dumps(self.inputs(run_id)),
            "--db",
            str(self.db),
        ]
        resume = ["resume", run_id, "--db", str(self.db)]
        points = self.mod.kill_points(self.items)
        reported: list[tuple[frozenset[str], int]] = []  # (phases status said were done, trace length after)
        started = False
        limit = (kills + pauses) * 6 + 40
        while rep.attempts < limit:
            rep.attempts += 1
            args = resume if started else first
            if self.redeploy_share and started and rng.random() < self.redeploy_share:
                env["PHASEGATE_CODE_VERSION"] = self._redeploy(rng)
                rep.redeploys += 1
            want_pause = sum(rep.pauses.values()) < pauses and (rep.kills >= kills or rng.random() < self.pause_share)
            if want_pause:
                paused = self._paused(args, run_id, rng, rep, env)
                if paused is None:
                    break  # a violation was recorded
                res, how, point = paused
                if res.rc == 4 and "lease lost" in res.stderr:
                    # The frozen holder stopped at its next write: resumable.
                    started = self._observe(run_id, trace, reported, rep) or started
                    self._history(rep, args, how, res, run_id)
                    continue
            else:
                want_kill = rep.kills < kills
                kill_env = dict(env)
                point = None
                if want_kill and rng.random() < self.point_share:
                    point = rng.choice(points)
                    kill_env["PHASEGATE_TEST_KILL_AT"] = point
                child = proc.start(args, env=kill_env, mode=self.mode)
                how = f"kill point {point}" if point else "no kill"
                if want_kill and point is None:
                    delay = rng.uniform(0, self.duration * 0.75)
                    how = f"kill after {delay * 1000:.0f} ms"
                    if rng.random() < 0.4:
                        # read status while the child checkpoints, then kill it
                        time.sleep(delay / 2)
                        started = self._observe(run_id, trace, reported, rep) or started
                        time.sleep(delay / 2)
                    else:
                        time.sleep(delay)
                    child.kill()
                try:
                    res = child.wait(120)
                except TimeoutError as exc:
                    rep.violations.append(str(exc))
                    break
            self._history(rep, args, how, res, run_id)
            if res.killed:
                rep.kills += 1
                rep.point_kills += point is not None
                started = self._observe(run_id, trace, reported, rep) or started
                continue
            if res.traceback:
                rep.violations.append(f"attempt {rep.attempts}: traceback:\n{res.stderr[-2000:]}")
                break
            started = True
            if res.rc == 0:
                if self._correct(run_id, rep):
                    # The correction re-opens the phases that read the result:
                    # what status said was done before it is no longer final.
                    reported.clear()
                    continue
                break
            if res.rc == 3 and (self._approve_code(run_id, rep) or self._answer(run_id, rep)):
                continue
            rep.violations.append(f"attempt {rep.attempts}: exit {res.rc}: {res.stdout.strip()} {res.stderr.strip()}")
            break
        else:
            rep.violations.append(f"no completion after {limit} attempts")
        self._check(run_id, trace, reported, rep)
        return rep

    def _redeploy(self, rng: random.Random) -> str:
        """A deploy lands: a comment in one phase, chosen at random, of the
        workflow's file. Each deploy makes the file longer, so no bytecode
        cached for an earlier one (keyed by mtime and size) is ever taken for it.

        Returns:
            The deploy's `PHASEGATE_CODE_VERSION`.
        """
        self.deploys += 1
        phase = rng.choice([p.name for p in self.mod.wf.phases])
        mark = f'    trace("start:{phase}")\n'
        text = self.file.read_text()
        self.file.write_text(text.replace(mark, mark + f"    # deploy {self.deploys}: {'-' * self.deploys}\n", 1))
        return f"deploy-{self.deploys}"

    def _approve_code(self, run_id: str, rep: RunReport) -> bool:
        """Approve a deploy's drift of done phases, as the operator who
        shipped it would. False when the run is blocked for anything else."""
        blocked = self.status(run_id)["blocked"]
        drifts = [b for b in blocked if b["kind"] == "env_mismatch"]
        if not drifts or len(drifts) != len(blocked):
            return False
        changes = [c for b in drifts for c in b.get("changes", [])]
        if not changes or not all(str(c.get("probe", "")).startswith("code:") for c in changes):
            return False
        args = ["decide", run_id, "approve", "--reason", "deployed: a comment", "--operator", "torture"]
        r = self.cli(*args, "--db", str(self.db))
        if r.rc != 0:
            rep.violations.append(f"decide approve exited {r.rc}: {r.stderr.strip()}")
            return False
        rep.decisions["approve_code"] += 1
        return True

    def _history(self, rep: RunReport, args: list[str], how: str, res: proc.Result, run_id: str) -> None:
        charged = Counter(r["key"].rsplit(":", 1)[-1] for r in self.mod.read_lines(self.inputs(run_id)["ledger"]))
        rep.history.append(
            f"attempt {rep.attempts} ({args[0]}, {how}): "
            + ("killed" if res.killed else f"exit {res.rc} {(res.stdout.strip() + ' ' + res.stderr.strip())[:200]}")
            + f"; gateway has charged items {dict(sorted(charged.items()))}"
        )

    # -- pauses -------------------------------------------------------------------

    def _paused(
        self, args: list[str], run_id: str, rng: random.Random, rep: RunReport, env: dict[str, str]
    ) -> tuple[proc.Result, str, str | None] | None:
        """One attempt frozen at a pause point with a 1 s lease. While the
        holder is frozen the operator does one of: nothing (it is continued
        before its lease lapses, or after), a forced takeover, or (frozen
        after a charge's intent) a forced answer to that charge from the
        gateway's ledger. Returns the attempt's result to handle as any other
        (a frozen holder that lost its lease exits 4), or None on a violation."""
        point = rng.choice(pause_points(self.mod, self.items))
        choices = ["thaw-early", "thaw-late", "takeover"] + (
            ["decide"] if point.startswith("after-intent:charge") else []
        )
        scenario = rng.choice(choices)
        how = f"paused at {point}, {scenario}"
        child = proc.start(args, env={**env, **SHORT_LEASE, "PHASEGATE_PAUSE_AT": point}, mode=self.mode)
        try:
            froze = wait_stopped(child.pid, child.alive, timeout=60)
        except AssertionError as exc:
            thaw(child.pid)
            child.kill()
            rep.violations.append(f"attempt {rep.attempts} ({how}): {exc}")
            return None
        if not froze:  # the point was not on this attempt's path
            return child.wait(120), f"{how} (not reached)", None
        rep.pauses[scenario] += 1
        answer: proc.Result | None = None
        try:
            if scenario != "thaw-early":
                deadline = time.monotonic() + 60
                while (seen := self.status(run_id))["status"] != "stalled":
                    if time.monotonic() > deadline:
                        # What it showed instead, to tell a lease from a status bug.
                        shown = {k: seen.get(k) for k in ("status", "lease", "attention")}
                        rep.violations.append(f"attempt {rep.attempts} ({how}): never shown as stalled: {shown}")
                        return None
                    time.sleep(0.05)
            if scenario == "takeover":
                taker = proc.start(
                    ["resume", run_id, "--force", "--db", str(self.db)], env={**env, **SHORT_LEASE}, mode=self.mode
                )
                answer = taker.wait(120)
                if answer.rc not in (0, 2, 3, 4) or answer.traceback:
                    rep.violations.append(
                        f"attempt {rep.attempts} ({how}): the takeover exited {answer.rc}: {answer.stderr.strip()}"
                    )
                    return None
                if answer.rc in (2, 4):
                    answer = None  # the frozen commit holds the lock: nothing was taken over
            elif scenario == "decide":
                if not self._answer(run_id, rep, force=True):
                    return None
        finally:
            thaw(child.pid)
        res = child.wait(120)
        if res.traceback or res.rc not in (0, 3, 4):
            rep.violations.append(
                f"attempt {rep.attempts} ({how}): the thawed holder exited {res.rc}: {res.stderr.strip()}"
            )
            return None
        if scenario != "thaw-early" and res.rc != 4:
            # Past its lease, it must stop at its next write: "lease lost".
            rep.violations.append(f"attempt {rep.attempts} ({how}): thawed past its lease, it exited {res.rc}, not 4")
            return None
        if answer is not None:
            self._history(rep, args, how + " (the frozen holder)", res, run_id)
            return answer, how + " (the takeover)", point
        return res, how, point

    def _observe(self, run_id: str, trace: Path, reported: list[tuple[frozenset[str], int]], rep: RunReport) -> bool:
        """Read status as an operator would; False when the run does not exist yet."""
        try:
            st = self.status(run_id)
        except AssertionError as exc:
            if "no such run" in str(exc):
                return False  # killed before its first write
            rep.violations.append(str(exc))
            return True
        if st["pending_decisions"]:
            # A decision waiting to apply (a correction re-opens phases) makes
            # what status says done now not final: nothing to hold it to.
            return True
        done = frozenset(p["name"] for p in st["phases"] if p["state"] in ("done", "degraded"))
        reported.append((done, len(_trace(trace))))
        return True

    def _answer(self, run_id: str, rep: RunReport, *, force: bool = False) -> bool:
        """Answer every in-doubt effect from the gateway's own ledger. False
        when the run is blocked for any other reason (that is a finding).
        With `force`, the run's holder is stalled: its in-doubt charges are
        answered with --force (the holder then must call nothing)."""
        st = self.status(run_id)
        blocked = (
            st["blocked"]
            if not force
            else [{"kind": "in_doubt_effect", "effect": e["key"]} for e in st["effects"] if e["state"] == "in_doubt"]
        )
        if not blocked or any(b["kind"] != "in_doubt_effect" for b in blocked):
            rep.violations.append(f"blocked for something other than an in-doubt effect: {blocked}")
            return False
        ledger = {r["key"]: r for r in self.mod.read_lines(self.inputs(run_id)["ledger"])}
        for b in blocked:
            key = b["effect"]
            if key in ledger:
                rec = ledger[key]
                right = json.dumps({"charge_id": rec["charge_id"], "amount": rec["amount"]})
                given = right
                if _pick(run_id + key, 3) == 0:
                    # a mistyped amount: corrected once the run has completed with it
                    given = json.dumps({"charge_id": rec["charge_id"], "amount": rec["amount"] + 1000})
                    self.corrections.setdefault(run_id, []).append((key, right))
                args = [
                    "decide",
                    run_id,
                    "confirm_effect",
                    "--effect",
                    key,
                    "--result",
                    given,
                    "--reason",
                    "gateway ledger shows the charge",
                    "--operator",
                    "torture",
                ]
                action = "confirm_effect"
            else:
                args = [
                    "decide",
                    run_id,
                    "retry_effect",
                    "--effect",
                    key,
                    "--reason",
                    "gateway ledger has no such charge",
                    "--operator",
                    "torture",
                ]
                action = "retry_effect"
            r = self.cli(*args, *(["--force"] if force else []), "--db", str(self.db))
            if r.rc != 0:
                rep.violations.append(f"decide {action} {key} exited {r.rc}: {r.stderr.strip()}")
                return False
            rep.decisions[action] += 1
        return True

    def _correct(self, run_id: str, rep: RunReport) -> bool:
        """Correct the results confirmed wrong, as an operator who noticed the
        totals would; True when a correction was recorded (the run goes again)."""
        todo = self.corrections.pop(run_id, [])
        for key, right in todo:
            args = ["decide", run_id, "confirm_effect", "--effect", key, "--result", right]
            r = self.cli(*args, "--reason", "the amount was mistyped", "--operator", "torture", "--db", str(self.db))
            if r.rc != 0:
                rep.violations.append(f"correction of {key} exited {r.rc}: {r.stderr.strip()}")
                return False
            rep.decisions["correction"] += 1
        return bool(todo)

    def _check(self, run_id: str, trace: Path, reported: list[tuple[frozenset[str], int]], rep: RunReport) -> None:
        st = self.status(run_id)
        v = rep.violations
        if st["status"] != "completed":
            v.append(f"ended {st['status']}, not completed")
        hashes = _hashes(st)
        if hashes != self.reference:
            v.append(f"phase outputs differ from an uninterrupted run's: {hashes} != {self.reference}")
        ins = self.inputs(run_id)
        charges = Counter(r["key"] for r in self.mod.read_lines(ins["ledger"]))
        twice = {k: n for k, n in charges.items() if n > 1}
        if twice:
            v.append(f"non-idempotent charges reached the gateway more than once: {twice}")
        if len(charges) != self.items:
            v.append(f"{len(charges)} distinct charges at the gateway, expected {self.items}")
        mails = Counter(r["key"] for r in self.mod.read_lines(ins["mailbox"]))
        if len(mails) != self.items or any(n > 1 for n in mails.values()):
            v.append(f"mailbox holds {dict(mails)}, expected each of {self.items} keys once")
        with closing(sqlite3.connect(self.db, isolation_level=None)) as conn:
            books = conn.execute(
                "SELECT count(*), count(DISTINCT key) FROM torture_books WHERE key LIKE ?", (f"{run_id}/%",)
            ).fetchone()
        if tuple(books) != (self.items, self.items):
            v.append(f"atomic bookings {tuple(books)}, expected {self.items} once each")
        lines = _trace(trace)
        for done, pos in reported:
            again = [ln for ln in lines[pos:] if ln.startswith("start:") and ln[6:] in done]
            if again:
                v.append(f"phases reported done were started again: {again} (done: {sorted(done)})")
                break
        code = st.get("code")
        if code is None:
            v.append("no code version recorded")
        else:
            rep.versions = len({a["digest"] for a in code["attempts"]} | {code["started"]["digest"]})
        r = self.cli("verify", "--db", str(self.db))
        if r.rc != 0:
            v.append(f"verify exited {r.rc}: {r.stdout.strip()[-500:]}")


#: The lease of a paused attempt: short, so a freeze outlives it quickly.
SHORT_LEASE = {"PHASEGATE_LEASE_SECONDS": "1"}


def pause_points(mod: Any, items: int) -> list[str]:
    """Where a holder can be frozen: after an effect's intent (non-idempotent
    charges, idempotent mails), at a phase's start, inside its checkpoint's commit."""
    pts = [f"in-phase:{p.name}" for p in mod.wf.phases] + [f"in-commit:{p.name}" for p in mod.wf.phases]
    for i in range(items):
        pts += [f"after-intent:charge:{i}", f"after-intent:mail:{i}"]
    return pts


def _trace(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _hashes(status: dict[str, Any]) -> dict[str, str]:
    return {o["phase"]: o["hash"] for o in status["outputs"]}


def torture(
    kills: int,
    seed: int,
    workdir: Path,
    *,
    mode: str = "fork",
    kills_per_run: int = 6,
    items: int = 4,
    log: Any = print,
    run_seed: int | None = None,
    pauses: int = 0,
    pauses_per_run: int = 3,
    redeploy_share: float = 0.0,
) -> list[RunReport]:
    """Torture runs until `kills` kills and `pauses` pauses have landed.
    Prints each run's seed. With `redeploy_share`, that share of the attempts
    after a run's first is preceded by a code change (see the module)."""
    t = Torture(
        workdir, items=items, mode=mode, log=log, pause_share=0.35 if pauses else 0.0, redeploy_share=redeploy_share
    )
    log(f"torture: seed {seed}, {kills} kills, {pauses} pauses, mode {mode}, reference run {t.duration * 1000:.0f} ms")
    reports: list[RunReport] = []
    total = 0
    paused = 0
    i = 0
    while total < kills or paused < pauses:
        rs = run_seed if run_seed is not None else seed * 100_003 + i
        rep = t.torture_run(
            f"t{seed}-{i}", rs, min(kills_per_run, max(kills - total, 0)), min(pauses_per_run, max(pauses - paused, 0))
        )
        reports.append(rep)
        total += rep.kills
        paused += sum(rep.pauses.values())
        mark = "ok  " if rep.ok else "FAIL"
        log(
            f"  {mark} run {rep.run_id} run-seed {rs}: {rep.kills} kills ({rep.point_kills} at kill points), "
            f"{sum(rep.pauses.values())} pauses {dict(rep.pauses) or ''}, "
            f"{rep.attempts} attempts, decisions {dict(rep.decisions) or '-'}"
            + (f", {rep.redeploys} redeploys, {rep.versions} code versions" if redeploy_share else "")
        )
        for line in rep.violations:
            log(f"       {line}")
        if rep.violations:
            for line in rep.history:
                log(f"         {line}")
        i += 1
        if run_seed is not None:
            break
        if rep.kills == 0 and not rep.pauses and rep.ok and i > (kills + pauses) * 3:
            log("  no kill landed in many runs; stopping")
            break
    return reports


def cleanup(workdir: Path) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
