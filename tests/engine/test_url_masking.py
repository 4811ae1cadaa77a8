"""A PostgreSQL URL's password never reaches a message (#16, finding 11):
whatever fails (no server, no database, a malformed URL, a password holding
"@", a password given as a query parameter), the one line on stderr and the
log show the URL with `***` in its place."""

from __future__ import annotations

import json

import pytest
from engine_harness import WORKFLOWS, Harness, one_line_error
from pg_schema import PG, pg_schema

SECRET = "hunter2x"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://u:{SECRET}@127.0.0.1:1/test",
        f"postgresql://u:{SECRET}@127.0.0.1:5432/no_such_db_16",
        f"postgresql://u:{SECRET}@[::1:5432/test",
        f"postgresql://u:{SECRET}@127.0.0.1:99999/test",
        f"postgresql://u:hun@{SECRET}@127.0.0.1:1/test",
        f"postgres://u:{SECRET}@nosuchhost.invalid/test",
        f"postgresql://u@127.0.0.1:1/test?password={SECRET}",
        f"postgresql://u:{SECRET.replace('x', '%78')}@127.0.0.1:1/test",
    ],
    ids=["refused", "no-database", "malformed", "bad-port", "at-sign", "no-host", "query", "percent-encoded"],
)
@pytest.mark.parametrize(
    "command", [["status"], ["verify"], ["worker", "--once"], ["decide", "r1", "reset", "--reason", "x"]]
)
def test_a_password_is_never_printed(tmp_path, url: str, command: list[str]) -> None:
    h = Harness(tmp_path)
    p = h.cli(*command, "--db", url, db=False)
    line = one_line_error(p)
    assert "hunter" not in p.stderr and "2x" not in p.stderr.replace("***", ""), p.stderr
    assert ":***@" in line or "password=***" in line, line


def test_logs_and_alerts_of_a_live_store_mask_the_password(tmp_path) -> None:
    with pg_schema() as url:
        secret_url = url.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@", 1)
        assert secret_url != url and PG.startswith("postgresql://postgres@")
        h = Harness(tmp_path, pg_url=secret_url)
        (tmp_path / "world").write_text("w")
        (tmp_path / "fail").write_text("boom")
        inputs = json.dumps({"world": str(tmp_path / "world"), "fail": str(tmp_path / "fail")})
        assert h.cli("run", f"{WORKFLOWS / 'hostile.py'}:wf", "--run-id", "r1", "--input", inputs).returncode == 1
        events = tmp_path / "events.jsonl"
        p = h.cli("-v", "watch", "--once", "--no-events", "--exec", f"cat >> {events}", real=True)
        assert p.returncode == 0, p
        assert "announced r1" in p.stderr
        event = json.loads(events.read_text())
        assert event["console"].startswith("phasegate console --db 'postgresql://postgres:***@"), event["console"]
        assert SECRET not in p.stdout + p.stderr + events.read_text()
