"""A store another account may not look at: one line and exit 2 from every
command, never a traceback (#29: seen while building the decision soak)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import child_env, run

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")


@pytest.mark.parametrize("args", [["status"], ["status", "r1"], ["verify"], ["resume", "r1"], ["workers"]])
def test_a_store_this_account_may_not_read_is_one_line(tmp_path: Path, args: list[str]) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    db = private / "runs.db"
    wf = tmp_path / "wf.py"
    wf.write_text("from phasegate import Workflow\nwf = Workflow('w')\n\n@wf.phase()\ndef one(ctx):\n    return 1\n")
    made = run(["run", f"{wf}:wf", "--run-id", "r1", "--db", str(db)], mode="exec")
    assert made.returncode == 0, made.stderr
    tmp_path.chmod(0o755)
    p = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-m", "phasegate"]
        + [*args, "--db", str(db)],
        env=child_env(),
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
    )
    assert p.returncode == 2, p
    assert "Traceback" not in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and "may not use this store" in p.stderr, p.stderr
