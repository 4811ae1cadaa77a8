"""`phasegate mcp` as a subprocess, as an assistant's host starts it (issue
39): over stdio on the demo store, where every read tool agrees with the
command line's JSON; over stdio on both backends, a proposal that waits for
a person; over streamable HTTP behind its bearer token; and, without the
`mcp` extra, one line naming it."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from engine_harness import Harness, one_line_error
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_client import ok, session

from phasegate.sample_runs._spare import kill_if_same
from tests.support import cli
from tests.support.waiting import until

pytestmark = pytest.mark.xdist_group("mcp-demo")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("mcp-demo")
    db = folder / "demo.db"
    proc = cli.run(["demo", "--no-console", "--db", str(db)], env={"PHASEGATE_DEMO_LIVE_SECONDS": "90"}, timeout=240)
    try:
        assert proc.returncode == 0, proc.stderr[-2000:]
        # The demo's live run is stopped, so that nothing moves between two reads of the store.
        pid_file = folder / "demo.work" / "live-run.pid"
        pid, started = pid_file.read_text().split("\n")[:2]
        kill_if_same(int(pid), started)
        until(
            lambda: _cli_json(db, "status", "pipeline-events-live")["status"] == "interrupted", "the live run stopped"
        )
        # A run whose lease is still in its term is not prunable yet: wait for every killed run's to lapse.
        until(lambda: _leases_lapsed(db), "every lease of the demo's killed runs to lapse", timeout=120)
        yield db
    finally:
        pid_file = folder / "demo.work" / "live-run.pid"
        if pid_file.exists():
            pid, started = pid_file.read_text().split("\n")[:2]
            kill_if_same(int(pid), started)


def _leases_lapsed(db: Path) -> bool:
    now = datetime.now(UTC)
    for run in _cli_json(db, "status"):
        lease = run.get("lease")
        if lease and datetime.fromisoformat(lease["expires_at"].replace("Z", "+00:00")) >= now:
            return False
    return True


def _cli(db: Path | str, *args: str) -> cli.Result:
    return cli.run([*args, "--db", str(db)], mode="fork")


def _cli_json(db: Path | str, *args: str) -> Any:
    p = _cli(db, *args, "--json")
    assert p.returncode in (0, 3), p
    return json.loads(p.stdout)


def test_over_stdio_the_read_tools_agree_with_the_command_line_on_the_demo_store(demo: Path) -> None:
    db = str(demo)

    async def work(c: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": await c.list_tools()}
        out["list"] = ok(await c.call_tool("list_runs", {"limit": 200}))
        out["causes"] = ok(await c.call_tool("causes", {}))
        out["status"] = {r["run_id"]: ok(await c.call_tool("run_status", {"run_id": r["run_id"]}))
                         for r in out["list"]["runs"]}  # fmt: skip
        out["preview"] = ok(await c.call_tool("preview", {"run_id": "billing-hooli-2026-11", "action": "approve"}))
        out["verify"] = ok(await c.call_tool("verify", {}))
        return out

    got = session(db, work, stdio=True)
    annotations = {t.name: t.annotations.read_only_hint for t in got["tools"].tools if t.annotations}
    assert annotations == {"list_runs": True, "run_status": True, "causes": True, "preview": True,
                           "verify": True, "propose": False}  # fmt: skip

    # The list: the order and the reasons of `phasegate status` (the console's order).
    lines = _cli(db, "status").stdout.splitlines()
    listed = got["list"]["runs"]
    assert [r["run_id"] for r in listed] == [line.split()[0] for line in lines]
    for r, line in zip(listed, lines, strict=True):
        assert line.rstrip().endswith(r["reason"].rstrip()), (r, line)
        assert r["status"] == got["status"][r["run_id"]]["status"]
    assert got["list"]["total"] == len(lines) and got["list"]["next"] is None

    assert got["causes"]["causes"] == _cli_json(db, "status", "--by-cause")
    assert got["causes"]["causes"], "the demo store has runs to triage"
    for rid, st in got["status"].items():
        assert st == _cli_json(db, "status", rid), rid

    dry = _cli(db, "decide", "billing-hooli-2026-11", "approve", "--dry-run", "--reason", "look").stdout
    pv = got["preview"]
    assert dry.splitlines()[0] == pv["summary"]
    assert pv["env_hash"] and f"env hash: {pv['env_hash']}" in dry
    for part in pv["accepts"]:
        assert part in dry

    # Last: `phasegate verify` records what it finds on stopped runs; the tool recorded nothing.
    assert got["verify"]["ok"] is False
    assert got["verify"]["reports"] == _cli_json(demo, "verify")


def test_over_stdio_a_proposal_waits_for_a_person(h: Harness) -> None:
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3

    async def work(c: Client) -> Any:
        return ok(await c.call_tool("propose", {"run_id": "r1", "action": "approve", "reason": "rates as planned"}))

    got = session(h.target, work, stdio=True, name="zed")
    assert (got["proposer"], got["state"]) == ("mcp:zed", "proposed")
    assert h.cli("worker", "--once").returncode == 0
    st = h.status("r1")
    assert st["status"] == "blocked" and st["decisions"][0]["state"] == "proposed"
    assert st["decisions"][0]["assistant"] is True
    p = h.decide("r1", "second", "--decision", str(got["decision"]), "--operator", "mcp:zed", reason="me")
    one_line_error(p, 2)
    assert h.decide("r1", "second", "--decision", str(got["decision"]), reason="agreed").returncode == 0
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "completed"


def test_over_http_the_bearer_token_is_required(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    child = cli.popen(["mcp", "--http", "127.0.0.1:0", "--db", h.target], env=h.env)
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/mcp) \(send the header Authorization: Bearer (\S+)\)", line)
        assert m, line
        url, token = m.groups()

        async def without() -> int:
            async with httpx2.AsyncClient() as plain:
                r = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                return r.status_code

        assert asyncio.run(without()) == 401

        async def with_token() -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                return ok(await c.call_tool("run_status", {"run_id": "r1"}))

        assert asyncio.run(with_token()) == h.status("r1")
    finally:
        child.terminate()
        child.communicate(timeout=30)


def test_http_is_loopback_unless_allowed(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    p = h.cli("mcp", "--http", "0.0.0.0:0", real=True)
    assert "not a loopback address; add --allow-remote" in one_line_error(p, 2)


def test_without_the_extra_it_is_one_line_naming_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from phasegate.cli.main import main\n"
        f"raise SystemExit(main(['mcp', '--db', {str(tmp_path / 'x.db')!r}]))"
    )
    p = subprocess.run([sys.executable, "-c", code], env=cli.child_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs the mcp extra" in lines[0] and "pip install 'phasegate[mcp]'" in lines[0]
