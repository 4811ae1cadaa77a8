"""A publish that must act again after its data was fixed (#11, redo_on_rewind).

The target (`inputs["target"]`, JSON lines) deduplicates by key, like a CDN
purge or an idempotent publish API: a repeated key is acknowledged, not
published again. `inputs["redo"]` says whether the effect is declared
`redo_on_rewind=True`; `inputs["idempotent"]` (default true) whether it is
idempotent at all.
"""

from __future__ import annotations

import json
from pathlib import Path

from phasegate import Workflow

wf = Workflow("test-redo")


def publish_to(target: str, key: str, body: str) -> dict:
    path = Path(target)
    seen = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    for rec in seen:
        if rec["key"] == key:
            return {"published": rec["n"], "replayed": True}
    rec = {"key": key, "body": body, "n": len(seen) + 1}
    with path.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")
    return {"published": rec["n"], "replayed": False}


@wf.phase()
def build(ctx) -> str:
    return f"edition of {ctx.inputs.get('day', 'monday')}"


@wf.phase(needs=["build"])
def publish(ctx, build) -> dict:
    return ctx.effect(
        "publish",
        lambda key: publish_to(ctx.inputs["target"], key, build),
        idempotent=bool(ctx.inputs.get("idempotent", True)),
        redo_on_rewind=bool(ctx.inputs.get("redo", False)),
    )
