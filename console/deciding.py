"""The console's writes: a confirmed decision, a second, a prune and a
claim, each recorded through the engine (which checks it again inside its
own transaction), and the one line that says what landed."""

from __future__ import annotations

import json

from phasegate import Engine

from ._format import size
from .actions import ActionResult
from .offered import HOLDS, claimed_by_other
from .runs_page import workers_alive


def toggle_claim(engine: Engine, run_id: str) -> str:
    """Claim the run for this console's operator, or release their own claim.
    Someone else's claim is not taken over from here (`phasegate claim RUN --force`)."""
    view = engine.status(run_id)
    mine = view.claim is not None and not claimed_by_other(engine, view)
    held = engine.oversight.claim(run_id, release=mine)
    if held is None:
        return f"released the claim on {run_id}"
    return f"{run_id} claimed by {held.operator} until {str(held.expires_at).replace('T', ' ').rstrip('Z')}"


def apply(engine: Engine, result: ActionResult) -> str:
    """Record the operator's decision; returns one line saying what landed."""
    name = result.spec.name
    if name == "prune":
        done = engine.prune(apply=True, run_id=result.run_id, reason=result.reason)
        return f"pruned {len(done)} item(s), {size(sum(c.bytes for c in done))}, from {result.run_id}"
    if name == "second":
        d = engine.oversight.second(
            result.run_id, int(result.choice or 0), reason=result.reason, override_claim=result.override_claim
        )
        return f"decision {d.id} ({d.action} by {d.operator}) on {result.run_id} seconded: it takes effect"
    d = engine.decide(
        result.run_id,
        name,
        reason=result.reason,
        override_claim=result.override_claim,
        phase=result.choice if name == "rewind" else None,
        effect=result.choice if name in ("confirm_effect", "retry_effect") else None,
        expect_env=result.expect_env if name == "approve" else None,
        **({"result": json.loads(result.result_json)} if result.result_json is not None else {}),
    )
    if d.state == "applied":
        when = "applied"
    elif name in HOLDS and d.state == "pending":
        when = "asked of its process: it stops at its next step"
    elif d.state == "proposed":
        when = "proposed; it waits for a second operator (another account)"
    elif workers_alive(engine):
        when = f"recorded; {WORKER_WILL}"
    else:
        # Nothing will pick it up on its own: say so, and what moves it now.
        when = "recorded; NO WORKER IS ALIVE, so it waits: press e to resume the run now (or start phasegate worker)"
    return f"{d.action} on {result.run_id} by {d.operator} {when} (decision {d.id})"


WORKER_WILL = "a worker is alive and carries it out at its next look"
"""What a decision's notice says while a worker is to carry it out (withdrawn once it has)."""
