"""A store written by phasegate 0.1 (format 1) is upgraded on its first
writable open, in one transaction; verified; and its in-doubt billing run is
resumed to completion by an operator, as after a real upgrade (#11)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from phasegate.store.schema import SCHEMA_VERSION
from tests.support import cli

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store_0_1" / "demo.db"
#: Where the 0.1 demo kept its work files; its runs' inputs name this path.
WORK = Path("/tmp/demo01/demo.work")
MARK = Path("/tmp/demo01/.phasegate-test")
RUN = "billing-globex-2026-11"

pytestmark = pytest.mark.sqlite_only


def _version(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("SELECT value FROM phasegate_meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        con.close()


@pytest.fixture
def workdir():
    if WORK.parent.exists() and not MARK.exists():
        pytest.skip("/tmp/demo01 exists and is not this test's")
    shutil.rmtree(WORK.parent, ignore_errors=True)
    WORK.mkdir(parents=True)
    MARK.write_text("made by tests/engine/test_format_0_1.py\n")
    yield WORK
    shutil.rmtree(WORK.parent, ignore_errors=True)


def test_a_read_only_open_names_the_command_that_upgrades(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    shutil.copy(FIXTURE, db)
    before = db.read_bytes()
    from phasegate import Engine, StoreError

    with pytest.raises(StoreError, match="upgrade it once with `phasegate verify --db "):
        Engine(db, create=False, readonly=True)
    assert db.read_bytes() == before


def test_the_0_1_store_is_upgraded_verified_and_resumed(tmp_path: Path, workdir: Path) -> None:
    db = tmp_path / "demo.db"
    shutil.copy(FIXTURE, db)
    assert _version(db) == "1"
    p = cli.run(["verify", "--json", "--db", str(db)])
    assert _version(db) == str(SCHEMA_VERSION)
    reports = {r["run_id"]: r for r in json.loads(p.stdout)}
    # the demo damaged one run's checkpoint on purpose; no effect record is damaged
    assert [rid for rid, r in reports.items() if not r["ok"]] == ["research-heat-pumps"]
    assert not any("effects" in r for r in reports.values())

    from phasegate.sample_runs import billing

    billing.prepare(workdir / RUN, customer="globex", idempotent=False)
    p = cli.run(["resume", RUN, "--db", str(db)])
    assert p.returncode == 3 and "in_doubt_effect" in p.stdout, (p.stdout, p.stderr)
    key = f"{RUN}/charge/charge:INV-1003"
    # the gateway made anew has no charge under the key: it never happened here
    assert (
        cli.run(
            ["decide", RUN, "retry_effect", "--effect", key, "--reason", "not in the ledger", "--db", str(db)]
        ).returncode
        == 0
    )
    p = cli.run(["resume", RUN, "--db", str(db)])
    if p.returncode == 3 and "env_mismatch" in p.stdout:
        # this code is not 0.1's: the operator accepts the new code
        assert cli.run(["decide", RUN, "approve", "--reason", "upgraded phasegate", "--db", str(db)]).returncode == 0
        p = cli.run(["resume", RUN, "--db", str(db)])
    assert p.returncode == 0, (p.stdout, p.stderr)
    st = json.loads(cli.run(["status", RUN, "--json", "--db", str(db)]).stdout)
    assert st["status"] == "completed"
    ledger = [json.loads(x) for x in (workdir / RUN / "gateway" / "ledger.jsonl").read_text().splitlines() if x]
    keys = [r["key"] for r in ledger]
    assert len(keys) == len(set(keys)) and key in keys
