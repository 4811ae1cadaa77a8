"""Two workflows that a kill at the wrong moment makes go another way, for
`phasegate.testing.kill_at_each_step`'s tests: one writes to the outside
world without `ctx.effect`, one hands a value to a later phase in a module
global instead of its output."""

from __future__ import annotations

import json
from pathlib import Path

from phasegate import Workflow

from .billing import gateway_charge

outside = Workflow("test-leaky-outside")


@outside.phase()
def bill(ctx) -> dict:
    # The mistake: the gateway is called directly, not through ctx.effect, so
    # a kill after this call and before the checkpoint charges twice.
    res = gateway_charge(ctx.inputs["ledger"], "bill-1", 100, idempotent=False)
    return {"amount": res["amount"]}


@outside.phase(needs=["bill"])
def notify(ctx, bill) -> dict:
    return {"billed": bill["amount"]}


forgetful = Workflow("test-leaky-forgetful")

_seen: list[int] = []
"""The mistake: what `count` saw, kept in this process only."""


@forgetful.phase()
def count(ctx) -> int:
    _seen.extend(range(int(ctx.inputs.get("n", 3))))
    return len(_seen)


@forgetful.phase(needs=["count"])
def total(ctx, count) -> dict:
    return {"count": count, "seen": len(_seen)}


def ledger_lines(folder: Path) -> list[str]:
    """The keys the gateway charged in an attempt's folder, in order."""
    path = folder / "ledger.jsonl"
    return [json.loads(line)["key"] for line in path.read_text().splitlines()] if path.exists() else []
