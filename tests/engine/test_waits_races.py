"""Runs that wait (issue 27), reviewed: an operator's decision meeting a run
at a bad moment, and stored wait and hold records that were not written by
this engine. Through the command line and a real worker, on SQLite and
PostgreSQL, with the helpers of test_waits.py."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from engine_harness import ROOT, Harness, Proc, spawn
from test_second_operator import TwoAccounts, two  # noqa: F401 - the fixture, for the policy test
from test_waits import PARK, WAITS, move_timer, names, start, status_is, worker

from phasegate import Engine
from tests.support import cli
from tests.support.waiting import until

APPROVE = '{"approved": true, "amount": 7}'


def _decisions(h: Harness, run_id: str) -> list[tuple[str, str]]:
    return [(d["action"], d["state"]) for d in h.status(run_id)["decisions"]]


def test_a_forged_hold_never_settles_another_runs_decision(h):
    # a1 is answered: a worker is to resume it with the answer.
    assert start(h, "refund", "a1", order="A").returncode == 5
    assert h.decide("a1", "answer", "--question", "approve_refund", "--value", APPROVE).returncode == 0
    (answer,) = [d for d in h.status("a1")["decisions"] if d["action"] == "answer"]
    # t1's row is edited: a pause "asked" of it, naming a1's answer as its decision.
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    forged = {"action": "pause", "state": "asked", "by": "x", "reason": "y", "at": 0, "decision": answer["id"]}
    h.sql("UPDATE phasegate_runs SET held_json = ? WHERE run_id = 't1'", (json.dumps(forged),))
    h.resume("t1")
    assert _decisions(h, "a1") == [("answer", "pending")]  # not t1's to settle
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("a1")["status"] == "completed"
    assert "answered Approval True 7" in names(h)


def test_a_proposed_answer_survives_a_resume_of_the_waiting_run(two: TwoAccounts):  # noqa: F811
    h = two
    assert start(h, "refund", "r1", order="D-4").returncode == 5
    assert h.cli("policy", "--require-second", "answer", "--reason", "four eyes").returncode == 0
    prop = h.decide("r1", "answer", "--question", "approve_refund", "--value", APPROVE)
    assert prop.returncode == 0 and "proposed" in prop.stdout, prop
    # Resumed before the second: the run asks the same question again and parks.
    assert h.resume("r1").returncode == 5
    (d,) = [d for d in h.status("r1")["decisions"] if d["action"] == "answer"]
    assert d["state"] == "proposed"  # the question is still open: the proposal still answers it
    other = h.as_nobody("decide", "r1", "second", "--decision", str(d["id"]), "--reason", "checked the order")
    assert other.returncode == 0, other
    assert h.resume("r1").returncode == 0
    assert "answered Approval True 7" in names(h)


def test_a_reset_of_a_paused_run_is_refused(h):
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    assert h.cli("pause", "t1", "--reason", "hold it").returncode == 0
    before = h.dump()
    p = h.decide("t1", "reset")
    assert p.returncode == 2 and "paused" in p.stderr, p
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert h.dump() == before
    assert h.cli("worker", "--once").returncode == 0
    s = h.status("t1")
    assert s["status"] == "paused" and s["paused"]["by"] == "tester"


def test_a_forged_wait_record_does_not_break_the_run_s_actions(h):
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    forged = '{"kind":"answer","question":"approve","until":null}'
    h.sql("UPDATE phasegate_runs SET waiting_json = ? WHERE run_id = 't1'", (forged,))
    with Engine(h.target, create=False) as eng:
        assert eng.allowed_actions("t1") is not None  # what the console offers: no crash
    assert h.cli("status", "t1", "--json").returncode == 0


REVIEW = ROOT / "tests" / "workflows" / "waits_review.py"


def _review(h: Harness, name: str, run_id: str, env: dict[str, str] | None = None, **inputs: Any) -> Proc:
    return h.cli(
        "run", f"{REVIEW}:{name}", "--run-id", run_id, "--input", json.dumps(inputs), env={**PARK, **(env or {})}
    )


def _live(h: Harness, run_id: str) -> bool:
    s = h.status(run_id)
    return s["status"] == "running" and s["lease"] is not None


def test_an_answer_recorded_while_the_worker_runs_the_run_is_not_lost(h):
    # Two questions at once; each execution spends its first 2 s before asking.
    assert _review(h, "two_asks", "q1").returncode == 5
    assert [q["state"] for q in h.status("q1")["questions"]] == ["open", "open"]
    assert h.decide("q1", "answer", "--question", "first", "--value", "true").returncode == 0
    with worker(h, env={"WAITS_SLOW": "2"}):
        until(lambda: _live(h, "q1"), what="the worker to take the answered run up")
        # Answered while the worker's execution runs (it read the decisions at its start).
        assert h.decide("q1", "answer", "--question", "second", "--value", "false").returncode == 0
        until(status_is(h, "q1", "completed"), timeout=30, what="the worker to resume the run with its second answer")
    assert "answers True False" in names(h)


def test_a_rate_limit_wait_survives_an_early_resume_killed_before_its_retry(h):
    counter = h.tmp / "calls.txt"
    assert _review(h, "slow_limited", "l1", counter=str(counter), times=1, after=3600).returncode == 5
    until_before = h.status("l1")["waiting"]["until"]
    # An early resume, killed in the phase's first (not durable) step, before the rate-limited one.
    child = spawn(["resume", "l1", "--db", h.target], env={**h.env, **PARK, "WAITS_SLOW": "5"})
    try:
        until(lambda: _live(h, "l1"), what="the early resume to hold the run")
    finally:
        assert child.kill().killed
    # Resumed again an hour early: it parks for the same time, not calling the API again.
    p = h.resume("l1", env=PARK)
    assert p.returncode == 5, p
    assert [n for n in names(h) if n.startswith("api call")] == ["api call 1"]
    s = h.status("l1")
    assert s["waiting"]["kind"] == "retry_later" and s["waiting"]["until"] == until_before


def test_an_unpause_before_the_pause_is_met_lets_the_run_go_on(h):
    # The second step does not end until the test says: the pause and the unpause both come
    # before the run's next step, however slow the machine.
    hold = h.tmp / "hold"
    inputs = {"steps": 4, "pace": 0.05, "hold": str(hold), "hold_at": 1}
    child = spawn(["run", f"{WAITS}:ticking", "--run-id", "p1", "--input", json.dumps(inputs), "--db", h.target],
                  env={**h.env, **PARK})  # fmt: skip
    until(lambda: len(names(h)) >= 1, what="a first step")
    assert h.cli("pause", "p1", "--reason", "look").returncode == 0
    until(lambda: h.status("p1")["lease"] is not None, what="the run to hold its lease")
    # sleep: the hold watch looks every 0.2 s and leaves no sign of it; the bug shows however long this is
    time.sleep(0.5)
    back = h.cli("unpause", "p1", "--reason", "never mind")
    assert back.returncode == 0, back
    hold.touch()
    ended = child.wait()
    assert ended.rc == 0, ended
    assert h.status("p1")["status"] == "completed"


def test_an_unpause_restores_only_what_a_pause_could_have_set_aside(h):
    # The row edited: the pause claims the run was completed, or waiting on nothing, or is no pause at all.
    for rid, was in (("t1", {"status": "completed"}), ("t2", {"status": "waiting"}), ("t3", None)):
        assert start(h, "timer", rid, seconds=3600).returncode == 5
        assert h.cli("pause", rid, "--reason", "hold it").returncode == 0
        held = json.loads(h.sql("SELECT held_json FROM phasegate_runs WHERE run_id = ?", (rid,))[0][0])
        forged = {**held, "from": was} if was is not None else {"not": "a hold"}
        h.sql("UPDATE phasegate_runs SET held_json = ? WHERE run_id = ?", (json.dumps(forged), rid))
        assert h.cli("unpause", rid, "--reason", "go on").returncode == 0
    assert h.cli("worker", "--once", env=PARK).returncode == 0
    for rid in ("t1", "t2", "t3"):
        s = h.status(rid)  # taken up again: its own timer record parks it
        assert s["status"] == "waiting" and s["waiting"]["kind"] == "timer", s


def test_a_due_run_the_worker_cannot_resume_is_not_tried_at_every_look(h):
    flow = h.tmp / "flow.py"
    flow.write_text((ROOT / "tests" / "workflows" / "waits.py").read_text())
    # An hour's timer parks whatever the machine's load; then it is made due now.
    p = h.cli("run", f"{flow}:timer", "--run-id", "t1", "--input", json.dumps({"seconds": 3600}), env=PARK)
    assert p.returncode == 5, p
    move_timer(h, "t1", time.time())
    flow.write_text("raise RuntimeError('a bad deploy')\n")  # its code cannot be loaded now
    child = cli.start(["worker", "--poll", "0.2", "--db", h.target], env={**h.env, **PARK}, mode="exec")
    try:
        until(lambda: "a bad deploy" in child._err.read_text(), what="the worker to try the due run")
        time.sleep(2.0)  # sleep: ten of the worker's looks, which leave no trace when they try nothing
    finally:
        ended = child.kill()
    tries = ended.stderr.count("run t1: resuming")
    assert tries == 1, ended.stderr  # tried once: nothing changed since, as for any run it could not resume


def test_a_question_is_answerable_by_the_name_it_was_asked_with(h):
    # "/" is how an answer names PHASE/NAME: a question named with one could never be answered.
    assert _review(h, "slashed", "s1", question="tool:refund").returncode == 5
    assert h.decide("s1", "answer", "--question", "tool:refund", "--value", "true").returncode == 0
    p = _review(h, "slashed", "s2", question="tool/refund")
    if p.returncode == 5:
        ok = h.decide("s2", "answer", "--question", "tool/refund", "--value", "true")
        assert ok.returncode == 0, ok
    else:
        assert p.returncode == 1 and h.status("s2")["error"]["type"] == "UsageError", p
        assert "'/'" in h.status("s2")["error"]["message"]


def test_a_run_that_completes_before_meeting_a_pause_and_a_cancel_leaves_neither_pending(h):
    # Two steps, the last held until the test says: both holds are asked during it, and the
    # run completes without meeting them.
    hold = h.tmp / "hold"
    inputs = {"steps": 2, "pace": 0.05, "hold": str(hold), "hold_at": 1}
    child = spawn(["run", f"{WAITS}:ticking", "--run-id", "p1", "--input", json.dumps(inputs), "--db", h.target],
                  env={**h.env, **PARK})  # fmt: skip
    until(lambda: len(names(h)) >= 1, what="the first step")
    assert h.cli("pause", "p1", "--reason", "look").returncode == 0
    assert h.cli("cancel", "p1", "--reason", "no, stop it").returncode == 0
    hold.touch()
    assert child.wait().rc == 0
    s = h.status("p1")
    assert s["status"] == "completed" and s["pending_decisions"] == [], s["decisions"]
    assert sorted(_decisions(h, "p1")) == [("cancel", "void"), ("pause", "void")]


def test_a_reset_voids_a_cancel_asked_of_a_run_whose_process_died(h):
    # Its second step does not end (no hold file yet): the cancel is asked, never met, when it is killed.
    hold = h.tmp / "hold"
    inputs = {"steps": 3, "pace": 0.05, "hold": str(hold), "hold_at": 1}
    child = spawn(["run", f"{WAITS}:ticking", "--run-id", "c1", "--input", json.dumps(inputs), "--db", h.target],
                  env={**h.env, **PARK})  # fmt: skip
    try:
        until(lambda: len(names(h)) >= 1, what="the first step")
        assert h.cli("cancel", "c1", "--reason", "stop it").returncode == 0
    finally:
        child.kill()
    assert h.status("c1")["status"] != "cancelled"
    hold.touch()
    # Its process is gone: the operator starts it over instead, which voids what was pending.
    assert h.decide("c1", "reset").returncode == 0
    assert [s for a, s in _decisions(h, "c1") if a == "cancel"] == ["void"]
    p = h.resume("c1")
    assert p.returncode == 0, p  # started over and completed: not cancelled by a void decision
    assert h.status("c1")["status"] == "completed"


def test_a_stored_schema_that_cannot_check_an_answer_refuses_it_in_one_line(h):
    schemas = [
        {"type": "nonsense"},
        {"type": "string", "pattern": "("},
        {"$ref": "http://127.0.0.1:9/schema.json"},
        {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
    ]
    key = "@ask:approve_refund"
    for i, schema in enumerate(schemas):
        rid = f"r{i}"
        assert start(h, "refund", rid, order="x").returncode == 5
        # The question's record edited (its hash made to match): it names a schema no validator can use.
        sel = "SELECT result_json FROM phasegate_steps WHERE run_id = ? AND step_key = ?"
        (text,) = h.sql(sel, (rid, key))[0]
        forged = json.dumps({**json.loads(text), "schema": schema}, separators=(",", ":"))
        digest = hashlib.sha256(forged.encode()).hexdigest()
        h.sql("UPDATE phasegate_steps SET result_json = ?, result_hash = ? WHERE run_id = ? AND step_key = ?",
              (forged, digest, rid, key))  # fmt: skip
        before = h.dump()
        p = h.decide(rid, "answer", "--question", "approve_refund", "--value", '"abc"')
        assert p.returncode == 2, (schema, p)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, (schema, p)
        assert h.dump() == before


def test_stored_numbers_no_integer_holds_are_no_crash(h):
    # Python's JSON reads Infinity: an edited row may hold it where the engine wrote an integer.
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    hold = '{"action":"pause","state":"asked","by":"x","reason":"y","at":0,"decision":Infinity}'
    h.sql("UPDATE phasegate_runs SET held_json = ? WHERE run_id = 't1'", (hold,))
    assert start(h, "timer", "t2", seconds=3600).returncode == 5
    wait = '{"kind":"retry_later","phase":"wait","step":null,"attempt":Infinity,"of":5,"until":0,'
    wait += '"tried":[{"phase":"wait","step":null,"attempt":Infinity,"of":5,"error":"e","retried":true}]}'
    h.sql("UPDATE phasegate_runs SET waiting_json = ? WHERE run_id = 't2'", (wait,))
    for args in (("status", "t1", "--json"), ("resume", "t1"), ("status", "t2", "--json"), ("resume", "t2")):
        p = h.cli(*args, env=PARK)
        assert "Traceback" not in p.stderr and p.returncode in (0, 2, 5), (args, p)


def test_a_question_record_with_a_time_past_any_calendar_is_no_crash(h):
    assert start(h, "refund", "r1", order="x").returncode == 5
    key = "@ask:approve_refund"
    (text,) = h.sql("SELECT result_json FROM phasegate_steps WHERE run_id = 'r1' AND step_key = ?", (key,))[0]
    q = json.loads(text)
    # An integer too large for a float, written as its digits (the record's hash made to match).
    forged = json.dumps({**q, "asked_at": 0}, separators=(",", ":")).replace('"asked_at":0', '"asked_at":' + "9" * 400)
    digest = hashlib.sha256(forged.encode()).hexdigest()
    h.sql("UPDATE phasegate_steps SET result_json = ?, result_hash = ? WHERE run_id = 'r1' AND step_key = ?",
          (forged, digest, key))  # fmt: skip
    for args in (("status", "r1", "--json"), ("status", "r1")):
        p = h.cli(*args)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p)
