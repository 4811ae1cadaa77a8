"""Async phases as an agent author writes them (#26), through the command
line, on SQLite and PostgreSQL, killed with SIGKILL and resumed: the model
is a real HTTP server on loopback, the client real asyncio streams."""

from __future__ import annotations

import json
import signal
from collections import Counter
from typing import Any

import pytest
from engine_harness import Harness, spawn

from tests.support.cli import ROOT
from tests.support.pause import thaw, wait_stopped
from tests.support.standin import Standin
from tests.support.waiting import until

AGENTS = ROOT / "tests" / "workflows" / "agent_loops.py"


def _run(h: Harness, wf: str, run_id: str, env: dict[str, str] | None = None, **inputs: Any) -> Any:
    return h.cli("run", f"{AGENTS}:{wf}", "--run-id", run_id, "--input", json.dumps(inputs), env=env)


def _start(h: Harness, wf: str, run_id: str, env: dict[str, str] | None = None, **inputs: Any) -> Any:
    args = ["run", f"{AGENTS}:{wf}", "--run-id", run_id, "--input", json.dumps(inputs), "--db", h.target]
    return spawn(args, env={**h.env, **(env or {})})


def test_an_async_agent_killed_mid_loop_repeats_no_model_call_but_the_one_in_flight(h: Harness) -> None:
    with Standin(h.tmp / "server.log", delay=0.05) as model:
        child = _start(h, "agent", "a1", url=model.url, turns=12)
        until(lambda: len(model.requests("model")) >= 5, "five model calls")
        assert child.kill().killed
        before = Counter(r["turn"] for r in model.requests("model"))
        saved = {s for s in _saved_steps(h, "a1")}
        assert h.cli("verify").returncode == 0
        done = h.resume("a1")
        assert done.returncode == 0, done.stdout + done.stderr
        calls = Counter(r["turn"] for r in model.requests("model"))
        # Every turn was asked for, and only a turn that was not saved was asked twice.
        assert sorted(calls) == list(range(12))
        twice = [t for t, n in calls.items() if n > 1]
        assert len(twice) <= 1 and all(f"llm:{t}" not in saved for t in twice), (calls, saved, before)
        assert len(model.requests("send")) == 1
    st = h.status("a1")
    assert st["status"] == "completed"
    assert [e["state"] for e in st["effects"]] == ["done"]


def _saved_steps(h: Harness, run_id: str) -> list[str]:
    return [r[0] for r in h.sql("SELECT step_key FROM phasegate_steps WHERE run_id = ?", (run_id,))]


