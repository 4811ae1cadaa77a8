"""Code that changes under a waiting run (issue 41): `ctx.patched`,
`ctx.deprecated_patch` and `phasegate status --patch`, through the command
line, on SQLite and PostgreSQL, with sync and async phases.

Each test writes the workflow file an author would write, starts runs that
wait in the middle of a phase (`ctx.ask` after three saved steps), rewrites
the file as a deploy would, and resumes them. What ran is read from the
trace the workflow's own functions append to, and from `status --json`.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from engine_harness import Harness

PATCH = "extra-check"

#: The phase as it was before the fix: three durable steps (then, in TEMPLATE,
#: an effect and the question the run waits on).
OLD = """
    for i in range(3):
        {aw}ctx.step(f"s{{i}}", mark, f"s{{i}}", durable=True)
    path = "none"
"""

#: The fix, guarded by a patch: runs that were past its point keep the old path.
PATCHED = """
    for i in range(3):
        {aw}ctx.step(f"s{{i}}", mark, f"s{{i}}", durable=True)
    if ctx.patched("extra-check"):
        {aw}ctx.step("extra", mark, "extra", durable=True)
        path = "new"
    else:
        path = "old"
"""

#: Once every old run is gone: the new path alone.
DEPRECATED = """
    for i in range(3):
        {aw}ctx.step(f"s{{i}}", mark, f"s{{i}}", durable=True)
    ctx.deprecated_patch("extra-check")
    {aw}ctx.step("extra", mark, "extra", durable=True)
    path = "new"
"""

#: The same steps, with no patch: a step inserted, one removed, two swapped, a comment added.
INSERTED = """
    {aw}ctx.step("s0", mark, "s0", durable=True)
    {aw}ctx.step("sX", mark, "sX", durable=True)
    {aw}ctx.step("s1", mark, "s1", durable=True)
    {aw}ctx.step("s2", mark, "s2", durable=True)
    path = "inserted"
"""
REMOVED = """
    {aw}ctx.step("s0", mark, "s0", durable=True)
    {aw}ctx.step("s2", mark, "s2", durable=True)
    path = "removed"
"""
REORDERED = """
    {aw}ctx.step("s1", mark, "s1", durable=True)
    {aw}ctx.step("s0", mark, "s0", durable=True)
    {aw}ctx.step("s2", mark, "s2", durable=True)
    path = "reordered"
"""
COMMENTED = """
    # Three steps, then the question (a comment is a change of the phase's code).
    for i in range(3):
        {aw}ctx.step(f"s{{i}}", mark, f"s{{i}}", durable=True)
    path = "none"
"""

TEMPLATE = """
import os
import signal

from phasegate import Workflow

wf = Workflow("deploy")


def mark(what):
    with open(os.environ["PHASEGATE_TEST_TRACE"], "a") as f:
        f.write(f"{{os.environ.get('RUN', '?')}} {{what}}\\n")
    if os.environ.get("KILL_AT") == what:
        os.kill(os.getpid(), signal.SIGKILL)
    return what


def notify(key):
    return mark("notify")


def charge(key):
    return mark("charge")


@wf.phase
{df} work(ctx):
{body}
    {aw}ctx.effect("notify", notify)
    ok = {aw}ctx.ask("go", "Go on?", bool)
    {aw}ctx.step("tail", mark, "tail", durable=True)
    {aw}ctx.effect("charge", charge)
    mark(f"done {{path}} ok={{ok}}")
    return {{"ok": ok, "path": path}}
"""


def write(path: Path, body: str, *, is_async: bool) -> None:
    aw = "await " if is_async else ""
    code = TEMPLATE.format(df="async def" if is_async else "def", aw=aw, body=body.format(aw=aw).rstrip())
    path.write_text(textwrap.dedent(code))


class Deploy:
    """One workflow file, rewritten as deploys land, and the runs of it."""

    def __init__(self, h: Harness, is_async: bool) -> None:
        self.h = h
        self.is_async = is_async
        self.file = h.tmp / "deploy_flow.py"

    def ship(self, body: str) -> None:
        write(self.file, body, is_async=self.is_async)

    def start(self, run_id: str, **env: str) -> Any:
        return self.h.cli("run", f"{self.file}:wf", "--run-id", run_id, "--input", "{}", env={"RUN": run_id, **env})

    def resume(self, run_id: str, **env: str) -> Any:
        return self.h.cli("resume", run_id, env={"RUN": run_id, **env})

    def answer(self, run_id: str) -> None:
        p = self.h.decide(run_id, "answer", "--question", "go", "--value", "true")
        assert p.returncode == 0, p

    def did(self, run_id: str) -> list[str]:
        return [line.split(" ", 1)[1] for line in self.h.trace() if line.startswith(run_id + " ")]

    def result(self, run_id: str) -> str:
        """How the run's phase ended, as its last trace line says."""
        s = self.h.status(run_id)
        assert s["status"] == "completed", s
        return self.did(run_id)[-1]

    def patch(self) -> dict[str, Any]:
        p = self.h.cli("status", "--patch", PATCH, "--json")
        assert p.returncode == 0, p
        return json.loads(p.stdout)


