"""#16 finding 15: LISTEN is per schema. A console following one schema's
store is not woken by writes to another schema's store on the same database."""

from __future__ import annotations

import json
import time
from pathlib import Path

from phasegate import Engine
from tests.conftest import BILLING, cli
from tests.engine.pg_schema import pg_schema


def _changed_within(feed, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if feed.changed():
            return True
        time.sleep(0.05)  # sleep: `seconds` pass in full when nothing changes, which is what one caller shows
    return False


def test_a_write_to_another_schema_does_not_wake_this_one(pg_url: str, tmp_path: Path) -> None:
    inputs = json.dumps({"ledger": str(tmp_path / "ledger"), "idempotent": True})
    with pg_schema() as other:
        Engine(other).close()
        eng = Engine(pg_url)
        feed = eng.data_version()
        try:
            assert feed.changed() is False
            p = cli("run", BILLING, "--run-id", "elsewhere", "--input", inputs, "--db", other)
            assert p.returncode == 0, p
            assert not _changed_within(feed, 1.5)  # nothing happened here
            p = cli("run", BILLING, "--run-id", "here", "--input", inputs, "--db", pg_url)
            assert p.returncode == 0, p
            assert _changed_within(feed, 10)
        finally:
            feed.close()
            eng.close()
