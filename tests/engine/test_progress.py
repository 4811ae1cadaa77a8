"""`ctx.progress` (#42) through the command line, on SQLite and PostgreSQL:
a run that reports at every item of a loop, read by `status --json` while
it runs, killed with SIGKILL (the last-known progress stays), resumed (its
checkpoint clears it); and `phasegate follow` reading a run that moves, is
killed and resumes: every durable step once, in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engine_harness import Harness, spawn

from phasegate import Engine, PhaseContext, Workflow
from tests.support.cli import ROOT
from tests.support.waiting import until

FLOW = f"{ROOT / 'tests' / 'workflows' / 'progressing.py'}:wf"


def _start(h: Harness, run_id: str, **inputs: Any) -> Any:
    args = ["run", FLOW, "--run-id", run_id, "--input", json.dumps(inputs), "--db", h.target]
    return spawn(args, env=h.env)


def _progress(h: Harness, run_id: str) -> dict[str, Any] | None:
    """The run's `status --json` progress; None too while the run's store or row is not made yet."""
    p = h.cli("status", run_id, "--json")
    if p.returncode != 0:
        return None
    got: dict[str, Any] | None = json.loads(p.stdout)["progress"]
    return got


def test_status_json_progress_survives_a_sigkill_and_the_phase_checkpoint_clears_it(h: Harness) -> None:
    gate = h.tmp / "gate"
    child = _start(h, "p1", items=200, pace=0.002, gate=str(gate))
    # The loop holds before its last item until the gate exists: 199 of 200 reported.
    seen = until(lambda: (p := _progress(h, "p1")) is not None and p["done"] == 199 and p, "199 of 200 reported")
    assert seen["phase"] == "load" and seen["total"] == 200 and seen["message"] == "item 198"
    text = h.cli("status", "p1")
    assert "progress  load 199/200 (99%) - item 198" in text.stdout, text.stdout
    assert child.kill().killed
    after = h.status("p1")
    assert after["status"] == "interrupted"
    assert after["progress"] == seen  # the last-known progress, as it was written before the kill
    gate.touch()
    done = h.resume("p1")
    assert done.returncode == 0, done.stdout + done.stderr
    final = h.status("p1")
    assert final["status"] == "completed" and final["progress"] is None


def test_follow_reads_a_run_that_moves_is_killed_and_resumes_every_step_once_in_order(h: Harness) -> None:
    gate = h.tmp / "gate"
    n = 40
    run = _start(h, "f1", items=n, pace=0.01, steps=True, gate=str(gate))
    until(lambda: _progress(h, "f1") is not None, "the run's first report")
    follow = spawn(["follow", "f1", "--json", "--db", h.target], env=h.env)
    until(lambda: follow.output_so_far().count('"kind": "step"') >= 10, "follow to print ten steps")
    until(lambda: (p := _progress(h, "f1")) is not None and p["done"] == n - 1, "the run to reach its gate")
    assert run.kill().killed
    until(lambda: '"status": "interrupted"' in follow.output_so_far(), "follow to see the run interrupted")
    gate.touch()
    done = h.resume("f1")
    assert done.returncode == 0, done.stdout + done.stderr
    ended = follow.wait(60)
    assert ended.returncode == 0, ended.stderr
    events = [json.loads(line) for line in ended.stdout.splitlines()]
    keys = [e["key"] for e in events if e["kind"] == "step"]
    assert keys == [f"item-{i}" for i in range(n)]  # every step once, in the order saved
    statuses = [e["status"] for e in events if e["kind"] == "status"]
    assert statuses[0] == "running" and "interrupted" in statuses and statuses[-1] == "completed"
    assert statuses[statuses.index("interrupted") + 1] == "running"
    phases = [e["phase"] for e in events if e["kind"] == "phase"]
    assert phases == ["load", "report"]
    assert any(e["kind"] == "progress" and e["total"] == n for e in events)
    assert events[-1]["kind"] == "status" and events[-1]["status"] == "completed"


def test_follow_of_an_unknown_run_is_one_line_and_exit_2(h: Harness) -> None:
    assert h.cli("run", FLOW, "--run-id", "r0", "--input", json.dumps({"items": 1})).returncode == 0
    p = h.cli("follow", "nope")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and "no run 'nope'" in p.stderr


def test_follow_since_leaves_out_what_came_before(h: Harness) -> None:
    assert h.cli("run", FLOW, "--run-id", "s1", "--input", json.dumps({"items": 5, "steps": True})).returncode == 0
    every = h.cli("follow", "s1", "--json")
    assert every.returncode == 0 and every.stdout.count('"kind": "step"') == 5
    later = h.cli("follow", "s1", "--json", "--since", "2999-01-01T00:00:00Z")
    # Only the run's status as it is now: nothing recorded since then.
    assert [json.loads(x)["kind"] for x in later.stdout.splitlines()] == ["status"]
    bad = h.cli("follow", "s1", "--since", "yesterday")
    assert bad.returncode == 2 and "--since 'yesterday'" in bad.stderr


def test_a_hostile_message_is_escaped_in_status_and_follow(h: Harness) -> None:
    gate = h.tmp / "gate"
    hostile = "\x1b]52;c;cHduZWQ=\x07\u202egnp.exe "
    child = _start(h, "x1", items=3, gate=str(gate), say=hostile)
    try:
        until(lambda: (p := _progress(h, "x1")) is not None and p["done"] == 2, "the run at its gate")
        text = h.cli("status", "x1").stdout
        assert "\\x1b]52;c;cHduZWQ=\\x07<U+202E>gnp.exe item 1" in text and "\x1b" not in text, text
        assert h.status("x1")["progress"]["message"] == hostile + "item 1"  # the JSON holds it as stored
        said = spawn(["follow", "x1", "--db", h.target], env=h.env)
        as_json = spawn(["follow", "x1", "--json", "--db", h.target], env=h.env)
        until(lambda: "item 1" in said.output_so_far() and "item 1" in as_json.output_so_far(), "both follows")
    finally:
        gate.touch()
        child.wait(60)
    text = said.wait(60).stdout
    assert "<U+202E>gnp.exe item 1" in text and "\x1b" not in text and "\u202e" not in text, text
    lines = as_json.wait(60).stdout
    assert "\x1b" not in lines and "\u202e" not in lines, lines


def test_reports_ride_with_the_steps_and_add_no_commit_per_call(tmp_path: Path) -> None:
    from bench.progress import wal_commits  # commits counted in the WAL's commit frames, not by our code
    from phasegate.authoring.loader import load

    wf = load(FLOW)
    got = {}
    for report in (False, True):
        db = tmp_path / f"{report}.db"
        with Engine(db) as eng:
            before = wal_commits(db)
            assert eng.run(wf, "c1", {"items": 100, "steps": True, "report": report}).status.value == "completed"
            got[report] = wal_commits(db) - before
    # 100 reports; each rides with a step's commit (a loaded machine may let the timer write one or two alone).
    assert got[False] >= 100 and got[True] - got[False] <= 2, got


def test_a_phase_that_fails_midway_keeps_its_last_report(tmp_path: Path) -> None:
    wf = Workflow("fails-midway")

    @wf.phase()
    def only(ctx: PhaseContext) -> None:
        for i in range(50):
            ctx.progress(i + 1, 100, f"row {i}")
        raise RuntimeError("row 50 is bad")

    with Engine(tmp_path / "f.db") as eng:
        assert eng.run(wf, "m1", {}).status.value == "failed"
        got = eng.status("m1").progress
        assert got is not None and (got.done, got.total, got.message) == (50, 100, "row 49")


@pytest.mark.parametrize(
    "args",
    [(-1,), (float("nan"),), (True,), (1, 0), (1, "ten"), (1, 10, 5)],
)
def test_a_bad_progress_report_fails_the_phase_in_one_line(tmp_path: Path, args: tuple[Any, ...]) -> None:
    wf = Workflow("bad-progress")

    @wf.phase()
    def only(ctx: PhaseContext) -> None:
        ctx.progress(*args)

    with Engine(tmp_path / "s.db") as eng:
        out = eng.run(wf, "b1", {})
        assert out.status.value == "failed"
        assert out.error is not None and "ctx.progress" in str(out.error.get("message"))