@pytest.fixture(params=[False, True], ids=["sync", "async"])
def deploy(h: Harness, request: pytest.FixtureRequest) -> Deploy:
    return Deploy(h, request.param)


def test_a_waiting_run_keeps_the_old_path_and_a_new_run_takes_the_patch(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("old").returncode == 5  # waiting for its answer
    deploy.ship(PATCHED)
    assert deploy.start("new").returncode == 5
    assert deploy.did("new") == ["s0", "s1", "s2", "extra", "notify"]

    # The old run has not met the patch since the deploy: it may still take the old path.
    report = deploy.patch()
    assert report["new_path"] == 1 and report["old_path"] == []
    assert [r["run_id"] for r in report["not_reached"]] == ["old"]
    assert report["old_path_can_go"] is False

    # Answered and resumed, it records the old path; killed after that, it is still live on it.
    deploy.answer("old")
    assert deploy.resume("old", KILL_AT="tail").returncode < 0
    report = deploy.patch()
    assert [(r["run_id"], r["phase"]) for r in report["old_path"]] == [("old", "work")]
    assert report["not_reached"] == []

    deploy.answer("new")
    for run_id in ("old", "new"):
        assert deploy.resume(run_id).returncode == 0
    # Nothing the old code saved was done again, and each effect happened once.
    assert deploy.did("old") == ["s0", "s1", "s2", "notify", "tail", "tail", "charge", "done old ok=True"]
    assert deploy.did("new") == ["s0", "s1", "s2", "extra", "notify", "tail", "charge", "done new ok=True"]
    assert deploy.patch() == {
        "patch": PATCH,
        "old_path": [],
        "new_path": 0,
        "not_reached": [],
        "damaged": [],
        "old_path_can_go": True,
    }
    assert deploy.h.cli("verify").returncode == 0


def test_the_answer_is_recorded_so_a_kill_and_a_later_deploy_never_change_it(deploy: Deploy) -> None:
    deploy.ship(PATCHED)
    # Killed inside the new path, before its step is saved: the patch's answer was recorded first.
    assert deploy.start("r", KILL_AT="extra").returncode < 0
    assert deploy.resume("r").returncode == 5
    assert deploy.did("r") == ["s0", "s1", "s2", "extra", "extra", "notify"]
    # The next deploy drops the old branch: this run took the new path, so it goes on.
    deploy.ship(DEPRECATED)
    deploy.answer("r")
    assert deploy.resume("r").returncode == 0
    assert deploy.result("r") == "done new ok=True"
    assert deploy.did("r").count("charge") == 1 and deploy.did("r").count("notify") == 1


def test_a_run_on_the_old_path_stops_at_a_deprecated_patch_until_its_phase_is_rewound(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("old").returncode == 5
    deploy.ship(DEPRECATED)
    deploy.answer("old")
    p = deploy.resume("old")
    assert p.returncode == 3, p  # blocked, for an operator: nothing of the new path ran
    s = deploy.h.status("old")
    assert s["status"] == "blocked"
    (reason,) = s["blocked"]
    assert reason["kind"] == "env_mismatch" and reason["what"] == "replay_diverged"
    assert reason["patch"] == PATCH and "old path" in reason["detail"]
    assert deploy.did("old") == ["s0", "s1", "s2", "notify"]
    refused = deploy.h.decide("old", "approve")
    assert refused.returncode != 0 and "rewind" in refused.stderr

    assert deploy.h.decide("old", "rewind", "--phase", "work").returncode == 0
    p = deploy.resume("old")
    assert p.returncode == 5, p  # the phase again from its start, under the new code: it asks again
    deploy.answer("old")
    assert deploy.resume("old").returncode == 0
    assert deploy.result("old") == "done new ok=True"
    # The effect the old code did is never done again, even after the rewind.
    assert deploy.did("old").count("notify") == 1 and deploy.did("old").count("charge") == 1


# -- a replay that diverges ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "saved", "asked"),
    [
        (INSERTED, "s1", "sX"),
        (REMOVED, "s1", "s2"),
        (REORDERED, "s0", "s1"),
    ],
    ids=["inserted", "removed", "reordered"],
)
def test_a_step_moved_before_the_wait_stops_the_run_until_an_operator_approves(
    deploy: Deploy, body: str, saved: str, asked: str
) -> None:
    deploy.ship(OLD)
    assert deploy.start("r").returncode == 5
    deploy.ship(body)
    deploy.answer("r")
    p = deploy.resume("r")
    assert p.returncode == 3, p
    (reason,) = deploy.h.status("r")["blocked"]
    assert reason["kind"] == "env_mismatch" and reason["what"] == "replay_diverged"
    assert reason["phase"] == "work" and reason["step"] == asked
    assert reason["saved"] == {"kind": "step", "name": saved}
    assert reason["asked"] == {"kind": "step", "name": asked}
    assert f"durable step {asked!r}" in reason["detail"]
    # Nothing ran under the new code: no step was computed, no result handed over.
    assert deploy.did("r") == ["s0", "s1", "s2", "notify"]

    assert deploy.h.decide("r", "approve").returncode == 0
    p = deploy.resume("r")
    # The new code goes on from the divergence: the steps after it are done again,
    # and so is the question (its answer was to the old code's question).
    assert p.returncode == 5, p
    deploy.answer("r")
    assert deploy.resume("r").returncode == 0
    did = deploy.did("r")
    assert did.count("notify") == 1 and did.count("charge") == 1  # effects are never repeated
    assert did[-1].startswith("done ") and asked in did[4:]
    assert deploy.h.cli("verify").returncode == 0


def test_a_comment_only_change_replays_and_goes_on(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("r").returncode == 5
    deploy.ship(COMMENTED)
    deploy.answer("r")
    assert deploy.resume("r").returncode == 0
    assert deploy.did("r") == ["s0", "s1", "s2", "notify", "tail", "charge", "done none ok=True"]


def test_a_replay_is_checked_again_after_a_kill_under_the_new_code(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("r").returncode == 5
    deploy.ship(COMMENTED)
    deploy.answer("r")
    assert deploy.resume("r", KILL_AT="tail").returncode < 0
    # A third deploy that inserts a step before the wait is still caught: the
    # records were made by the first code, whatever the second one did.
    deploy.ship(INSERTED)
    p = deploy.resume("r")
    assert p.returncode == 3, p
    assert deploy.h.status("r")["blocked"][0]["step"] == "sX"


def test_kills_at_each_step_and_a_deploy_between_attempts_repeat_no_effect(deploy: Deploy) -> None:
    """SIGKILL at each step in turn, the code redeployed (a comment changed)
    between every two attempts: the patch's answer, the saved steps and the
    effects each hold, and the run ends on the path it took first."""
    versions = [PATCHED, PATCHED.replace("    if ctx.patched", "    # redeployed\n    if ctx.patched")]
    deploy.ship(OLD)
    assert deploy.start("old").returncode == 5
    deploy.ship(versions[0])
    assert deploy.start("new", KILL_AT="s0").returncode < 0
    for i, point in enumerate(["s1", "s2", "extra", "notify"]):
        deploy.ship(versions[(i + 1) % 2])
        p = deploy.resume("new", KILL_AT=point if point != "notify" else "")
        assert p.returncode == (5 if point == "notify" else -9), (point, p)
    for run_id in ("old", "new"):
        deploy.answer(run_id)
        deploy.ship(versions[1])
        assert deploy.resume(run_id, KILL_AT="tail").returncode < 0
        deploy.ship(versions[0])
        assert deploy.resume(run_id).returncode == 0
    for run_id, path in (("old", "old"), ("new", "new")):
        did = deploy.did(run_id)
        assert did.count("notify") == 1 and did.count("charge") == 1, did
        assert did[-1] == f"done {path} ok=True"
    assert deploy.did("new")[:8] == ["s0", "s0", "s1", "s1", "s2", "s2", "extra", "extra"]
    assert deploy.h.cli("verify").returncode == 0


def test_a_step_whose_function_changed_is_not_handed_its_old_result(deploy: Deploy) -> None:
    """The fix is in the step's own function (its place unchanged): the saved
    result was made by the old function, so the run stops before it is
    handed over; approved, the step and the ones after it are done again."""
    deploy.ship(OLD)
    assert deploy.start("r").returncode == 5
    deploy.ship(OLD)
    deploy.file.write_text(deploy.file.read_text().replace("    return what\n", "    return what.upper().lower()\n"))
    deploy.answer("r")
    p = deploy.resume("r")
    assert p.returncode == 3, p
    (reason,) = deploy.h.status("r")["blocked"]
    assert reason["what"] == "replay_diverged" and reason["function"] == "mark" and reason["step"] == "s0"
    assert "its function mark changed" in reason["detail"]
    assert deploy.h.decide("r", "approve").returncode == 0
    assert deploy.resume("r").returncode == 5  # s0, s1, s2 done again by the new function; asked again
    deploy.answer("r")
    assert deploy.resume("r").returncode == 0
    did = deploy.did("r")
    assert did[:8] == ["s0", "s1", "s2", "notify", "s0", "s1", "s2", "tail"], did
    assert did.count("notify") == 1 and did.count("charge") == 1
