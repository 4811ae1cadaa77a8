"""Runs that wait (issue 27), through the command line and a real worker, on
SQLite and PostgreSQL: a question for a person (`ctx.ask`), a durable timer
(`ctx.sleep`), a rate limit (`RetryLater`), and an operator's pause, unpause
and cancel. Each run is a real child process, killed with SIGKILL where the
test says; what is checked is what `phasegate status --json` and the trace
of computed steps show. No test asserts a wall-clock time: a time in the
store is compared with another time in the store, or with the trace."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from engine_harness import ROOT, Harness, Proc, spawn
from test_second_operator import TwoAccounts, two  # noqa: F401 - the fixture, for the policy tests

from phasegate import _json
from tests.support.waiting import until

WAITS = ROOT / "tests" / "workflows" / "waits.py"
#: Every wait at least this long parks (the tests' own PHASEGATE_PARK_SECONDS).
PARK = {"PHASEGATE_PARK_SECONDS": "0.5"}


def target(name: str) -> str:
    return f"{WAITS}:{name}"


def start(h: Harness, name: str, run_id: str, env: dict[str, str] | None = None, **inputs: Any) -> Proc:
    return h.cli("run", target(name), "--run-id", run_id, "--input", json.dumps(inputs), env={**PARK, **(env or {})})


def trace(h: Harness) -> list[str]:
    return h.trace_file.read_text().splitlines() if h.trace_file.exists() else []


def names(h: Harness) -> list[str]:
    return [line.rsplit(" t=", 1)[0] for line in trace(h)]


@contextmanager
def worker(h: Harness, env: dict[str, str] | None = None) -> Iterator[None]:
    """A real worker on the store, looking every 0.2 s."""
    child = spawn(
        ["worker", "--poll", "0.2", "--heartbeat", "1", "--db", h.target], env={**h.env, **PARK, **(env or {})}
    )
    try:
        yield
    finally:
        child.kill()


def status_is(h: Harness, run_id: str, wanted: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        s = h.status(run_id)
        return s if s["status"] == wanted else None

    return check


# -- a question for a person ---------------------------------------------------


def test_a_run_asks_parks_is_refused_a_wrong_answer_then_resumed_with_the_right_one(h):
    p = start(h, "refund", "r1", order="A-17")
    assert p.returncode == 5, p
    assert "waiting for an answer to approve_refund" in p.stdout
    s = h.status("r1")
    assert s["status"] == "waiting"
    assert s["lease"] is None  # no process holds it
    q = s["waiting"]["question"]
    assert s["waiting"]["kind"] == "answer"
    assert q["name"] == "approve_refund" and q["prompt"] == "Refund 200 EUR for order A-17?"
    assert q["payload"] == {"tool": "refund", "args": {"order": "A-17", "amount": 200}}
    assert q["schema"]["properties"]["approved"]["type"] == "boolean"

    before = h.dump()
    wrong = h.decide("r1", "answer", "--question", "approve_refund", "--value", '{"approved": "maybe", "amount": 200}')
    assert wrong.returncode == 2, wrong
    assert "approved" in wrong.stderr and "Traceback" not in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    missing = h.decide("r1", "answer", "--question", "approve_refund", "--value", '{"approved": true}')
    assert missing.returncode == 2 and "amount" in missing.stderr, missing
    assert h.dump() == before  # nothing recorded

    ok = h.decide("r1", "answer", "--question", "approve_refund", "--value", '{"approved": true, "amount": 150}',
                  "--operator", "ada")  # fmt: skip
    assert ok.returncode == 0, ok
    with worker(h):
        done = until(status_is(h, "r1", "completed"), what="the worker to finish the answered run")
    assert names(h).count("read_claim") == 1  # the durable step came back from the store
    assert "answered Approval True 150" in names(h)
    (answer,) = [d for d in done["decisions"] if d["action"] == "answer"]
    assert answer["operator"] == "ada" and answer["state"] == "applied" and answer["account"]
    assert done["questions"][0]["state"] == "answered" and done["questions"][0]["answer"]["amount"] == 150


def test_killed_after_the_answer_a_resume_is_not_asked_again(h):
    assert start(h, "refund", "r1", env={"WAITS_DIE": "after_answer"}, order="B-2").returncode == 5
    ok = h.decide("r1", "answer", "--question", "approve_refund", "--value", '{"approved": true, "amount": 200}')
    assert ok.returncode == 0, ok
    died = h.resume("r1", env={"WAITS_DIE": "after_answer"})
    assert died.killed, died
    again = h.resume("r1", env={"WAITS_DIE": "after_answer"})
    assert again.returncode == 0, again
    s = h.status("r1")
    assert s["status"] == "completed" and len(s["questions"]) == 1
    assert names(h).count("answered Approval True 200") == 2  # the phase re-ran from its start, with the answer
    assert len([n for n in names(h) if n.startswith("pay ")]) == 1


def test_an_unanswered_question_times_out_into_no_answer_once_the_worker_wakes_it(h):
    assert start(h, "refund", "r1", order="C-3", timeout=1.5).returncode == 5
    s = h.status("r1")
    assert s["waiting"]["until"] == s["waiting"]["question"]["deadline"] is not None
    with worker(h):
        done = until(status_is(h, "r1", "completed"), what="the worker to wake the run at its deadline")
    assert done["questions"][0]["state"] == "timed_out"
    assert "escalated" in names(h)
    late = h.decide("r1", "answer", "--question", "approve_refund", "--value", '{"approved": true, "amount": 1}')
    assert late.returncode == 2, late


def test_a_group_answer_by_cause_answers_every_run_asking_the_same_question(h):
    for rid in ("g1", "g2", "g3"):
        assert start(h, "refund", rid, order=rid).returncode == 5
    p = h.cli("status", "--by-cause", "--json")
    assert p.returncode == 0, p
    (cause,) = [c for c in json.loads(p.stdout) if c["kind"] == "question"]
    assert sorted(cause["runs"]) == ["g1", "g2", "g3"] and "answer" in cause["allowed_actions"]
    dry = h.cli("decide", "--cause", cause["cause"], "answer", "--value", '{"approved": true, "amount": 5}',
                "--reason", "batch approval", "--dry-run")  # fmt: skip
    assert dry.returncode == 0 and dry.stdout.count("Answer approve_refund") == 3, dry
    many = h.cli("decide", "--cause", cause["cause"], "answer", "--question", "approve_refund",
                 "--value", '{"approved": true, "amount": 5}', "--reason", "batch approval")  # fmt: skip
    assert many.returncode == 0, many
    with worker(h):
        for rid in ("g1", "g2", "g3"):
            until(status_is(h, rid, "completed"), what=f"{rid} to complete")
    assert names(h).count("answered Approval True 5") == 3


# -- timers and rate limits ------------------------------------------------------


def _wake_time(h: Harness, run_id: str) -> float:
    rows = h.sql(
        "SELECT result_json FROM phasegate_steps WHERE run_id = ? AND step_key = ?", (run_id, "@sleep:cool_down")
    )
    (row,) = rows
    return float(json.loads(row[0])["until"])


def _has_timer(h: Harness) -> bool:
    try:
        return bool(h.sql("SELECT 1 FROM phasegate_steps WHERE step_key = '@sleep:cool_down'"))
    except Exception:  # noqa: BLE001 - the store is being created by the child
        return False


def test_a_timer_survives_a_kill_without_starting_over(h):
    # A 60 s timer slept in the process (parking starts at 120 s here), killed midway.
    child = spawn(["run", target("timer"), "--run-id", "t1", "--input", json.dumps({"seconds": 60}), "--db", h.target],
                  env={**h.env, "PHASEGATE_PARK_SECONDS": "120"})  # fmt: skip
    try:
        until(lambda: _has_timer(h), what="the timer")
        wake = _wake_time(h, "t1")
    finally:
        assert child.kill().killed
    # Resumed where every wait parks: it waits for the wake time it recorded, not 60 s from now.
    p = h.resume("t1", env={"PHASEGATE_PARK_SECONDS": "0"})
    assert p.returncode == 5, p
    s = h.status("t1")
    assert s["waiting"]["kind"] == "timer" and s["waiting"]["name"] == "cool_down"
    assert _wake_time(h, "t1") == wake
    assert s["waiting"]["until"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wake))
    assert names(h) == ["before"]


def move_timer(h: Harness, run_id: str, wake: float) -> None:
    """Move a parked timer's wake time, in its durable step and on its run's
    row, as the engine itself records them: the test decides when the timer
    is due instead of racing a short one on a loaded machine."""
    ((text, row_waiting),) = h.sql(
        "SELECT s.result_json, r.waiting_json FROM phasegate_steps s JOIN phasegate_runs r ON r.run_id = s.run_id"
        " WHERE s.run_id = ? AND s.step_key = ?",
        (run_id, "@sleep:cool_down"),
    )
    saved = {**json.loads(text), "until": wake}
    step = _json.dumps(saved)
    waiting = _json.dumps({**json.loads(row_waiting), "until": wake})
    h.sql(
        "UPDATE phasegate_steps SET result_json = ?, result_hash = ? WHERE run_id = ? AND step_key = ?",
        (step, _json.sha256(step), run_id, "@sleep:cool_down"),
    )
    h.sql("UPDATE phasegate_runs SET wake_at = ?, waiting_json = ? WHERE run_id = ?", (wake, waiting, run_id))


def test_a_parked_timer_is_woken_by_the_worker_once_due_and_not_before(h):
    # An hour's timer: nothing before it is due can race it, however slow the machine.
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    early = h.resume("t1", env=PARK)  # an early resume parks again, doing nothing
    assert early.returncode == 5 and names(h) == ["before"], early
    once = h.cli("worker", "--once", env=PARK)  # nor does a worker's pass wake it early
    assert once.returncode == 0, once
    assert h.status("t1")["status"] == "waiting" and names(h) == ["before"]
    # Now it is due: the worker wakes it, and the timer goes on no earlier than its (moved) wake time.
    wake = time.time()
    move_timer(h, "t1", wake)
    assert _wake_time(h, "t1") == wake
    with worker(h):
        until(status_is(h, "t1", "completed"), what="the worker to wake the timer")
    (after,) = [ln for ln in trace(h) if ln.startswith("after ")]
    assert float(after.rsplit("t=", 1)[1]) >= wake
    assert names(h) == ["before", "after"]


def test_retry_later_parks_the_run_and_the_worker_calls_again_when_due(h):
    counter = h.tmp / "calls.txt"
    p = start(h, "limited", "l1", counter=str(counter), times=1, after=3600)
    assert p.returncode == 5, p
    s = h.status("l1")
    w = s["waiting"]
    assert w["kind"] == "retry_later" and w["reason"] == "429 from the model API" and w["attempt"] == 1
    assert "rate limited: 429 from the model API" in s["attention"]
    # An hour from now: an early resume parks again without calling the API.
    assert h.resume("l1", env=PARK).returncode == 5
    assert names(h) == ["api call 1"]
    # A short one is woken by the worker when due, and counted as an attempt.
    counter.unlink()
    assert start(h, "limited", "l2", counter=str(counter), times=2, after=1).returncode == 5
    with worker(h):
        done = until(status_is(h, "l2", "completed"), what="the worker to retry the rate-limited call")
    calls = [float(ln.rsplit("t=", 1)[1]) for ln in trace(h) if ln.startswith("api call")][1:]
    assert len(calls) == 3 and calls[1] - calls[0] >= 0.99 and calls[2] - calls[1] >= 0.99
    assert sum("attempt" in n for n in done["notes"]) == 2


def test_retry_later_past_the_step_policy_fails_the_run(h):
    counter = h.tmp / "calls.txt"
    p = start(h, "limited", "l1", counter=str(counter), times=5, after=0.1, retries=1)
    assert p.returncode == 1, p
    s = h.status("l1")
    assert s["status"] == "failed" and s["error"]["type"] == "RetryLater"
    assert names(h) == ["api call 1", "api call 2"]


# -- pause, unpause, cancel ----------------------------------------------------


@pytest.mark.parametrize("flow", ["ticking", "ticking_async"])
def test_pause_stops_a_live_run_at_its_next_step_keeping_its_work_and_unpause_lets_the_worker_finish(h, flow):
    # Its eleventh step does not end until the test says: the pause is met at a step, not raced by the pace.
    hold = h.tmp / "hold"
    inputs = {"steps": 60, "pace": 0.05, "hold": str(hold), "hold_at": 10}
    child = spawn(["run", target(flow), "--run-id", "p1", "--input", json.dumps(inputs), "--db", h.target],
                  env={**h.env, **PARK})  # fmt: skip
    until(lambda: len(names(h)) >= 5, what="the run to compute a few steps")
    paused = h.cli("pause", "p1", "--reason", "look at the tool calls")
    assert paused.returncode == 0 and "stops at its next step" in paused.stdout, paused
    hold.touch()
    ended = child.wait()
    assert ended.rc == 5, ended
    s = h.status("p1")
    assert s["status"] == "paused" and s["paused"]["reason"] == "look at the tool calls" and s["lease"] is None
    done_before = len(names(h))
    assert 5 <= done_before < 60
    # Nothing resumes a paused run: not a resume, not a worker's pass.
    assert h.resume("p1").returncode == 5
    assert h.cli("worker", "--once", env=PARK).returncode == 0
    assert h.status("p1")["status"] == "paused" and len(names(h)) == done_before
    with worker(h):
        back = h.cli("unpause", "p1", "--reason", "looked")
        assert back.returncode == 0, back
        until(status_is(h, "p1", "completed"), what="the worker to finish the unpaused run")
    ticks = names(h)
    assert len(ticks) == 60 and len(set(ticks)) == 60  # no saved step was computed again
    actions = [(d["action"], d["state"]) for d in h.status("p1")["decisions"]]
    assert actions == [("pause", "applied"), ("unpause", "applied")]


def test_a_pause_holds_a_waiting_runs_timer_until_unpaused(h):
    assert start(h, "timer", "t1", seconds=1.0).returncode == 5
    wake = _wake_time(h, "t1")
    assert h.cli("pause", "t1", "--reason", "hold it").returncode == 0
    assert h.status("t1")["status"] == "paused"
    with worker(h):
        until(lambda: time.time() > wake + 1.0, what="the timer's time to pass")
        assert h.status("t1")["status"] == "paused" and names(h) == ["before"]
        assert h.cli("unpause", "t1", "--reason", "go on").returncode == 0
        until(status_is(h, "t1", "completed"), what="the due timer to fire once unpaused")
    assert names(h) == ["before", "after"]


def test_cancel_is_final(h):
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    p = h.cli("cancel", "t1", "--reason", "customer withdrew")
    assert p.returncode == 0, p
    s = h.status("t1")
    assert s["status"] == "cancelled" and s["cancelled"]["by"] == "tester"
    r = h.resume("t1")
    assert r.returncode == 6 and len(r.stderr.strip().splitlines()) == 1, r
    again = h.cli("run", target("timer"), "--run-id", "t1")
    assert again.returncode == 6, again
    assert h.decide("t1", "reset").returncode == 2
    assert h.cli("unpause", "t1", "--reason", "x").returncode == 2
    once = h.cli("worker", "--once")
    assert once.returncode == 0 and h.status("t1")["status"] == "cancelled"


def test_cancel_of_a_live_run_stops_it_at_its_next_step(h):
    hold = h.tmp / "hold"
    inputs = {"steps": 60, "pace": 0.05, "hold": str(hold), "hold_at": 10}
    child = spawn(["run", target("ticking"), "--run-id", "c1", "--input", json.dumps(inputs), "--db", h.target],
                  env={**h.env, **PARK})  # fmt: skip
    until(lambda: len(names(h)) >= 3, what="a few steps")
    assert h.cli("cancel", "c1", "--reason", "wrong customer").returncode == 0
    hold.touch()
    assert child.wait().rc == 6
    s = h.status("c1")
    assert s["status"] == "cancelled" and len(names(h)) < 60


# -- the second-operator policy -----------------------------------------------


def test_the_second_operator_policy_applies_to_answer_and_cancel(two: TwoAccounts):  # noqa: F811
    h = two
    assert start(h, "refund", "r1", order="D-4").returncode == 5
    assert h.cli("policy", "--require-second", "answer,cancel", "--reason", "four eyes").returncode == 0
    prop = h.decide("r1", "answer", "--question", "approve_refund", "--value", '{"approved": true, "amount": 9}')
    assert prop.returncode == 0 and "proposed" in prop.stdout, prop
    assert h.status("r1")["status"] == "waiting"
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "waiting"  # a proposal is not an answer
    (d,) = [d for d in h.status("r1")["decisions"] if d["action"] == "answer"]
    mine = h.decide("r1", "second", "--decision", str(d["id"]))
    assert mine.returncode == 2, mine  # the proposer's own account
    other = h.as_nobody("decide", "r1", "second", "--decision", str(d["id"]), "--reason", "checked the order")
    assert other.returncode == 0, other
    assert h.resume("r1").returncode == 0
    assert "answered Approval True 9" in names(h)

    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    c = h.cli("cancel", "t1", "--reason", "stop it")
    assert c.returncode == 0 and "proposed" in c.stdout, c
    assert h.status("t1")["status"] == "waiting"
    (d,) = [d for d in h.status("t1")["decisions"] if d["action"] == "cancel"]
    other = h.as_nobody("decide", "t1", "second", "--decision", str(d["id"]), "--reason", "agreed")
    assert other.returncode == 0, other
    assert h.status("t1")["status"] == "cancelled"


def test_bad_waits_are_one_line_each(h, tmp_path: Path):
    assert start(h, "timer", "t1", seconds=3600).returncode == 5
    for args in (
        ("decide", "t1", "answer", "--value", "true"),  # no --question, and nothing asked
        ("decide", "t1", "answer", "--question", "nope", "--value", "true"),
        ("decide", "t1", "answer", "--question", "x", "--value", "{not json"),
        ("decide", "t1", "pause", "--phase", "wait"),
        ("unpause", "t1"),
    ):
        p = h.cli(*args, "--reason", "r")
        assert p.returncode == 2, (args, p)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, (args, p)
    assert h.cli("pause", "nosuch", "--reason", "r").returncode == 2


def test_an_async_phase_asks_two_questions_at_once_and_gets_both_answers(h):
    assert start(h, "refund_async", "a1", order="E-5").returncode == 5
    s = h.status("a1")
    assert sorted(q["name"] for q in s["questions"]) == ["approve_refund", "note"]
    assert all(q["state"] == "open" for q in s["questions"])
    ok = h.decide("a1", "answer", "--question", "approve_refund", "--value", '{"approved": false, "amount": 200}')
    assert ok.returncode == 0, ok
    assert h.resume("a1").returncode == 5  # still waiting: for the other question
    assert h.status("a1")["waiting"]["question"]["name"] == "note"
    assert h.decide("a1", "answer", "--question", "note", "--value", '"sorry"').returncode == 0
    done = h.resume("a1")
    assert done.returncode == 0, done
    assert names(h).count("read_claim") == 1 and "answered Approval False sorry" in names(h)
