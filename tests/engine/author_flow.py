"""A workflow as an author writes it from the README, for the tests in
test_author_workflows.py. They copy this file into a tmp folder as
`flow.py` and run it three ways: as a script (`python flow.py ...`, the
module is `__main__`), imported by name (`python -c "import flow; ..."`)
and through `phasegate run/resume` (loaded by path).

Every computation appends a line to the trace file named by the inputs, so
a test can tell what ran again. `compute` saves durable steps, then fails
while the gate file is missing (or hangs, to be killed, while the hang
file exists);
`publish` hangs at its start while the hang2 file exists, and inside its
non-idempotent `notify` effect while the hang3 file exists; `publish` sends through a (deduplicating)
effect and then fails while the second gate file is missing.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from phasegate import Engine, PhaseContext, Workflow

wf = Workflow("flow")


@wf.probe("config")
def config(inputs: dict) -> str:
    """Declared by `publish` alone."""
    return Path(inputs["config"]).read_text()


@wf.probe("schema")
def schema(inputs: dict) -> str:
    """Declared by no phase: every phase depends on it."""
    return Path(inputs["schema"]).read_text()


def trace(ctx: PhaseContext, what: str) -> None:
    with open(ctx.inputs["trace"], "a") as fh:
        fh.write(what + "\n")


def double(ctx: PhaseContext, x: int) -> int:
    trace(ctx, f"double:{x}")
    return 2 * x


@wf.phase()
def load(ctx: PhaseContext) -> list[int]:
    trace(ctx, "load")
    return [1, 2, 3]


@wf.phase(needs=["load"])
def compute(ctx: PhaseContext, load: list[int]) -> list[int]:
    out = [ctx.step(f"double:{x}", double, ctx, x, durable=True) for x in load]
    if ctx.inputs.get("hang") and Path(ctx.inputs["hang"]).exists():
        trace(ctx, "hung")  # the test SIGKILLs the process here
        time.sleep(600)  # sleep: hangs here until the test SIGKILLs it
    if not Path(ctx.inputs["gate"]).exists():
        raise RuntimeError("the gate is closed")
    return out


@wf.phase(needs=["compute"], probes=["config"])
def publish(ctx: PhaseContext, compute: list[int]) -> int:
    if Path(ctx.inputs["hang2"]).exists():
        trace(ctx, "hung2")
        time.sleep(600)  # sleep: hangs here until the test SIGKILLs it

    def send(key: str) -> str:
        trace(ctx, f"send:{key}")
        return key

    ctx.effect("send", send, idempotent=True)

    def notify(key: str) -> str:
        trace(ctx, f"notify:{key}")
        if Path(ctx.inputs["hang3"]).exists():
            time.sleep(600)  # sleep: killed here: the (non-idempotent) notification is in doubt
        return key

    ctx.effect("notify", notify)
    if not Path(ctx.inputs["gate2"]).exists():
        raise RuntimeError("the second gate is closed")
    return sum(compute)


def main(argv: list[str], workflow: Workflow, target: str) -> int:
    """`DB RUN_ID [INPUTS_JSON]`: start (with inputs) or resume a run and
    print its status, the way the README's example does."""
    db, run_id = argv[0], argv[1]
    inputs = json.loads(argv[2]) if len(argv) > 2 else None
    with Engine(db) as eng:
        out = eng.run(workflow, run_id, inputs, target=target)
    print(out.status, "; ".join(str(r) for r in out.blocked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], wf, f"{Path(__file__).resolve()}:wf"))
