"""Issue #18, finding 6: the smaller things a workflow author meets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine_harness import BILLING_FILE, HERE_WORKFLOWS, Harness

from tests.support import cli

FLOORS = f"{HERE_WORKFLOWS / 'floors.py'}:wf"


def _lose(h: Harness, run_id: str, phase: str) -> None:
    h.sql("UPDATE phasegate_checkpoints SET output_json=NULL WHERE run_id=? AND phase=?", (run_id, phase))


def test_a_degraded_completion_says_so(h: Harness) -> None:
    assert h.run("r1", target=FLOORS, kill="start:report").killed
    _lose(h, "r1", "fetch")
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert p.stdout.strip() == "r1: completed (degraded): report ran without fetch", p.stdout
    doc = h.status("r1")
    assert doc["status"] == "completed" and doc["degraded"] is True
    assert doc["attention"] == "completed (degraded): report ran without fetch"
    (line,) = [ln for ln in h.cli("status").stdout.splitlines() if ln.startswith("r1 ")]
    assert "completed (degraded)" in line and "report ran without fetch" in line
    # A whole completion carries no mark (and its JSON no new key).
    assert h.run("r2", target=FLOORS).returncode == 0
    doc = h.status("r2")
    assert "degraded" not in doc and doc["attention"] == ""


def test_a_degrade_decision_names_the_skipped_phases_at_completion(h: Harness) -> None:
    assert h.run("r1", target=FLOORS, kill="start:enrich").killed
    _lose(h, "r1", "fetch")
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "degrade", reason="report without enrichment").returncode == 0
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.status("r1")["attention"] == "completed (degraded): enrich skipped; report ran without fetch, enrich"


def test_an_interrupted_run_does_not_show_an_earlier_fixed_failure(h: Harness) -> None:
    wf_file = h.copy_workflow()
    text = wf_file.read_text()
    wf_file.write_text(
        text.replace('    trace("start:charge")\n', '    trace("start:charge")\n    raise RuntimeError("a bug")\n')
    )
    p = h.run("r1", target=f"{wf_file}:wf")
    assert p.returncode == 1 and h.status("r1")["error"]["message"] == "a bug", p
    wf_file.write_text(text)  # fixed; resumed, and killed on the way
    assert h.resume("r1", kill="before:charge:inv-1").killed
    doc = h.status("r1")
    assert doc["status"] == "interrupted" and doc["error"] is None, doc["error"]
    assert "a bug" not in h.cli("status", "r1").stdout


def test_the_library_writes_nothing_to_stderr_when_the_application_set_no_logging(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "import sys\n"
        "from phasegate import Engine\n"
        f"sys.path.insert(0, {str(BILLING_FILE.parent)!r})\n"
        "from billing import wf\n"
        f"with Engine({str(tmp_path / 'runs.db')!r}) as eng:\n"
        f"    out = eng.run(wf, 'r1', {{'ledger': {str(tmp_path / 'ledger')!r}, 'invoices': 'many'}})\n"
        "print(out.status)\n"
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=cli.child_env(), timeout=60)
    assert p.stdout.strip() == "failed", p
    assert p.stderr == ""


def test_global_options_may_come_before_the_command(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    p = h.cli("--db", h.target, "status", "r1", "--json", db=False)
    assert p.returncode == 0, p
    assert json.loads(p.stdout)["run_id"] == "r1"
    # Given in both places, the command's own wins.
    p = h.cli("--db", str(h.tmp / "other.db"), "status", "r1", db=True)
    assert p.returncode == 0 and "r1" in p.stdout, p
