"""Messages into a waiting run (issue 42, part 3), through the command line
and a real worker, on SQLite and PostgreSQL: `phasegate send RUN TOPIC` and a
phase's `ctx.recv(topic)`. Each run is a real child process, SIGKILLed where
the test says (tests/workflows/messages.py kills itself at a named point);
what is checked is what `phasegate status --json` shows and what the store
holds. No test asserts a wall-clock time."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from engine_harness import ROOT, Harness, Proc, spawn

from tests.support import cli
from tests.support.soak import kill_points
from tests.support.waiting import until

MESSAGES = ROOT / "tests" / "workflows" / "messages.py"
#: Every wait parks at once: a test decides when a message comes, so the run never waits in its process.
PARK = {"PHASEGATE_PARK_SECONDS": "0"}


def start(h: Harness, name: str, run_id: str, env: dict[str, str] | None = None, **inputs: Any) -> Proc:
    return h.cli(
        "run", f"{MESSAGES}:{name}", "--run-id", run_id, "--input", json.dumps(inputs), env={**PARK, **(env or {})}
    )


def send(h: Harness, run_id: str, topic: str, value: Any, reason: str = "the payment webhook") -> Proc:
    return h.cli("send", run_id, topic, "--value", json.dumps(value), "--reason", reason)


def paid(ref: str, amount: int = 10) -> dict[str, Any]:
    return {"ref": ref, "amount": amount}


def message_rows(h: Harness, run_id: str) -> list[tuple[Any, ...]]:
    return h.sql(
        "SELECT id, topic, state, step_key, value_json, prev_id FROM phasegate_messages WHERE run_id = ? ORDER BY id",
        (run_id,),
    )


def recv_steps(h: Harness, run_id: str) -> dict[str, int]:
    """The message id each saved `@recv:` step received, by its key."""
    rows = h.sql(
        "SELECT step_key, result_json FROM phasegate_steps WHERE run_id = ? AND step_key LIKE ?", (run_id, "@recv:%")
    )
    return {str(k): int(json.loads(v)["message"]) for k, v in rows if "message" in json.loads(v)}


@contextmanager
def worker(h: Harness, env: dict[str, str] | None = None) -> Iterator[cli.Child]:
    """A real worker on the store, looking every 0.1 s."""
    child = spawn(
        ["worker", "--poll", "0.1", "--heartbeat", "1", "--db", h.target], env={**h.env, **PARK, **(env or {})}
    )
    try:
        yield child
    finally:
        child.kill()


def waiting_on(h: Harness, run_id: str, topic: str) -> dict[str, Any] | None:
    s = h.status(run_id)
    w = s.get("waiting") or {}
    return s if s["status"] == "waiting" and w.get("kind") == "message" and w.get("topic") == topic else None


def completed(h: Harness, run_id: str) -> dict[str, Any] | None:
    s = h.status(run_id)
    return s if s["status"] == "completed" else None


def output(h: Harness, run_id: str, phase: str) -> Any:
    """A phase's stored output, from its live checkpoint."""
    return json.loads(h.checkpoint(run_id, phase)["output_json"])


# -- before and after the run waits, through a worker ------------------------------


def test_a_message_sent_before_and_one_after_the_run_waits_arrive_in_order_through_a_worker(h):
    p = start(h, "payment", "m1")
    assert p.returncode == 5, p
    s = waiting_on(h, "m1", "go")
    assert s is not None and s["lease"] is None  # parked: no process holds it
    assert "waiting for a message on topic go" in s["attention"]
    # Before the run waits on "paid": it waits in the run's queue.
    assert send(h, "m1", "paid", paid("A", 10)).returncode == 0
    s = h.status("m1")
    assert [(m["topic"], m["state"]) for m in s["messages"]] == [("paid", "queued")]
    with worker(h):
        sent = send(h, "m1", "go", True)
        assert sent.returncode == 0, sent
        assert "a worker resumes it" in sent.stdout
        s = until(lambda: waiting_on(h, "m1", "paid"), "the run to take A and wait for the second payment")
        assert s["waiting"]["schema"]["properties"]["ref"]["type"] == "string"
        # After it waits: the worker wakes it.
        assert send(h, "m1", "paid", paid("B", 5)).returncode == 0
        s = until(lambda: completed(h, "m1"), "the run to complete")
    assert output(h, "m1", "ship") == {"shipped": ["A", "B"], "total": 15}
    assert [(m["topic"], m["state"], m["value"]) for m in s["messages"]] == [
        ("paid", "delivered", paid("A", 10)),
        ("go", "delivered", True),
        ("paid", "delivered", paid("B", 5)),
    ]
    assert {m["operator"] for m in s["messages"]} == {"tester"}
    assert all(m["reason"] == "the payment webhook" for m in s["messages"])
    ids = [m["id"] for m in s["messages"]]
    assert recv_steps(h, "m1") == {"@recv:go": ids[1], "@recv:paid": ids[0], "@recv:paid#2": ids[2]}


