"""The authoring API without traps (issue 41): what an author writes by
mistake either works as they meant it or is refused before anything runs,
through `phasegate run` as they would run it."""

from __future__ import annotations

import json
from pathlib import Path

from phasegate import Workflow
from tests.support import cli


def _flow(tmp_path: Path, body: str) -> str:
    path = tmp_path / "flow.py"
    path.write_text(body)
    return f"{path}:wf"


def test_a_bare_phase_decorator_registers_and_runs_its_phase(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    target = _flow(
        tmp_path,
        "from pathlib import Path\n"
        "from phasegate import Workflow\n"
        "wf = Workflow('bare')\n\n"
        "@wf.phase\n"
        "def only(ctx):\n"
        f"    Path({str(marker)!r}).write_text('ran')\n"
        "    return {'ok': True}\n\n"
        "@wf.phase(needs=['only'])\n"
        "def after(ctx, only):\n"
        "    return only\n",
    )
    db = str(tmp_path / "runs.db")
    p = cli.run(["run", target, "--run-id", "r1", "--db", db], mode="fork")
    assert p.returncode == 0, p
    assert marker.read_text() == "ran"
    s = json.loads(cli.run(["status", "r1", "--json", "--db", db], mode="fork").stdout)
    assert [ph["name"] for ph in s["phases"]] == ["only", "after"]


def test_a_bare_decorator_returns_the_function_itself() -> None:
    wf = Workflow("bare")

    def load(ctx: object) -> int:
        return 1

    assert wf.phase(load) is load
    assert [p.name for p in wf.phases] == ["load"]


def test_a_workflow_with_no_phases_is_refused_at_run_and_nothing_is_stored(tmp_path: Path) -> None:
    target = _flow(tmp_path, "from phasegate import Workflow\nwf = Workflow('empty')\n")
    db = tmp_path / "runs.db"
    p = cli.run(["run", target, "--run-id", "r1", "--db", str(db)], mode="fork")
    assert p.returncode == 2, p
    assert p.stderr.count("\n") == 1 and "declares no phases" in p.stderr
    assert "Traceback" not in p.stderr
    s = cli.run(["status", "--json", "--db", str(db)], mode="fork")
    assert s.returncode != 0 or json.loads(s.stdout) == []
