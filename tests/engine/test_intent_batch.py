"""An async phase's fan-out of effects (#43): the intents that its tasks ask
for in the same round of the loop commit in one transaction, and no effect's
function runs before its own intent is committed; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

from engine_harness import Harness

from phasegate import AsyncPhaseContext, Engine, Workflow

FAN = 12
wf = Workflow("test-intent-batch")
SEEN: dict[str, list[str]] = {}
"""Effect key -> the states of the run's effect records another connection
read as that effect's function began."""
HARNESS: list[Harness] = []


@wf.phase()
async def fan(ctx: AsyncPhaseContext) -> list[Any]:
    async def send(key: str) -> dict[str, str]:
        # Read on a connection of its own: what is committed, nothing else.
        rows = HARNESS[0].sql("SELECT key, state FROM phasegate_effects WHERE run_id = ?", (ctx.run_id,))
        SEEN[key] = sorted(f"{k}={s}" for k, s in rows)
        return {"sent": key}

    out = list(await asyncio.gather(*(ctx.effect(f"send:{i}", send) for i in range(FAN))))
    if ctx.inputs.get("fail") and not FAILED:
        FAILED.append(True)
        raise RuntimeError("failed once after every effect was done")
    return out


FAILED: list[bool] = []


def test_a_gather_of_effects_commits_every_intent_before_any_function_runs(h: Harness) -> None:
    SEEN.clear()
    HARNESS[:] = [h]
    with Engine(h.target) as eng:
        outcome = eng.run(wf, "fan1")
    assert outcome.status.value == "completed", outcome
    assert len(SEEN) == FAN
    for key, states in SEEN.items():
        # Its own intent was durable when it began...
        assert f"{key}=intent" in states, (key, states)
        # ...and so were all the others': one commit carried them, before any function ran.
        assert len(states) == FAN, (key, states)
    rows = h.sql("SELECT state, intent_at FROM phasegate_effects WHERE run_id = ?", ("fan1",))
    assert sorted(r[0] for r in rows) == ["done"] * FAN
    # One transaction wrote them: one clock reading for every intent.
    assert len({r[1] for r in rows}) == 1, rows
    # The records form one verified history, linked in the order the calls were made.
    assert h.cli("verify").returncode == 0
    with Engine(h.target) as eng:
        again = eng.run(wf, "fan1")
    assert again.status.value == "completed"


def test_a_fan_out_resumed_after_its_effects_were_done_calls_none_of_them_again(h: Harness) -> None:
    SEEN.clear()
    FAILED.clear()
    HARNESS[:] = [h]
    with Engine(h.target) as eng:
        first = eng.run(wf, "fan2", {"fail": True})
    assert first.status.value != "completed" and len(SEEN) == FAN
    SEEN.clear()
    with Engine(h.target) as eng:
        again = eng.run(wf, "fan2", {"fail": True})
    assert again.status.value == "completed", again
    assert SEEN == {}  # every effect's saved result, through the batch; no function called
