"""Kill your own run at each step, in your own tests.

`kill_at_each_step` runs a workflow once to the end to learn where it can be
killed: before each phase, after each effect's intent is committed, after
each effect's function returned (its completion not yet committed), after
each durable step, inside each checkpoint's transaction and after it
committed. Then, for each of those points, it starts the workflow again in a
fresh store, in a forked child of this process that SIGKILLs itself exactly
there, resumes the run in another child, and compares how it ended with the
uninterrupted run: its status (as `phasegate status --json` says it), its
output, the effects left in doubt, and what the workflow did to the world
outside (`world`). `KillReport.assert_ok` raises one message naming the first
point where a resumed run went another way.

    from phasegate.testing import kill_at_each_step

    def test_billing_survives_a_kill_anywhere(tmp_path):
        report = kill_at_each_step(wf, {"invoices": 2}, workdir=tmp_path)
        report.assert_ok()

Each attempt is a child of this process (fork): no interpreter to start, so a
workflow of a dozen points takes about a second. A module-level value that
one phase sets and a later phase reads is lost with the killed child, as it
would be in production: exactly what this is for. SQLite only: each attempt
has its own store file under `workdir`. The killed child holds each effect's
completion until the run's next transaction (production commits it alone
after 20 ms at most), so an effect is in doubt at the same points every time:
from its intent to the commit its completion rides with.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _pause
from .authoring.workflow import Workflow
from .observe import hooks

__all__ = ["KillPoint", "KillReport", "KillResult", "KillTestFailed", "kill_at_each_step"]

#: The pause points (`_pause.pause_point`) that are kill points: a phase about
#: to be called, an effect's intent committed before its call, a checkpoint's
#: transaction before its commit. (`in-verify` is not a run's.)
_PAUSE_KINDS = frozenset({"in-phase", "after-intent", "in-commit"})

_RUN_ID = "kill-test"

_RIDE = 600.0
"""Seconds an effect's completion waits for the run's next transaction in the killed child."""

Inputs = Mapping[str, Any] | Callable[[Path], Mapping[str, Any]]
"""A run's inputs, or a function that makes them for one attempt's folder
(fresh outside state for each attempt: a ledger file, a directory)."""


@dataclass(frozen=True)
class KillPoint:
    """A place where the run was killed: the boundary's name and which time
    it was reached (a retried phase reaches its points again)."""

    label: str
    """The boundary: `in-phase:PHASE`, `after-intent:EFFECT`, `after-effect:PHASE/EFFECT`,
    `after-step:PHASE/KEY`, `in-commit:PHASE` or `after-checkpoint:PHASE`."""
    occurrence: int = 0
    """0 the first time the run reaches it, 1 the second..."""

    def __str__(self) -> str:
        return self.label if self.occurrence == 0 else f"{self.label} (time {self.occurrence + 1})"


@dataclass(frozen=True)
class KillResult:
    """How one attempt ended: the uninterrupted run, or one killed at a point and resumed."""

    point: KillPoint | None
    """Where it was killed; None for the uninterrupted run."""
    status: str
    """The run's status after the resume, as `phasegate status --json` says it."""
    output: Any
    """The run's result (what its last phase returned) when it completed, else None."""
    in_doubt: tuple[str, ...]
    """Keys of the effects left in doubt (they stop the run for an operator)."""
    world: Any
    """What `world` returned for this attempt's folder (None without `world`)."""
    matched: bool = True
    """It ended as the uninterrupted run did."""
    why: str = ""
    """What differs, in words ("" when it matched)."""
    error: str = ""
    """A child that did not end cleanly: its last line of error output."""


class KillTestFailed(AssertionError):
    """A run killed at some point and resumed did not end as the
    uninterrupted run did (`KillReport.assert_ok`)."""


@dataclass(frozen=True)
class KillReport:
    """What `kill_at_each_step` found: the uninterrupted run and every kill."""

    workflow: str
    """The workflow's name."""
    uninterrupted: KillResult
    """The run that was never killed: what every other attempt is compared with."""
    kills: tuple[KillResult, ...] = field(default_factory=tuple)
    """One attempt per kill point, in the order the run reaches them."""

    @property
    def failures(self) -> list[KillResult]:
        """The attempts that did not end as the uninterrupted run did."""
        return [k for k in self.kills if not k.matched]

    def assert_ok(self, *, allow_doubt: bool = False) -> None:
        """Raise unless every killed and resumed run ended as the uninterrupted one.

        Args:
            allow_doubt: Count a run that stopped on an effect in doubt (killed
                between an effect's intent and its completion) as fine: that
                effect is neither idempotent nor reconcilable, and you mean an
                operator to answer it.

        Raises:
            KillTestFailed: One message naming the first point that went
                another way, what differed, and how many other points did.
        """
        bad = [k for k in self.failures if not (allow_doubt and k.in_doubt and not k.error)]
        if not bad:
            return
        first = bad[0]
        where = self.kills.index(first) + 1
        more = f"; {len(bad) - 1} more point(s) differ: {', '.join(str(k.point) for k in bad[1:4])}" if bad[1:] else ""
        raise KillTestFailed(
            f"workflow {self.workflow}: killed at {first.point} (point {where} of {len(self.kills)}) and resumed,"
            f" the run {first.why}{more}"
        )

    def __str__(self) -> str:
        lines = [f"{self.workflow}: {len(self.kills)} kill point(s), {len(self.failures)} differ"]
        lines += [
            f"  {'ok  ' if k.matched else 'DIFF'} {k.point}: {k.status}{' - ' + k.why if k.why else ''}"
            for k in self.kills
        ]
        return "\n".join(lines)


