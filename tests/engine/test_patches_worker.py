"""Issue 41's checks through a worker, and under a SIGKILL at each step
(`phasegate.testing.kill_at_each_step`): a run waits in the middle of a
phase (`ctx.ask` after three saved steps), the workflow file is redeployed,
the question is answered, and a real worker (not `phasegate resume`) takes
the run on, on SQLite and PostgreSQL, with sync and async phases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from engine_harness import Harness
from test_patches import INSERTED, OLD, PATCHED, Deploy
from test_waits import status_is, worker

from phasegate import AsyncPhaseContext, PhaseContext, Workflow
from phasegate.testing import kill_at_each_step
from tests.support.waiting import until


@pytest.fixture(params=[False, True], ids=["sync", "async"])
def deploy(h: Harness, request: pytest.FixtureRequest) -> Deploy:
    return Deploy(h, request.param)


def test_a_worker_resumes_a_waiting_run_on_the_old_path_after_a_patch_lands(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("r", PHASEGATE_CODE_VERSION="v1").returncode == 5
    deploy.ship(PATCHED)
    deploy.answer("r")
    with worker(deploy.h, {"RUN": "r", "PHASEGATE_CODE_VERSION": "v2"}):
        done = until(status_is(deploy.h, "r", "completed"), what="the worker to finish the answered run")
    assert deploy.did("r") == ["s0", "s1", "s2", "notify", "tail", "charge", "done old ok=True"]
    # The worker's attempt ran the new code, and the run says so.
    assert done["code"]["started"]["label"] == "v1" and done["code"]["current"]["label"] == "v2"
    assert done["code"]["current"]["digest"] != done["code"]["started"]["digest"]


def test_a_worker_stops_a_diverged_replay_and_goes_on_once_approved(deploy: Deploy) -> None:
    deploy.ship(OLD)
    assert deploy.start("r").returncode == 5
    deploy.ship(INSERTED)
    deploy.answer("r")
    with worker(deploy.h, {"RUN": "r"}):
        blocked = until(status_is(deploy.h, "r", "blocked"), what="the worker to stop the diverged replay")
        (reason,) = blocked["blocked"]
        assert reason["what"] == "replay_diverged" and reason["step"] == "sX"
        assert deploy.did("r") == ["s0", "s1", "s2", "notify"]  # nothing ran under the new code
        assert deploy.h.decide("r", "approve").returncode == 0
        # Approved, the worker carries it out: the new code from the divergence,
        # up to the question again (its answer was the old code's question's).
        until(status_is(deploy.h, "r", "waiting"), what="the worker to take the approval and ask again")
        deploy.answer("r")
        until(status_is(deploy.h, "r", "completed"), what="the worker to finish the run")
    did = deploy.did("r")
    assert did.count("notify") == 1 and did.count("charge") == 1, did  # no effect repeated
    assert did[-1] == "done inserted ok=True" and "sX" in did


# -- a kill at each step of a patched phase --------------------------------------------

sync_wf = Workflow("patched-kill")


def _mark(folder: str, what: str) -> str:
    with open(Path(folder) / "world.txt", "a") as f:
        f.write(what + "\n")
    return what


@sync_wf.phase
def work(ctx: PhaseContext) -> dict[str, Any]:
    folder = ctx.inputs["folder"]
    for i in range(3):
        ctx.step(f"s{i}", lambda i=i: i, durable=True)
    path = "old"
    if ctx.patched("extra-check"):
        ctx.step("extra", lambda: "extra", durable=True)
        path = "new"
    ctx.effect("notify", lambda key: _mark(folder, f"notify {key}"), idempotent=True)
    return {"path": path}


async_wf = Workflow("patched-kill-async")


@async_wf.phase
async def awork(ctx: AsyncPhaseContext) -> dict[str, Any]:
    folder = ctx.inputs["folder"]
    for i in range(3):
        await ctx.step(f"s{i}", lambda i=i: i, durable=True)
    path = "old"
    if ctx.patched("extra-check"):
        await ctx.step("extra", lambda: "extra", durable=True)
        path = "new"
    await ctx.effect("notify", lambda key: _mark(folder, f"notify {key}"), idempotent=True)
    return {"path": path}


@pytest.mark.parametrize("wf", [sync_wf, async_wf], ids=["sync", "async"])
def test_a_patchs_answer_holds_under_a_kill_at_each_step(wf: Workflow, tmp_path: Path) -> None:
    # The effect is idempotent: its target keeps one line per key, as a
    # deduplicating gateway would (a kill after its call and before its
    # completion's commit calls it again, by design), so the world is the set.
    report = kill_at_each_step(
        wf,
        lambda d: {"folder": str(d)},
        workdir=tmp_path,
        world=lambda d: sorted(set((d / "world.txt").read_text().splitlines())) if (d / "world.txt").exists() else [],
    )
    report.assert_ok()
    assert report.uninterrupted.output == {"path": "new"}
    labels = [k.point.label for k in report.kills if k.point is not None]
    assert any("extra" in label for label in labels), labels
    # Killed anywhere, the resumed run took the path the patch's recorded answer said.
    assert all(k.output == {"path": "new"} for k in report.kills), str(report)
