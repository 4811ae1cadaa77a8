"""Fan-out torture at CI size (`PHASEGATE_TEST_SOAK=1`: the soak size, tests/support/soak.py): twenty concurrent items (a durable step and a
non-idempotent effect each) by `asyncio.gather`, `ctx.map` and threads,
SIGKILLed at random instants mid-flight, resumed until complete; `verify`
clean after every attempt, no key sent twice, no saved item computed again.
The soak is the same code: `python -m tests.torture --fanout 500`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support import soak
from tests.support.seeds import replay_hint
from tests.torture import fanout

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from pg_schema import pg_schema  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)")


def _assert_all_ok(reports: list[fanout.FanReport], kills: int, seed: int, lines: list[str]) -> None:
    log = "\n".join(lines)
    print(log)
    assert sum(r.kills for r in reports) >= kills, log
    assert {r.mode for r in reports} == set(fanout.MODES), log
    bad = [r for r in reports if not r.ok]
    assert not bad, f"{replay_hint(seed)}\n{log}"


def test_kills_of_concurrent_steps_and_effects_on_sqlite(tmp_path: Path, seed: int) -> None:
    # CI size: every mode killed several times (the seed changes from run to
    # run, so the instants do too); 50 kills with PHASEGATE_TEST_SOAK=1, and
    # the long soak is `python -m tests.torture --fanout 500`.
    kills = soak.size(ci=30, soak=50)
    lines: list[str] = []
    reports = fanout.torture(kills, seed, tmp_path, log=lines.append)
    _assert_all_ok(reports, kills, seed, lines)


def test_kills_of_concurrent_steps_and_effects_on_postgres(tmp_path: Path, seed: int) -> None:
    # CI size: every mode killed at least once on PostgreSQL, where a kill
    # costs about three times what it does on SQLite (99 s for 50 of them
    # was the suite's second-longest test); the soak size with PHASEGATE_TEST_SOAK=1.
    kills = soak.size(ci=24, soak=50)
    lines: list[str] = []
    with pg_schema() as url:
        reports = fanout.torture(kills, seed, tmp_path, db=url, log=lines.append)
    _assert_all_ok(reports, kills, seed, lines)


def test_an_effect_frozen_after_its_intent_mid_fan_out_is_reported_in_doubt_and_never_sent_twice(
    tmp_path: Path,
) -> None:
    """Deterministic where the random kills are not: frozen right after
    send:7's intent committed, then SIGKILLed, with no reconcile hook."""
    import json

    from tests.support.pause import thaw, wait_stopped
    from tests.torture import proc

    db = str(tmp_path / "f.db")
    ledger, trace = tmp_path / "ledger", tmp_path / "trace"
    for mode in ("gather", "threads"):
        rid = f"frozen-{mode}"
        inputs = {"mode": mode, "ledger": str(ledger), "trace": str(trace), "pace": 0.01, "reconcile": ""}
        child = proc.start(
            ["run", fanout.target(mode), "--run-id", rid, "--input", json.dumps(inputs), "--db", db],
            env={"PHASEGATE_PAUSE_AT": "after-intent:send:7"},
        )
        assert wait_stopped(child.pid, child.alive)
        child.kill()
        thaw(child.pid)
        st = json.loads(proc.run(["status", rid, "--json", "--db", db]).stdout)
        doubt = {e["key"] for e in st["effects"] if e["state"] == "in_doubt"}
        assert f"{rid}/fan/send:7" in doubt, st["effects"]
        rep = fanout.FanReport(rid, mode, "")
        resumed = proc.run(["resume", rid, "--db", db])
        assert resumed.returncode == 3, resumed.stdout  # blocked: in doubt, asked, never repeated
        st = json.loads(proc.run(["status", rid, "--json", "--db", db]).stdout)
        assert {b["effect"] for b in st["blocked"]} == doubt
        fanout._answer(rep, db, rid, st, ledger)
        assert proc.run(["resume", rid, "--db", db]).returncode == 0
        assert not rep.violations, rep.violations
    sent = [r["key"] for r in fanout._ledger(ledger)]
    assert len(sent) == len(set(sent)) == 40
