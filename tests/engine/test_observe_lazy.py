"""Observation costs nothing it is not asked for: a run, and the command
line's worker and watch without `--metrics`, import neither
`prometheus_client` nor `opentelemetry` (a fresh interpreter each)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT, child_env

CODE = """
import sys, tempfile, pathlib
from phasegate import Engine, Workflow
from phasegate.cli.parser import build_parser
wf = Workflow("lazy")
@wf.phase()
def one(ctx):
    return ctx.effect("e", lambda key: {"k": key})
with tempfile.TemporaryDirectory() as d, Engine(pathlib.Path(d) / "s.db") as eng:
    assert eng.run(wf, "r1").status.value == "completed"
build_parser().parse_args(["worker", "--once"])
from phasegate.cli import observing
observing.start(build_parser().parse_args(["worker", "--once"]))()
print(sorted(m for m in sys.modules if m.split(".")[0] in ("prometheus_client", "opentelemetry")))
"""


def test_nothing_of_the_extras_is_imported_unasked(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, env=child_env(drop=["PHASEGATE_OTEL"]), capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", p.stdout
