"""Two parallel calls of one tool, under kills: each keeps its name (the
model's `tool_call_id`) and its own result across replays, whichever call
starts or finishes first."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.pai_support import AgentRun

EXPECTED = "call-a=slow:4, call-b=fast:4"


def test_parallel_calls_of_one_tool_keep_their_names_and_results_under_kills(tmp_path: Path) -> None:
    clean = AgentRun(tmp_path / "clean", "parallel")
    clean.folder.mkdir()
    assert clean.start().rc == 0
    calls = clean.calls()
    assert calls[0] == "model parallel 1" and calls[-1] == "model parallel 2"
    assert sorted(calls[1:3]) == ["tool price fast", "tool price slow"]
    steps = clean.steps()
    assert steps["pricer:tool:call-a"]["result"] == "slow:4"
    assert steps["pricer:tool:call-b"]["result"] == "fast:4"
    for k in range(1, len(calls) + 1):
        run = AgentRun(tmp_path / f"kill-{k}", "parallel")
        run.folder.mkdir()
        res = run.start(kill=k)
        assert res.killed, (k, res)
        res = run.resume()
        where = f"killed at call {k} ({calls[k - 1]})"
        assert res.rc == 0, f"{where}: {res.stdout}{res.stderr}"
        # Each call made once, but the ones in flight at the kill (the two tool
        # calls run together: a kill in one may cut the other off too).
        for line in set(calls):
            assert 1 <= run.calls().count(line) <= 2, (where, run.calls())
        assert run.calls()[:k] == calls[:k] or sorted(run.calls()[:k]) == sorted(calls[:k]), where
        assert run.calls().count("model parallel 1") == (2 if k == 1 else 1), where
        if k == len(calls):  # killed in the model's last call: both tool results were saved
            assert run.calls() == [*calls, calls[-1]], where
        final = run.steps()
        assert list(final) == list(steps) or sorted(final) == sorted(steps), where
        assert final["pricer:tool:call-a"]["result"] == "slow:4", where
        assert final["pricer:tool:call-b"]["result"] == "fast:4", where
        assert final["pricer:model:2"]["parts"][0]["content"] == EXPECTED, where
        run.verify_clean()