def test_an_async_phase_receives_two_messages_in_order(h):
    assert start(h, "async_payment", "a1").returncode == 5
    assert send(h, "a1", "paid", paid("first")).returncode == 0
    assert send(h, "a1", "paid", paid("second")).returncode == 0
    p = h.resume("a1", env=PARK)
    assert p.returncode == 0, p
    assert h.trace().count("paid first second") == 1


# -- SIGKILL at every point --------------------------------------------------------


def _drive(h: Harness, run_id: str, kill: str) -> dict[str, Any]:
    """Run `payment` to its end through the command line, each process
    killed at `kill` the first time it reaches it; the messages are sent
    as the run asks for them: "A" before it waits on "paid", "B" after."""
    env = {**PARK, "PHASEGATE_TEST_KILL_AT": kill}
    sent: set[str] = set()
    p = start(h, "payment", run_id, env={"PHASEGATE_TEST_KILL_AT": kill})
    for _ in range(20):
        s = h.status(run_id)
        if s["status"] == "completed":
            return s
        topic = (s.get("waiting") or {}).get("topic") if s["status"] == "waiting" else None
        if topic == "go" and "go" not in sent:
            assert send(h, run_id, "paid", paid("A", 1)).returncode == 0
            assert send(h, run_id, "go", "now").returncode == 0
            sent |= {"A", "go"}
        elif topic == "paid" and "B" not in sent:
            assert send(h, run_id, "paid", paid("B", 2)).returncode == 0
            sent.add("B")
        p = h.resume(run_id, env=env)
        assert p.returncode in (0, 5) or p.killed, p
    raise AssertionError(f"run {run_id} did not complete: {h.status(run_id)['status']}")


def test_a_message_is_never_delivered_twice_nor_lost_under_sigkill_at_every_point(h, tmp_path):
    points_file = tmp_path / "points.txt"
    _drive_points(h, points_file)
    assert output(h, "clean", "ship") == {"shipped": ["A", "B"], "total": 3}
    points = list(dict.fromkeys(points_file.read_text().splitlines()))
    for wanted in (
        "in-phase:wait_go",
        "after-step:wait_go/@recvwait:go",
        "after-step:wait_go/@recv:go",
        "after-checkpoint:wait_go",
        "after-step:pay/@recv:paid",
        "after-step:pay/@recvwait:paid#2",
        "after-step:pay/@recv:paid#2",
        "after-checkpoint:pay",
    ):
        assert wanted in points, points
    # Every point on SQLite; on PostgreSQL a sample with every kind of point
    # in it (tests/support/soak.py; all of them with PHASEGATE_TEST_SOAK=1).
    for i, point in enumerate(kill_points(points, h.backend)):
        run_id = f"k{i}"
        _drive(h, run_id, point)
        assert output(h, run_id, "ship") == {"shipped": ["A", "B"], "total": 3}, point
        rows = message_rows(h, run_id)
        assert [(t, st) for _i, t, st, _k, _v, _p in rows] == [
            ("paid", "delivered"),
            ("go", "delivered"),
            ("paid", "delivered"),
        ], point
        # Each message received by exactly one step, and each step names its own.
        steps = recv_steps(h, run_id)
        assert sorted(steps.values()) == sorted(r[0] for r in rows), point
        assert {r[0]: r[3] for r in rows} == {v: k for k, v in steps.items()}, point


def _drive_points(h: Harness, points_file: Path) -> dict[str, Any]:
    """An uninterrupted drive, writing every point it reaches."""
    old = h.env.get("PHASEGATE_TEST_POINTS")
    h.env["PHASEGATE_TEST_POINTS"] = str(points_file)
    try:
        return _drive(h, "clean", "")
    finally:
        if old is None:
            del h.env["PHASEGATE_TEST_POINTS"]


