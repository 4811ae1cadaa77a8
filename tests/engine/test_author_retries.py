"""Retries (issue #18, finding 5): `ctx.step(..., retries=, backoff=,
retry_on=)` and `@wf.phase(..., retries=, backoff=)`, through the CLI, with
every attempt in `phasegate status`; the worker retries nothing by itself."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli

FLOW = f"{Path(__file__).resolve().parents[1] / 'workflows' / 'retrying.py'}:wf"


class Flaky:
    def __init__(self, tmp: Path) -> None:
        self.dir = tmp
        self.db = str(tmp / "runs.db")
        self.env = {"PHASEGATE_DB": "", "PHASEGATE_OPERATOR": "author"}

    def phasegate(self, *args: str) -> cli.Result:
        return cli.run([*args, "--db", self.db], env=self.env)

    def run(self, run_id: str = "r1", **inputs: Any) -> cli.Result:
        doc = json.dumps({"dir": str(self.dir), **inputs})
        return self.phasegate("run", FLOW, "--run-id", run_id, "--input", doc)

    def calls(self) -> Counter[str]:
        f = self.dir / "calls.txt"
        return Counter(f.read_text().split()) if f.exists() else Counter()

    def status(self, run_id: str = "r1") -> dict[str, Any]:
        p = self.phasegate("status", run_id, "--json")
        assert p.returncode == 0, p
        doc: dict[str, Any] = json.loads(p.stdout)
        return doc


@pytest.fixture
def flaky(tmp_path: Path) -> Flaky:
    return Flaky(tmp_path)


def test_a_flaky_step_succeeds_on_its_third_attempt(flaky: Flaky) -> None:
    p = flaky.run(fetch_ok_at=3)
    assert p.returncode == 0, p
    assert flaky.calls()["fetch"] == 3
    doc = flaky.status()
    assert doc["status"] == "completed"
    tried = [n for n in doc["notes"] if n.startswith("step fetch in gather: attempt")]
    assert len(tried) == 2, doc["notes"]
    assert "attempt 1 of 4 failed: ConnectionError: the source dropped the connection (call 1); retried" in tried[0]
    assert "attempt 2 of 4 failed" in tried[1]
    text = flaky.phasegate("status", "r1").stdout
    assert "note      step fetch in gather: attempt 2 of 4 failed" in text


def test_retry_on_lets_other_errors_fail_at_once(flaky: Flaky) -> None:
    p = flaky.run(fetch_bad=True)
    assert p.returncode == 1 and "ValueError: the source sent garbage" in p.stdout, p
    assert flaky.calls()["fetch"] == 1
    assert "attempts" not in flaky.status()["error"]


def test_retries_exhausted_fail_the_run_with_every_attempt_recorded(flaky: Flaky) -> None:
    p = flaky.run(fetch_ok_at=10, fetch_retries=2)
    assert p.returncode == 1, p
    assert flaky.calls()["fetch"] == 3
    err = flaky.status()["error"]
    assert err["type"] == "ConnectionError"
    assert [(a["step"], a["attempt"], a["of"]) for a in err["attempts"]] == [("fetch", i, 3) for i in (1, 2, 3)]
    assert err["attempts"][2]["error"] == "ConnectionError: the source dropped the connection (call 3)"
    assert "attempt 3 of 3" in flaky.phasegate("status", "r1").stdout
    # The worker takes up interrupted and decided runs, never a failed one.
    w = flaky.phasegate("worker", "--once")
    assert w.returncode == 0, w
    assert flaky.calls()["fetch"] == 3 and flaky.status()["status"] == "failed"
    # An operator's resume runs the step again, with its retries again.
    assert flaky.phasegate("resume", "r1").returncode == 1
    assert flaky.calls()["fetch"] == 6
    assert [a["attempt"] for a in flaky.status()["error"]["attempts"]] == [1, 2, 3]


def test_a_phase_retry_keeps_its_durable_steps_and_does_not_repeat_its_effects(flaky: Flaky) -> None:
    p = flaky.run(bill_ok_at=3)
    assert p.returncode == 0, p
    assert flaky.calls() == Counter({"fetch": 1, "price": 1, "charge": 1, "bill": 3})
    doc = flaky.status()
    tried = [n for n in doc["notes"] if n.startswith("phase bill: attempt")]
    assert len(tried) == 2 and "RuntimeError: the ledger was locked; re-run from its start" in tried[0], doc["notes"]


def test_a_phase_retry_never_repeats_an_effect_whose_call_failed(flaky: Flaky) -> None:
    """The charge raised: whether the gateway took it is unknown, so the
    retried phase stops on it instead of charging again."""
    p = flaky.run(charge_fails=True)
    assert p.returncode == 3, p
    assert "in_doubt_effect" in p.stdout
    assert flaky.calls()["charge"] == 1
    assert any(n.startswith("phase bill: attempt 1 of 3 failed: TimeoutError") for n in flaky.status()["notes"])


def test_a_run_killed_in_a_phase_retry_resumes_without_repeating_its_effect(flaky: Flaky) -> None:
    (flaky.dir / "hang").touch()
    doc = json.dumps({"dir": str(flaky.dir), "bill_ok_at": 2})
    child = cli.start(["run", FLOW, "--run-id", "r1", "--input", doc, "--db", flaky.db], env=flaky.env)
    cli.wait_for(flaky.dir / "hung")
    assert child.kill().killed
    (flaky.dir / "hang").unlink()
    assert flaky.status()["status"] == "interrupted"
    p = flaky.phasegate("resume", "r1")
    assert p.returncode == 0, p
    # The charge of the first attempt is done and kept; the price came back from the store.
    assert flaky.calls() == Counter({"fetch": 1, "price": 1, "charge": 1, "bill": 3})
