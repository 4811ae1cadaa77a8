"""A workflow whose stored text is hostile: its probe value, its phase error
and (given on the command line) the operator's reasons are whatever the test
puts in two files, terminal escape sequences and bidi overrides included."""

from __future__ import annotations

from pathlib import Path

from phasegate import Workflow

wf = Workflow("test-hostile", runbooks={"failed": "page ops \x1b]52;c;ZXZpbA==\x07\u202e now"})


@wf.probe("world")
def world(inputs: dict) -> str:
    return Path(inputs["world"]).read_text()


@wf.phase(probes=["world"])
def first(ctx) -> int:
    return 1


@wf.phase(needs=["first"])
def second(ctx, first: int) -> int:
    fail = Path(ctx.inputs["fail"])
    if fail.exists():
        raise RuntimeError(fail.read_text())
    return first + 1
