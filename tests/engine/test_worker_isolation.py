"""The worker loads each run's target in isolation and as its files are now
(#16, finding 6): two targets with their own `helpers.py` each get their own,
and a workflow fixed while the worker runs is resumed with the fix."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from engine_harness import Harness

from tests.support import cli
from tests.support.waiting import until

FLOW = """\
from pathlib import Path

import helpers
from phasegate import Workflow

wf = Workflow("isolation")


@wf.phase()
def only(ctx) -> str:
    value = helpers.value()
    Path(ctx.inputs["out"]).write_text(value)
    return value
"""


def _target(folder: Path, helper_body: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flow.py").write_text(FLOW)
    (folder / "helpers.py").write_text(helper_body)
    return f"{folder / 'flow.py'}:wf"


def _start(h: Harness, run_id: str, target: str, out: Path) -> None:
    p = h.cli("run", target, "--run-id", run_id, "--input", json.dumps({"out": str(out)}))
    assert p.returncode == 1, p  # each helper raises until told otherwise
    assert h.decide(run_id, "reset", reason="start over").returncode == 0


def test_two_targets_each_get_their_own_helpers(h: Harness, tmp_path: Path) -> None:
    gate = tmp_path / "open"
    body = "from pathlib import Path\n\ndef value():\n    if not Path({gate!r}).exists():\n        raise RuntimeError('closed')\n    return {name!r}\n"
    a = _target(tmp_path / "a", body.format(gate=str(gate), name="from a"))
    b = _target(tmp_path / "b", body.format(gate=str(gate), name="from b"))
    _start(h, "ra", a, tmp_path / "ra.out")
    _start(h, "rb", b, tmp_path / "rb.out")
    gate.write_text("")
    p = h.cli("worker", "--once", real=True)
    assert p.returncode == 0, p
    assert (tmp_path / "ra.out").read_text() == "from a"
    assert (tmp_path / "rb.out").read_text() == "from b"
    assert {h.status(r)["status"] for r in ("ra", "rb")} == {"completed"}


def test_a_workflow_fixed_while_the_worker_runs_is_resumed_with_the_fix(h: Harness, tmp_path: Path) -> None:
    target = _target(tmp_path / "flow", "def value():\n    raise RuntimeError('bug')\n")
    out = tmp_path / "r1.out"
    _start(h, "r1", target, out)
    worker = cli.popen(["worker", "--poll", "0.2", "--db", h.target], env=h.env)
    try:
        until(
            lambda: h.status("r1")["status"] == "failed" and h.status("r1")["decisions"][-1]["state"] == "applied",
            "r1 to fail with its decision applied",
        )
        until(lambda: _attempted(h), "the worker to attempt r1")
        # The fix: a different file (other size, so no cached bytecode can pass for it).
        (tmp_path / "flow" / "helpers.py").write_text("def value():\n    return 'fixed, and longer than before'\n")
        assert h.decide("r1", "reset", reason="fixed helpers.py").returncode == 0
        until(lambda: h.status("r1")["status"] == "completed", "r1 to complete")
    finally:
        worker.send_signal(signal.SIGTERM)
        log = worker.communicate(timeout=60)[1]
    assert out.read_text() == "fixed, and longer than before", log


def _attempted(h: Harness) -> bool:
    st = h.status("r1")
    return st["status"] == "failed" and "bug" in (st.get("error") or {}).get("message", "")