def test_a_worker_killed_as_it_receives_a_message_leaves_it_to_the_next_worker_once(h):
    assert start(h, "payment", "w1").returncode == 5
    assert send(h, "w1", "go", 1).returncode == 0
    assert send(h, "w1", "paid", paid("A")).returncode == 0
    assert send(h, "w1", "paid", paid("B")).returncode == 0
    with worker(h, {"PHASEGATE_TEST_KILL_AT": "after-step:pay/@recv:paid#2"}) as first:
        assert until(lambda: first.poll() is not None, "the first worker to be killed at the second receipt")
    assert first.rc == -signal.SIGKILL
    with worker(h):
        s = until(lambda: completed(h, "w1"), "the next worker to complete the run")
    assert output(h, "w1", "ship")["shipped"] == ["A", "B"]
    # Killed as B's receipt committed: the phase ran again, and both came from their steps.
    assert (h.trace().count("paid A"), h.trace().count("paid B")) == (2, 1)
    assert sorted(recv_steps(h, "w1").values()) == [m["id"] for m in s["messages"]]


# -- what is refused -----------------------------------------------------------------


def _store_state(h: Harness) -> tuple[str, list[tuple[Any, ...]]]:
    return h.dump(), h.sql("SELECT * FROM phasegate_messages ORDER BY id")


def test_a_value_the_topic_schema_refuses_changes_nothing(h):
    assert start(h, "timeout", "t1", timeout=3600).returncode == 5
    before = _store_state(h)
    for value in ({"ref": "A"}, {"ref": 1, "amount": 2}, "not an object", {"ref": "A", "amount": 1.5}):
        p = send(h, "t1", "paid", value)
        assert p.returncode == 2, p
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
        assert "message on topic 'paid' refused" in p.stderr
    p = h.cli("send", "t1", "paid", "--value", "{not json", "--reason", "x")
    assert p.returncode == 2 and "--value is not JSON" in p.stderr
    p = h.cli("send", "t1", "p#aid", "--value", "1", "--reason", "x")
    assert p.returncode == 2 and "has no '#'" in p.stderr
    p = h.cli("send", "t1", "paid", "--value", "1", "--reason", " ")
    assert p.returncode == 2 and "needs a reason" in p.stderr
    assert _store_state(h) == before


def test_sending_to_an_unknown_or_completed_run_is_one_line_and_records_nothing(h):
    assert start(h, "timeout", "t2", timeout=3600).returncode == 5
    p = send(h, "nobody", "paid", paid("A"))
    assert p.returncode == 2 and "no such run" in p.stderr and "Traceback" not in p.stderr
    assert send(h, "t2", "paid", paid("A")).returncode == 0
    assert h.resume("t2", env=PARK).returncode == 0
    before = _store_state(h)
    p = send(h, "t2", "paid", paid("B"))
    assert p.returncode == 3, p
    assert "is completed: it receives no more messages; nothing was recorded" in p.stderr
    assert p.stderr.count("\n") == 1
    assert _store_state(h) == before


# -- a timeout -----------------------------------------------------------------------


def test_no_message_by_the_timeout_takes_the_noanswer_path_and_a_late_one_changes_nothing(h):
    p = start(h, "timeout", "t3", timeout=0.5)
    assert p.returncode == 5, p
    s = h.status("t3")
    assert s["waiting"]["kind"] == "message" and s["waiting"]["until"] is not None
    with worker(h):
        s = until(lambda: completed(h, "t3"), "the worker to wake the run at its deadline")
    assert output(h, "t3", "wait_paid") == {"timed_out": True}
    assert "no message paid topic=True" in h.trace()
    assert send(h, "t3", "paid", paid("late")).returncode == 3


# -- a cancelled run --------------------------------------------------------------------


def test_a_cancelled_runs_messages_are_kept_and_shown_and_never_delivered(h):
    assert start(h, "payment", "c1").returncode == 5  # waits on "go"
    assert send(h, "c1", "paid", paid("A")).returncode == 0
    p = h.cli("cancel", "c1", "--reason", "order withdrawn")
    assert p.returncode == 0, p
    with worker(h) as w:
        # The worker looks, and leaves a cancelled run alone.
        until(lambda: w.poll() is None and _looked(h), "the worker to have looked at the store")
        s = h.status("c1")
    assert s["status"] == "cancelled"
    assert [(m["topic"], m["state"], m["value"]) for m in s["messages"]] == [("paid", "kept", paid("A"))]
    assert message_rows(h, "c1")[0][2] == "queued"  # never taken
    assert recv_steps(h, "c1") == {}
    text = h.cli("status", "c1")
    assert "message" in text.stdout and "kept" in text.stdout
    p = send(h, "c1", "paid", paid("B"))
    assert p.returncode == 3 and "is cancelled" in p.stderr
    assert len(message_rows(h, "c1")) == 1


