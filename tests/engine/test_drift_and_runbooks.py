"""The code behind a drift (`status --diff`), runbooks stored with the run,
and the schema step that added their tables."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from engine_harness import Harness

from phasegate import Engine, StoreError, Workflow, WorkflowError
from phasegate.store.schema import SCHEMA_VERSION


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_status_diff_shows_the_code_behind_a_drift(h: Harness) -> None:
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    # The new code carries a terminal escape sequence in a comment: it must be shown, not obeyed.
    _edit(wf_file, '"amount": 100 + i}', '"amount": 1000 + i}')
    _edit(wf_file, '    kill_point("start:load")', '    kill_point("start:load")  # \x1b[2J\x1b[31mboom')
    assert h.resume("r1").returncode == 3

    p = h.cli("status", "r1", "--diff")
    assert p.returncode == 0, p
    out = p.stdout
    assert "code of load changed; ran the old code: load" in out
    assert "\x1b" not in out and "\\x1b[2J" in out
    old = next(line for line in out.splitlines() if line[12:14] == "- " and "100 + i" in line)
    new = next(line for line in out.splitlines() if line[12:14] == "+ " and "1000 + i" in line)
    # Each side keeps its own line numbers (the old line, then the new one).
    assert old.split()[0].isdigit() and new.split()[0].isdigit()
    assert any(line.startswith("@@ -") for line in out.splitlines())

    doc = h.status("r1")
    (d,) = doc["code_diffs"]
    assert d["phase"] == "load" and d["saved"] != d["current"] and not d["missing"]
    assert any("1000 + i" in line for line in d["diff"])
    # Stored once per fingerprint: the old and the new code of load, and the
    # other phases' code, each one row.
    hashes = [r[0] for r in h.sql("SELECT code_hash FROM phasegate_sources")]
    assert len(hashes) == len(set(hashes)) and {d["saved"], d["current"]} <= set(hashes)


def test_status_diff_on_a_run_without_drift(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    p = h.cli("status", "r1", "--diff")
    assert p.returncode == 0 and "no code change blocks this run" in p.stdout
    assert "code_diffs" not in h.status("r1")  # only when there is one: the 0.1 JSON is unchanged


def test_runbooks_are_stored_with_the_run_and_shown_by_status(h: Harness) -> None:
    wf_file = h.copy_workflow()
    _edit(
        wf_file,
        'wf = Workflow("test-billing")',
        'wf = Workflow("test-billing", runbooks={"env_mismatch": "see \\x1b[31m https://wiki.example/tax",'
        ' "env_mismatch:load": "load-specific"})',
    )
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3
    wf_file.unlink()  # status needs no code
    st = h.status("r1")
    assert st["runbooks"] == [
        {"kind": "env_mismatch", "phase": "price", "runbook": "see \x1b[31m https://wiki.example/tax"}
    ]
    p = h.cli("status", "r1")
    assert "runbook   env_mismatch in price: see \\x1b[31m https://wiki.example/tax" in p.stdout
    assert "\x1b" not in p.stdout


def test_runbook_keys_are_checked() -> None:
    with pytest.raises(WorkflowError, match="before ':'"):
        Workflow("w", runbooks={"blocked:load": "x"})
    with pytest.raises(WorkflowError, match="non-empty"):
        Workflow("w", runbooks={"failed": ""})
    wf = Workflow("w", runbooks={"nosuchphase": "x"})

    @wf.phase()
    def load(ctx: object) -> int:
        return 1

    with pytest.raises(WorkflowError, match="names no phase and no kind"):
        wf.describe()


def test_a_version_1_store_is_upgraded_and_an_old_shape_still_reads(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    assert h.run("r1").returncode == 0
    con = sqlite3.connect(h.db)
    con.execute("DROP TABLE phasegate_sources")
    con.execute("DROP TABLE phasegate_alerts")
    con.execute("UPDATE phasegate_meta SET value='1' WHERE key='schema_version'")
    # A version-1 shape: phases without runbooks.
    shape = json.loads(con.execute("SELECT shape_json FROM phasegate_runs").fetchone()[0])
    assert all("runbooks" not in p for p in shape)
    con.commit()
    con.close()
    # read-only: refused with the command that upgrades; nothing changes
    with pytest.raises(StoreError, match="phasegate verify --db"):
        Engine(h.db, create=False, readonly=True)
    assert h.sql("SELECT value FROM phasegate_meta WHERE key='schema_version'") == [("1",)]
    assert h.cli("status", "r1").returncode == 0  # a writable open upgrades
    assert h.sql("SELECT value FROM phasegate_meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    with Engine(h.db, create=False, readonly=True) as eng:
        assert eng.status("r1").runbooks == () and eng.status("r1").code_diffs == ()
    assert h.sql("SELECT count(*) FROM phasegate_alerts") == [(0,)]
