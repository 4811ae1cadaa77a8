"""Issue #18's rules as pure functions: which changed probe blocks (probe
scope), a fingerprint that ignores how the module was loaded, and the retry
policy."""

from __future__ import annotations

from typing import Any

import pytest

from phasegate import WorkflowError
from phasegate._stop import Stop
from phasegate.authoring.retry import RetryPolicy
from phasegate.authoring.workflow import Workflow
from phasegate.errors import LeaseLost
from phasegate.outcome import BlockReason
from phasegate.run.environment import compare
from tests.unit.test_environment_compare import _state, _workflow


def _blocking(wf: Workflow, kept: set[str], done: tuple[str, ...] = ("load",)) -> list[str]:
    state = _state(wf, *done)
    cmp = compare(wf, state, {"tax": "v1", "region": "us"}, 100.0, kept=kept)
    return [r["probe"] for r in cmp.blocking]


def test_a_changed_probe_blocks_only_where_kept_work_declared_it() -> None:
    wf = _workflow()  # region is declared by bill alone
    assert _blocking(wf, kept={"load"}) == []
    assert _blocking(wf, kept={"load", "bill"}) == ["region"]  # bill has saved steps or effects
    cmp = compare(wf, _state(wf, "load"), {"tax": "v1", "region": "us"}, 100.0, kept={"load"})
    assert [r["probe"] for r in cmp.unread] == ["region"]


def test_a_probe_no_phase_declares_is_read_by_every_phase() -> None:
    wf = Workflow("u")

    @wf.probe("schema")
    def schema() -> str:
        return "s1"

    @wf.phase()
    def load(ctx: Any) -> int:
        return 1

    state = _state(wf, "load", probes={"schema": "s1"})
    cmp = compare(wf, state, {"schema": "s2"}, 100.0, kept={"load"})
    assert [r["probe"] for r in cmp.blocking] == ["schema"]


def test_the_fingerprint_does_not_name_the_module() -> None:
    def make(module: str) -> Workflow:
        ns: dict[str, Any] = {"__name__": module, "Workflow": Workflow}
        exec(  # noqa: S102 - test code, built here, to load one source under two module names
            "wf = Workflow('m')\n\ndef helper(x):\n    return x + 1\n\n@wf.phase()\ndef load(ctx):\n    return helper(1)\n",
            ns,
        )
        wf: Workflow = ns["wf"]
        return wf

    a, b = make("__main__").get("load"), make("flow").get("load")
    assert a.code_hash == b.code_hash and a.former_hashes != b.former_hashes
    assert a.runs(b.code_hash) and a.runs(a.former_hashes[0]) and not a.runs(b.former_hashes[0])


def test_a_retry_policy_refuses_what_cannot_mean_anything() -> None:
    for bad in ({"retries": -1}, {"retries": 1.5}, {"retries": True}, {"backoff": -1}, {"retry_on": (int,)}):
        args = {"retries": 2, "backoff": 1.0, "retry_on": (Exception,), **bad}
        with pytest.raises(WorkflowError):
            RetryPolicy.of("step 's'", args["retries"], args["backoff"], args["retry_on"])
    assert RetryPolicy.of("s", 2, 0, ConnectionError).retry_on == (ConnectionError,)


def test_a_retry_policy_retries_only_the_work_s_own_failures() -> None:
    p = RetryPolicy.of("s", 2, 0.5, (Exception,))
    assert p.retryable(ValueError(), 1) and p.retryable(ValueError(), 2) and not p.retryable(ValueError(), 3)
    assert not p.retryable(LeaseLost("gone"), 1)
    assert not p.retryable(Stop(BlockReason("in_doubt_effect", "x")), 1)  # type: ignore[arg-type]
    assert not RetryPolicy.of("s", 2, 0.5, (ConnectionError,)).retryable(ValueError(), 1)
    # Exponential, with jitter between half and one and a half of it.
    assert p.delay(1, lambda: 0.0) == 0.25 and p.delay(1, lambda: 1.0) == 0.75
    assert p.delay(3, lambda: 0.5) == 2.0