def kill_at_each_step(
    workflow: Workflow,
    inputs: Inputs,
    *,
    workdir: str | Path,
    world: Callable[[Path], Any] | None = None,
    same: Callable[[Any, Any], bool] | None = None,
    timeout: float = 60.0,
) -> KillReport:
    """Kill the workflow's run at each of its boundaries and check that each
    resumed run ends as the uninterrupted one.

    Args:
        workflow: The workflow (a `phasegate.Workflow`, as your module defines it).
        inputs: Its inputs, or a function that makes them for one attempt's
            folder (give each attempt its own outside state: a file your
            effects write to, a directory).
        workdir: A folder for the attempts, one subfolder each (pytest's `tmp_path`).
        world: What the run did outside phasegate, read from an attempt's
            folder once it ended (the lines your fake gateway wrote); compared
            too. A side effect made outside `ctx.effect` shows here: done twice.
        same: Whether two outputs count as the same (default `==`): for an
            output that holds a time or a random id by design.
        timeout: Seconds each child may take before it is killed and the
            attempt reported as failed.

    Returns:
        The report: the uninterrupted run and each kill point's attempt.

    Raises:
        KillTestFailed: The uninterrupted run itself did not run (the child
            failed before it ended, or took longer than `timeout`).
    """
    root = Path(workdir)
    eq = same or (lambda a, b: a == b)
    _warm(root)
    base_dir = root / "uninterrupted"
    points, base = _attempt(workflow, inputs, base_dir, None, world, timeout)
    if base.error:
        raise KillTestFailed(f"workflow {workflow.name}: the uninterrupted run did not end: {base.error}")
    kills: list[KillResult] = []
    for i, point in enumerate(_distinct(points)):
        _reached, got = _attempt(workflow, inputs, root / f"kill-{i + 1:03d}", point, world, timeout)
        why = _difference(base, got, eq)
        kills.append(KillResult(point, got.status, got.output, got.in_doubt, got.world, not why, why, got.error))
    return KillReport(workflow.name, base, tuple(kills))


def _distinct(points: list[str]) -> list[KillPoint]:
    """Each point the run reached, less a checkpoint's commit followed at
    once by the next phase's start: no code of yours and no record comes
    between the two, so a kill at either leaves the same store (the last
    phase's is kept)."""
    seen: dict[str, int] = {}
    out: list[KillPoint] = []
    for i, label in enumerate(points):
        point = KillPoint(label, seen.get(label, 0))
        seen[label] = point.occurrence + 1
        if label.startswith("after-checkpoint:") and i + 1 < len(points) and points[i + 1].startswith("in-phase:"):
            continue
        out.append(point)
    return out


def _warm(root: Path) -> None:
    """Import what a run imports, here, once: every child is forked warm (an
    import of the engine takes longer than a whole small run)."""
    from .engine import Engine

    root.mkdir(parents=True, exist_ok=True)
    warm = root / "warm.db"
    with Engine(warm):
        pass  # the store's driver and dialect load on first use
    for p in root.glob("warm.db*"):
        p.unlink()


def _difference(base: KillResult, got: KillResult, same: Callable[[Any, Any], bool]) -> str:
    """What the resumed attempt did otherwise than the uninterrupted run, in words; "" when nothing."""
    if got.error:
        return f"did not end: {got.error}"
    if got.in_doubt and not base.in_doubt:
        return f"stopped with effect {', '.join(got.in_doubt)} in doubt (status {got.status})"
    if got.status != base.status:
        return f"ended {got.status}, not {base.status}"
    if not same(got.output, base.output):
        return f"gave another output: {_short(got.output)}, not {_short(base.output)}"
    if got.world != base.world:
        return f"left the world otherwise: {_short(got.world)}, not {_short(base.world)}"
    return ""