def _looked(h: Harness) -> bool:
    p = h.cli("workers", "--json")
    return p.returncode == 0 and any(w.get("alive") for w in json.loads(p.stdout or "[]"))


# -- concurrency -------------------------------------------------------------------------


def test_two_senders_at_once_on_one_topic_both_land_in_one_order_and_arrive_in_it(h):
    assert start(h, "async_payment", "s1").returncode == 5
    senders = [
        cli.start(
            ["send", "s1", "paid", "--value", json.dumps(paid(ref)), "--reason", "race", "--db", h.target],
            env=h.env,
            mode="fork",
        )
        for ref in ("X", "Y")
    ]
    for child in senders:
        assert until(lambda c=child: c.poll() is not None, "a sender to finish") is not None
        assert child.rc == 0
    rows = message_rows(h, "s1")
    assert len(rows) == 2 and rows[1][5] == rows[0][0]  # one chain: the second names the first
    first = json.loads(rows[0][4])["ref"]
    second = json.loads(rows[1][4])["ref"]
    assert h.resume("s1", env=PARK).returncode == 0
    assert f"paid {first} {second}" in h.trace()


def test_a_message_sent_while_a_worker_resumes_the_run_is_received_not_lost(h):
    assert start(h, "payment", "r1").returncode == 5
    assert send(h, "r1", "go", 1).returncode == 0
    assert send(h, "r1", "paid", paid("A")).returncode == 0
    # The worker stops itself (SIGSTOP) as the "pay" phase is about to be
    # called: the run is running, its lease held, when the second message is sent.
    with worker(h, {"PHASEGATE_PAUSE_AT": "in-phase:pay"}) as w:
        until(lambda: _stopped(w.pid), "the worker to stop at the pay phase")
        assert h.status("r1")["status"] == "running"
        sent = send(h, "r1", "paid", paid("B"))
        assert sent.returncode == 0 and "queued until the run receives it" in sent.stdout
        os.kill(w.pid, signal.SIGCONT)
        s = until(lambda: completed(h, "r1"), "the run to complete with both payments")
    assert output(h, "r1", "ship")["shipped"] == ["A", "B"]
    assert [m["state"] for m in s["messages"]] == ["delivered"] * 3


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def test_send_is_in_the_command_line_help():
    p = cli.run(["send", "--help"], mode="fork")
    assert p.returncode == 0 and "--value" in p.stdout and "--reason" in p.stdout


# -- watch --messages ---------------------------------------------------------------------


def test_watch_with_messages_announces_a_run_parked_on_a_topic_once_and_without_it_not(h, tmp_path):
    assert start(h, "timeout", "t9", timeout=3600).returncode == 5
    out = tmp_path / "events.jsonl"
    cmd = f"cat >> {out}; echo >> {out}"
    p = h.cli("watch", "--once", "--exec", cmd)
    assert p.returncode == 0, p
    assert not out.exists() or not out.read_text().strip()  # no --messages: a message wait is not announced
    for _ in range(2):  # once per wait, however often the watch looks
        p = h.cli("watch", "--once", "--messages", "--exec", cmd)
        assert p.returncode == 0, p
    events = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert len(events) == 1, events
    ev = events[0]
    assert ev["run_id"] == "t9" and ev["status"] == "waiting"
    assert ev["summary"] == "t9 (timeout) waits for a message on paid"
    assert ev["message"]["topic"] == "paid" and ev["message"]["phase"] == "wait_paid"
    assert ev["message"]["send"].endswith("t9 paid --value JSON --reason ...")


# -- seals ---------------------------------------------------------------------------------


def _key(h: Harness) -> str:
    path = h.tmp / "a.key"
    path.write_bytes(os.urandom(32).hex().encode())
    path.chmod(0o600)
    return str(path)