def test_an_async_effect_is_called_once_and_left_in_doubt_only_when_it_may_have_happened(h: Harness) -> None:
    with Standin(h.tmp / "server.log", delay=0.0) as model:
        # Frozen right after the effect's intent committed, then killed: it may have happened.
        child = _start(h, "agent", "e1", env={"PHASEGATE_PAUSE_AT": "after-intent:notify"}, url=model.url, turns=2)
        assert wait_stopped(child.pid, child.alive)
        child.kill()
        thaw(child.pid)
        st = h.status("e1")
        assert [e["state"] for e in st["effects"]] == ["in_doubt"]
        assert model.requests("send") == []
        # Its reconcile hook asks the server: not sent, so it is called (once) now.
        done = h.resume("e1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(model.requests("send")) == 1
        again = h.resume("e1")
        assert again.returncode == 0
        assert len(model.requests("send")) == 1


@pytest.mark.parametrize("mode", ["step-async", "effect-async", "effect-coroutine", "phase-coroutine"])
def test_async_code_in_a_sync_phase_is_refused_in_one_line_and_never_left_in_doubt(h: Harness, mode: str) -> None:
    p = _run(h, "misuse", f"m-{mode}", mode=mode)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "async" in p.stdout and "UsageError" in p.stdout, p.stdout
    assert len(p.stdout.strip().splitlines()) == 1, p.stdout
    assert "never awaited" not in p.stderr, p.stderr
    st = h.status(f"m-{mode}")
    assert st["status"] == "failed"
    # Nothing an operator would be asked about: no effect in doubt, no block.
    assert [e for e in st["effects"] if e["state"] == "in_doubt"] == []
    again = h.resume(f"m-{mode}")
    assert again.returncode == 1 and "blocked" not in again.stdout, again.stdout


def test_sigterm_stops_an_async_phase_at_its_next_await_and_a_resume_redoes_only_that_step(h: Harness) -> None:
    tr = h.tmp / "trace.txt"
    child = _start(h, "long_async", "s1", steps=30, pace=0.5, trace=str(tr))
    until(lambda: tr.exists() and tr.read_text().count("step ") >= 3, "three steps")
    # Cancelled at its next await: the step in flight (0.5 s of sleep) is cut short.
    import os

    os.kill(child.pid, signal.SIGTERM)
    res = child.wait(60)
    assert res.returncode == 130, res.stdout + res.stderr
    assert "interrupted: stopped by SIGTERM in phase work, after step s:" in res.stdout, res.stdout
    st = h.status("s1")
    assert st["status"] == "interrupted" and st["lease"] is None
    done_before = tr.read_text().count("step ")
    assert f"after step s:{done_before - 1}" in st["attention"], (st["attention"], done_before)
    resumed = h.resume("s1", env={})
    assert resumed.returncode == 0, resumed.stdout
    lines = tr.read_text().splitlines()
    finished = Counter(line for line in lines if line.startswith("step "))
    assert all(n == 1 for n in finished.values()) and len(finished) == 30, finished


def test_sigterm_lets_an_async_effect_in_flight_finish_and_records_it(h: Harness) -> None:
    tr = h.tmp / "trace.txt"
    child = _start(h, "slow_effect", "d1", pace=1.0, trace=str(tr))
    until(lambda: tr.exists() and "send begins" in tr.read_text(), "the send to begin")
    import os

    os.kill(child.pid, signal.SIGTERM)
    res = child.wait(60)
    assert res.returncode == 130, res.stdout + res.stderr
    assert "after step deliver" in res.stdout, res.stdout
    assert tr.read_text().splitlines() == ["send begins", "send ends"]
    st = h.status("d1")
    assert [e["state"] for e in st["effects"]] == ["done"]
    assert h.resume("d1").returncode == 0
    assert tr.read_text().splitlines() == ["send begins", "send ends", "after"]


def test_sigterm_stops_a_sync_phase_at_its_next_step_and_nothing_saved_is_redone(h: Harness) -> None:
    tr = h.tmp / "trace.txt"
    child = _start(h, "long", "t1", steps=30, pace=0.1, trace=str(tr))
    until(lambda: tr.exists() and tr.read_text().count("step ") >= 4, "four steps")
    import os

    os.kill(child.pid, signal.SIGTERM)
    res = child.wait(60)
    assert res.returncode == 130, res.stdout + res.stderr
    st = h.status("t1")
    assert st["status"] == "interrupted" and st["lease"] is None
    n = tr.read_text().count("step ")
    assert n < 30
    # The step in flight finished and was saved; the stop came at the next call.
    assert f"after step s:{n - 1};" in st["attention"], (st["attention"], n)
    assert "stopped by SIGTERM in phase work" in h.cli("status", "t1").stdout
    assert h.resume("t1").returncode == 0
    assert Counter(tr.read_text().splitlines()) == Counter(f"step {i}" for i in range(30))


def test_sigterm_to_a_worker_stops_a_thirty_step_phase_within_one_step_and_it_resumes_from_there(h: Harness) -> None:
    import os

    from tests.support.cli import popen

    tr = h.tmp / "trace.txt"
    first = _start(h, "long", "w1", steps=30, pace=0.2, trace=str(tr))
    until(lambda: tr.exists() and tr.read_text().count("step ") >= 2, "two steps")
    first.kill()  # a deploy killed it: the worker takes it over
    worker = popen(["worker", "--db", h.target, "--poll", "0.1"], env=h.env, merge_stderr=True)
    try:
        until(lambda: tr.read_text().count("step ") >= 6, "the worker to carry it on")
        at_signal = tr.read_text().count("step ")
        os.kill(worker.pid, signal.SIGTERM)
        out, _ = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, out
    assert "SIGTERM: stopping each run at its next step" in out, out
    assert "run w1: interrupted: stopped by SIGTERM in phase work, after step s:" in out, out
    after = tr.read_text().count("step ")
    assert after - at_signal <= 1, (at_signal, after)  # within one step, not the rest of the phase
    assert after < 30
    st = h.status("w1")
    assert st["status"] == "interrupted" and st["lease"] is None
    assert h.resume("w1").returncode == 0
    steps = Counter(line for line in tr.read_text().splitlines())
    assert set(steps) == {f"step {i}" for i in range(30)}
    # Only a step in flight when the deploy's SIGKILL landed may have run twice.
    assert sum(n - 1 for n in steps.values()) <= 1, steps