def _short(value: Any) -> str:
    text = json.dumps(value, default=repr, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


def _attempt(
    workflow: Workflow,
    inputs: Inputs,
    folder: Path,
    kill: KillPoint | None,
    world: Callable[[Path], Any] | None,
    timeout: float,
) -> tuple[list[str], KillResult]:
    """One attempt in `folder`: the run started in a child (killed at `kill`,
    when it reaches it), then resumed in another; the points the first child
    reached, and how the run ended."""
    folder.mkdir(parents=True, exist_ok=True)
    given = dict(inputs(folder) if callable(inputs) else inputs)
    db = folder / "store.db"
    reached = folder / "points.jsonl"
    ended = folder / "ended.json"
    first = _fork(folder / "run", lambda: _run(workflow, db, given, reached, kill, ended), timeout)
    points = [json.loads(line) for line in reached.read_text().splitlines()] if reached.exists() else []
    error = ""
    if kill is not None and first != -signal.SIGKILL:
        error = _said(folder / "run", first, f"it never reached {kill}")
    elif kill is None and first != 0:
        error = _said(folder / "run", first, "")
    if kill is not None and not error:
        code = _fork(folder / "resume", lambda: _run(workflow, db, None, None, None, ended), timeout)
        if code != 0:
            error = _said(folder / "resume", code, "")
    said: dict[str, Any] = json.loads(ended.read_text()) if ended.exists() and not error else {}
    seen = world(folder) if world is not None else None
    result = KillResult(
        kill,
        str(said.get("status", "")),
        said.get("output"),
        tuple(said.get("in_doubt", ())),
        seen,
        error=error,
    )
    return points, result


def _said(prefix: Path, code: int, instead: str) -> str:
    """Why a child did not end as asked: `instead`, or its last line of error output."""
    if code == -signal.SIGKILL and not instead:
        return "the child was killed (it took longer than the timeout?)"
    err = prefix.with_suffix(".err")
    lines = [ln for ln in err.read_text(errors="replace").splitlines() if ln.strip()] if err.exists() else []
    last = lines[-1] if lines else f"exit {code}"
    return f"{instead} ({last})" if instead else last


def _run(
    workflow: Workflow,
    db: Path,
    inputs: dict[str, Any] | None,
    reached: Path | None,
    kill: KillPoint | None,
    ended: Path,
) -> int:
    """(in the child) Run or resume the run; write where it ended to `ended`."""
    from .engine import Engine
    from .states import EffectState

    if reached is not None:
        _Killer(reached, kill).install()
    # The first child holds each effect's completion for the run's next
    # transaction (as it does for up to 20 ms in production), so a kill
    # before that commit finds the effect in doubt every time, not only
    # when the timer was late: the widest window, and the same each run.
    with Engine(db, effect_flush=_RIDE if reached is not None else None) as eng:
        outcome = eng.run(workflow, _RUN_ID, inputs)
        view = eng.status(_RUN_ID)
        said = {
            "status": view.to_json()["status"],
            "output": outcome.result if outcome.status == "completed" else None,
            "in_doubt": [e.key for e in view.effects if e.state is EffectState.IN_DOUBT],
        }
    ended.write_text(json.dumps(said, default=repr))
    return 0


class _Killer(hooks.Observer):
    """(in the child) Writes each point the run reaches, and SIGKILLs this
    process at the one it is told to."""

    def __init__(self, reached: Path, kill: KillPoint | None) -> None:
        self._out = reached.open("a")
        self._kill = kill
        self._counts: dict[str, int] = {}

    def install(self) -> None:
        _pause.watch(self._pause)
        hooks.install(self)

    def _pause(self, kind: str, name: str) -> None:
        if kind in _PAUSE_KINDS:
            self._at(f"{kind}:{name}")

    def _at(self, label: str) -> None:
        n = self._counts.get(label, 0)
        self._counts[label] = n + 1
        self._out.write(json.dumps(label) + "\n")
        self._out.flush()
        if self._kill is not None and self._kill.label == label and self._kill.occurrence == n:
            os.kill(os.getpid(), signal.SIGKILL)

    def step(self, run_id: str, phase: str, key: str, began: float) -> None:
        self._at(f"after-step:{phase}/{key}")

    def effect(self, run_id: str, phase: str, key: str, outcome: str, began: float) -> None:
        if outcome == "done":
            self._at(f"after-effect:{key.removeprefix(run_id + '/')}")

    def checkpoint(self, run_id: str, workflow: str, phase: str, began: float) -> None:
        self._at(f"after-checkpoint:{phase}")


def _fork(prefix: Path, body: Callable[[], int], timeout: float) -> int:
    """Run `body` in a forked child with its output in `prefix`.out/.err; its
    exit code (negative: the signal that ended it), SIGKILLed past `timeout`."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        rc = 1
        try:
            os.dup2(os.open(prefix.with_suffix(".out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(prefix.with_suffix(".err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            rc = body()
        except BaseException:  # noqa: BLE001 - the child reports what the interpreter would print
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            os._exit(rc)
    return _wait(pid, timeout)


def _wait(pid: int, timeout: float) -> int:
    """The child's exit code (negative: its signal), waited on through its
    pidfd (or, on a kernel without one, asked every 10 ms); SIGKILLed once
    `timeout` passes."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return _wait_polling(pid, timeout)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _wait_polling(pid: int, timeout: float) -> int:
    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