def test_a_queued_message_is_sealed_anew_by_reseal_and_an_edited_one_is_never_delivered(h):
    assert start(h, "timeout", "e1", timeout=3600).returncode == 5
    assert send(h, "e1", "paid", paid("A", 1)).returncode == 0
    key = {"PHASEGATE_SEAL_KEY_FILE": _key(h)}
    assert h.cli("reseal", "--key-file", key["PHASEGATE_SEAL_KEY_FILE"]).returncode == 0
    m = h.cli("status", "e1", "--json", env=key)
    assert [x["state"] for x in json.loads(m.stdout)["messages"]] == ["queued"]  # still vouched for
    # An edited value: its seal no longer vouches for it; the run blocks, nothing is delivered.
    h.sql("UPDATE phasegate_messages SET value_json = ? WHERE run_id = ?", ('{"amount":1000,"ref":"A"}', "e1"))
    p = h.resume("e1", env={**PARK, **key})
    assert p.returncode == 3, p
    s = json.loads(h.cli("status", "e1", "--json", env=key).stdout)
    assert s["status"] == "blocked" and "does not match its seal" in s["attention"]
    assert [x["state"] for x in s["messages"]] == ["damaged"]
    assert recv_steps(h, "e1") == {}
    v = h.cli("verify", "--json", env=key)
    assert v.returncode == 3, v
    (report,) = [r for r in json.loads(v.stdout) if r.get("run_id") == "e1"]
    assert report["decisions"][0]["message"] is not None and report["decisions"][0]["problem"] == "edited"


def test_a_message_sent_to_a_paused_run_waits_for_the_unpause_then_wakes_it(h):
    assert start(h, "timeout", "p1", timeout=3600).returncode == 5
    assert h.cli("pause", "p1", "--reason", "hold on").returncode == 0
    with worker(h):
        sent = send(h, "p1", "paid", paid("A"))
        assert sent.returncode == 0 and "queued until the run receives it" in sent.stdout
        assert h.status("p1")["status"] == "paused"
        assert h.cli("unpause", "p1", "--reason", "go on").returncode == 0
        until(lambda: completed(h, "p1"), "the worker to take the unpaused run up with its message")
    assert output(h, "p1", "wait_paid") == {"timed_out": False, "ref": "A"}


def test_a_message_sent_as_the_run_decides_to_park_wakes_it_not_lost(h):
    # The run looked at its queue (empty), recorded its wait, and stops
    # (SIGSTOP) before it parks: the message is sent then, to a run whose
    # row still says running. Its park must see the message and make it due.
    child = spawn(
        [
            "run",
            f"{MESSAGES}:timeout",
            "--run-id",
            "race1",
            "--input",
            json.dumps({"timeout": 3600}),
            "--db",
            h.target,
        ],
        env={**h.env, **PARK, "PHASEGATE_TEST_STOP_AT": "after-step:wait_paid/@recvwait:paid"},
    )
    until(lambda: _stopped(child.pid), "the run to stop between its look at the queue and its park")
    assert h.status("race1")["status"] == "running"
    sent = send(h, "race1", "paid", paid("R"))
    assert sent.returncode == 0 and "queued until the run receives it" in sent.stdout  # it did not wake it
    os.kill(child.pid, signal.SIGCONT)
    assert child.wait().returncode == 5  # it parked
    due = h.sql("SELECT wake_at, updated_at FROM phasegate_runs WHERE run_id = ?", ("race1",))[0]
    assert due[0] is not None and due[0] <= due[1]  # due at once, not at its deadline an hour on
    with worker(h):
        until(lambda: completed(h, "race1"), "the worker to take the run up with its message")
    assert output(h, "race1", "wait_paid") == {"timed_out": False, "ref": "R"}


@pytest.mark.parametrize("point", ["after-step:collect/@recv:paid", "after-step:collect/@recv:paid#2"])
def test_an_async_phase_killed_as_it_receives_gets_each_message_once(h, point):
    assert start(h, "async_payment", "ak").returncode == 5
    assert send(h, "ak", "paid", paid("first")).returncode == 0
    assert send(h, "ak", "paid", paid("second")).returncode == 0
    assert h.resume("ak", env={**PARK, "PHASEGATE_TEST_KILL_AT": point}).killed
    assert h.resume("ak", env=PARK).returncode == 0
    assert output(h, "ak", "collect") == {"refs": ["first", "second"]}
    assert [r[2] for r in message_rows(h, "ak")] == ["delivered", "delivered"]
    assert sorted(recv_steps(h, "ak").values()) == [r[0] for r in message_rows(h, "ak")]
