"""`environment.compare` over hand-built folded state and probe values: which
changes stop a resume (a probe's value, the code of a done phase, the shape
before the frontier, the run's age) and which are only reported."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from phasegate.authoring.workflow import AGE_PROBE, Workflow
from phasegate.history.chain import Done, Entry, Folded
from phasegate.run.environment import compare


def _workflow(*, max_age: float | None = None, report_body: str = "a") -> Workflow:
    wf = Workflow("unit", max_age=max_age)

    @wf.probe("tax")
    def tax() -> str:
        return "v1"

    @wf.probe("region")
    def region() -> str:
        return "eu"

    @wf.phase(probes=("tax",))
    def load(ctx: Any) -> int:
        return 1

    @wf.phase(needs=("load",), probes=("tax", "region"))
    def bill(ctx: Any) -> int:
        return 2

    # Two bodies, so a test can change the code of a phase that is not done.
    if report_body == "a":

        @wf.phase(needs=("bill",))
        def report(ctx: Any) -> str:
            return "a"

    else:

        @wf.phase(needs=("bill",))
        def report(ctx: Any) -> str:  # noqa: F811 - the changed code of the same phase
            return "b, changed"

    return wf


def _done(wf: Workflow, *names: str, code: dict[str, str] | None = None) -> dict[str, Done]:
    out = {}
    for seq, name in enumerate(names):
        entry = Entry(row=SimpleNamespace(seq=seq, created_at=100.0 + seq), env={"kind": "phase"})
        out[name] = Done(entry=entry, code=(code or {}).get(name, wf.get(name).code_hash), missing=[])
    return out


def _state(wf: Workflow, *done: str, probes: dict[str, Any] | None = None, **kw: Any) -> Folded:
    return Folded(
        done=_done(wf, *done, code=kw.pop("code", None)),
        probes={"tax": "v1", "region": "eu"} if probes is None else probes,
        shape=kw.pop("shape", wf.shape()),
        last_at=kw.pop("last_at", 100.0),
        **kw,
    )


def _rows(cmp: Any) -> dict[str, dict[str, Any]]:
    return {r["probe"]: r for r in cmp.rows}


def test_the_same_world_stops_nothing() -> None:
    wf = _workflow()
    cmp = compare(wf, _state(wf, "load", "bill"), {"tax": "v1", "region": "eu"}, now=101.0)
    assert not cmp.changed and cmp.blocking == [] and cmp.notes == []
    rows = _rows(cmp)
    assert set(rows) == {"region", "tax", "code:load", "code:bill", "shape"}
    assert not any(r["changed"] for r in cmp.rows)


def test_a_changed_probe_value_blocks_and_names_the_phases_that_declare_it() -> None:
    wf = _workflow()
    cmp = compare(wf, _state(wf, "load"), {"tax": "v2", "region": "eu"}, now=101.0)
    assert cmp.changed
    assert cmp.blocking == [
        {"probe": "tax", "saved": "v1", "current": "v2", "changed": True, "phases": ["load", "bill"]}
    ]
    assert _rows(cmp)["region"]["changed"] is False


def test_a_probe_the_checkpoint_never_saw_is_shown_but_does_not_block() -> None:
    wf = _workflow()
    cmp = compare(wf, _state(wf, "load", probes={"tax": "v1"}), {"tax": "v1", "region": "eu"}, now=101.0)
    assert not cmp.changed
    assert _rows(cmp)["region"] == {
        "probe": "region",
        "saved": None,
        "current": "eu",
        "changed": False,
        "phases": ["bill"],
    }


def test_a_probe_that_now_fails_is_a_changed_world() -> None:
    wf = _workflow()
    failed = {"probe_error": "OSError: unreachable"}
    cmp = compare(wf, _state(wf, "load"), {"tax": failed, "region": "eu"}, now=101.0)
    assert [r["probe"] for r in cmp.blocking] == ["tax"]
    assert cmp.blocking[0]["current"] == failed


def test_changed_code_of_a_done_phase_blocks() -> None:
    wf = _workflow()
    state = _state(wf, "load", "bill", code={"bill": "0" * 16})
    cmp = compare(wf, state, {"tax": "v1", "region": "eu"}, now=101.0)
    assert [r["probe"] for r in cmp.blocking] == ["code:bill"]
    assert cmp.blocking[0]["saved"] == "0" * 16 and cmp.blocking[0]["current"] == wf.get("bill").code_hash


def test_changed_code_of_a_phase_not_done_is_only_a_note() -> None:
    before, after = _workflow(report_body="a"), _workflow(report_body="b")
    assert before.get("report").code_hash != after.get("report").code_hash
    last_codes = {p.name: p.code_hash for p in before.phases}
    cmp = compare(after, _state(after, "load", "bill"), {"tax": "v1", "region": "eu"}, 101.0, last_codes)
    assert not cmp.changed
    assert cmp.notes == ["code of phase report changed; it is not done yet, so it runs the new code"]
    assert "code:report" not in _rows(cmp)


def test_a_reordered_shape_before_the_frontier_blocks() -> None:
    wf = _workflow()
    saved = [{"name": "bill", "needs": []}, {"name": "load", "needs": []}, {"name": "report", "needs": ["bill"]}]
    cmp = compare(wf, _state(wf, "load", "bill", shape=saved), {"tax": "v1", "region": "eu"}, now=101.0)
    assert [r["probe"] for r in cmp.blocking] == ["shape"]
    assert cmp.blocking[0]["phases"] == ["bill", "load"]


def test_a_shape_change_after_the_frontier_does_not_block() -> None:
    wf = _workflow()
    saved = [{"name": "load", "needs": []}, {"name": "bill", "needs": ["load"]}]  # `report` added since
    cmp = compare(wf, _state(wf, "load", "bill", shape=saved), {"tax": "v1", "region": "eu"}, now=101.0)
    assert not cmp.changed and _rows(cmp)["shape"]["changed"] is False


def test_a_run_older_than_max_age_blocks_and_one_within_it_does_not() -> None:
    wf = _workflow(max_age=60)
    state = _state(wf, "load", last_at=1000.0)
    old = compare(wf, state, {"tax": "v1", "region": "eu"}, now=1060.5)
    assert [r["probe"] for r in old.blocking] == [AGE_PROBE]
    assert old.blocking[0]["saved"] == "<= 60s" and old.blocking[0]["current"] == "60.5s"
    # The phases it stops are the ones not yet done (no phase declares the age probe).
    assert old.blocking[0]["phases"] == ["bill", "report"]
    fresh = compare(wf, state, {"tax": "v1", "region": "eu"}, now=1060.0)
    assert not fresh.changed and _rows(fresh)[AGE_PROBE]["changed"] is False


def test_without_max_age_there_is_no_age_row() -> None:
    wf = _workflow()
    cmp = compare(wf, _state(wf, "load", last_at=0.0), {"tax": "v1", "region": "eu"}, now=10.0**9)
    assert AGE_PROBE not in _rows(cmp) and not cmp.changed
