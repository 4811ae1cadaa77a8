"""Each run records the code version it started under and the one of each
attempt (issue 41, item 3): `status`, `status --json`, alerts and the
console's run detail show both. Through the command line, on SQLite and
PostgreSQL, with sync and async phases: a run waits in the middle of a phase,
the workflow file is redeployed, and the run is resumed.
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_harness import Harness
from test_patches import COMMENTED, OLD, PATCHED, Deploy

from phasegate import Engine, Workflow
from phasegate.alerts.watch import event
from phasegate.errors import WorkflowError
from phasegate.run import codeversion


@pytest.fixture(params=[False, True], ids=["sync", "async"])
def deploy(h: Harness, request: pytest.FixtureRequest) -> Deploy:
    return Deploy(h, request.param)


def _code(deploy: Deploy, run_id: str) -> dict[str, Any]:
    code: dict[str, Any] = deploy.h.status(run_id)["code"]
    return code


def test_a_run_records_the_code_it_started_under_and_each_attempts(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("r", PHASEGATE_CODE_VERSION="release-1").returncode == 5
    first = _code(deploy, "r")
    assert first["started"] == first["current"] and first["count"] == 1
    assert first["started"]["label"] == "release-1" and len(first["started"]["digest"]) == 12

    # A deploy under the waiting run: a comment changed (the replay goes on),
    # under a new release; killed once, then resumed without a label.
    deploy.ship(COMMENTED)
    deploy.answer("r")
    assert deploy.resume("r", PHASEGATE_CODE_VERSION="release-2", KILL_AT="tail").returncode < 0
    assert deploy.resume("r").returncode == 0
    code = _code(deploy, "r")
    assert code["count"] == 3 and [a["n"] for a in code["attempts"]] == [1, 2, 3]
    assert code["started"] == first["started"]
    assert code["attempts"][1]["label"] == "release-2"
    assert code["attempts"][1]["digest"] != first["started"]["digest"]  # the phase's code moved
    assert code["current"] == code["attempts"][2] and "label" not in code["current"]
    assert code["current"]["digest"] == code["attempts"][1]["digest"]  # the same file, no label

    shown = deploy.h.cli("status", "r")
    assert shown.returncode == 0, shown
    (line,) = [ln for ln in shown.stdout.splitlines() if ln.startswith("code ")]
    assert f"started {first['started']['digest']} (release-1)" in line
    assert f"now {code['current']['digest']} (attempt 3 of 3)" in line


def test_an_alert_names_the_code_the_run_started_under_and_the_latest(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("r", PHASEGATE_CODE_VERSION="v1").returncode == 5
    deploy.ship(PATCHED)
    assert deploy.resume("r", PHASEGATE_CODE_VERSION="v2").returncode == 5  # still waiting for its answer
    with Engine(deploy.h.target, create=False) as eng, eng.store.read() as conn:
        row = eng.store.runs.get(conn, "r")
    sent = event(row, deploy.h.target)
    assert sent["code"]["started"]["label"] == "v1" and sent["code"]["current"]["label"] == "v2"
    assert sent["code"]["moved"] is True


def test_a_workflow_version_is_recorded_and_a_bad_label_refused(h: Harness) -> None:
    flow = h.tmp / "labelled.py"
    flow.write_text(
        "from phasegate import Workflow\n"
        "wf = Workflow('labelled', version='2026.12-a')\n"
        "@wf.phase\n"
        "def only(ctx):\n"
        "    return 1\n"
    )
    p = h.cli("run", f"{flow}:wf", "--run-id", "ok", "--input", "{}", env={"PHASEGATE_CODE_VERSION": "ignored"})
    assert p.returncode == 0, p
    assert h.status("ok")["code"]["started"]["label"] == "2026.12-a"  # the author's word wins over the deploy's

    # An unreadable label is one line and exit 2, and no run is recorded.
    flow.write_text(flow.read_text().replace("version='2026.12-a'", "version=None"))
    p = h.cli("run", f"{flow}:wf", "--run-id", "bad", "--input", "{}", env={"PHASEGATE_CODE_VERSION": "a\x1b[2Jb"})
    assert p.returncode == 2, p
    assert "PHASEGATE_CODE_VERSION" in p.stderr and "Traceback" not in p.stderr
    assert h.sql("SELECT count(*) FROM phasegate_runs WHERE run_id = 'bad'") == [(0,)]
    with pytest.raises(WorkflowError):
        Workflow("w", version="x" * 65)


def test_a_long_lived_run_keeps_its_first_and_its_latest_attempts() -> None:
    v = codeversion.Version("a" * 12, None)
    text: str | None = None
    for i in range(codeversion.KEPT + 5):
        text = codeversion.recorded(text, codeversion.Version(f"{i:012d}", None) if i else v, float(i))
    rec = codeversion.read(text)
    assert rec is not None and rec["count"] == codeversion.KEPT + 5
    assert rec["started"]["digest"] == "a" * 12 and len(rec["attempts"]) == codeversion.KEPT
    assert rec["attempts"][-1]["n"] == codeversion.KEPT + 5
    # Stored text is untrusted: damage hides the code version, it never stops a read.
    for damaged in ("[]", "{", '{"started": 1, "attempts": [], "count": 1}', "null"):
        assert codeversion.read(damaged) is None
