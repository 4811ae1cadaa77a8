"""`status --json` is a contract: on the committed 0.1 demo store, at a
frozen time, every run's JSON is byte for byte what it was when the store
was written (tests/fixtures/store_0_1), apart from fields added since, each
named here: additive only, never a changed or removed one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from phasegate import Engine

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store_0_1"
#: An hour after the fixture's last write: every lease in it has expired.
NOW = 1796123133.9848375 + 3600

pytestmark = pytest.mark.sqlite_only


def test_status_json_of_every_demo_run_is_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    shutil.copy(FIXTURE / "demo.db", db)
    expected = json.loads((FIXTURE / "status.json").read_text())
    # Opened writable: the first open upgrades the 0.1 store to the current
    # format in one transaction, and the JSON must not notice.
    with Engine(db, create=False, clock=lambda: NOW) as eng:
        assert sorted(eng.run_ids()) == sorted(expected)
        for run_id, text in expected.items():
            got = eng.status(run_id).to_json()
            # Added in format 4 (#13): who claimed the run; nobody in a 0.1 store.
            assert got.pop("claim") is None, run_id
            # Added with #42: the running phase's last-known progress; none in a 0.1 store.
            assert got.pop("progress") is None, run_id
            for eff in got["effects"]:
                # Added with #28: what a done effect returned (or its hash, when large).
                assert ("result" in eff or "result_hash" in eff) == (eff["state"] == "done"), run_id
                eff.pop("result", None), eff.pop("result_hash", None)
            assert json.dumps(got, indent=2, ensure_ascii=False) == text, run_id
