"""Issue #29, finding 6: every duration and count a person configures (a
flag, a variable, the policy) is checked against a sane range, and a stored
value out of range (an older store accepted it, or a row was edited) is
shown, never a traceback, never a run hidden."""

from __future__ import annotations

import json

import pytest
from engine_harness import Harness, one_line_error

from tests.support.older import policy_as_an_older_store_had


def _blocked(h: Harness) -> None:
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3


@pytest.mark.parametrize(
    "args,env",
    [
        (["policy", "--require-second", "approve", "--proposal-seconds", "3e11", "--reason", "x"], {}),
        (["policy", "--proposal-seconds", "1e300", "--reason", "x"], {}),
        (["policy", "--proposal-seconds", "1e-300", "--reason", "x"], {}),
        (["policy", "--proposal-seconds", "nan", "--reason", "x"], {}),
        (["claim", "r1"], {"PHASEGATE_CLAIM_SECONDS": "1e12"}),
        (["claim", "r1"], {"PHASEGATE_CLAIM_SECONDS": "nan"}),
        (["claim", "r1"], {"PHASEGATE_CLAIM_SECONDS": "0.5"}),
        (["worker", "--once"], {"PHASEGATE_LEASE_SECONDS": "1e12"}),
        (["worker", "--once"], {"PHASEGATE_EFFECT_FLUSH_MS": "1e300"}),
        (["prune", "--apply"], {"PHASEGATE_RETENTION_DAYS": "1e300"}),
        (["worker", "--once", "--poll", "1e300"], {}),
        (["worker", "--once", "--jobs", "100000"], {}),
        (["watch", "--once", "--exec", "true", "--timeout", "inf"], {}),
        (["watch", "--once", "--exec", "true", "--retries", "1000000000"], {}),
        (["decide", "r1", "second", "--decision", "99999999999999999999", "--reason", "x"], {}),
    ],
    ids=[
        "proposal-3e11",
        "proposal-1e300",
        "proposal-tiny",
        "proposal-nan",
        "claim-1e12",
        "claim-nan",
        "claim-half-second",
        "lease-1e12",
        "flush-1e300",
        "retention-1e300",
        "poll-1e300",
        "jobs-100000",
        "timeout-inf",
        "retries-1e9",
        "decision-past-int64",
    ],
)
def test_a_number_out_of_its_range_is_one_line_and_changes_nothing(h, args, env):
    _blocked(h)
    before = h.dump()
    p = h.cli(*args, env=env)
    line = one_line_error(p)
    assert "from" in line and " to " in line, line  # the message says the range
    assert h.dump() == before


def test_serve_refuses_an_idle_timeout_out_of_range(h):
    assert h.run("r1").returncode == 0
    for value in ("nan", "inf", "0.5", "3e11"):
        p = h.cli("serve", "--port", "0", "--idle-timeout", value)
        assert "--idle-timeout" in one_line_error(p), value


def test_a_stored_time_out_of_range_is_shown_and_hides_no_run(h):
    """An older store accepted `--proposal-seconds 3e11`: a proposal made
    under it lapses in the year 11533, which no calendar can write. Every view
    of the run still answers, and says what is stored."""
    _blocked(h)
    assert h.run("r2").returncode == 0
    assert h.cli("policy", "--require-second", "approve", "--reason", "four eyes").returncode == 0
    policy_as_an_older_store_had(h.target, proposal_seconds=3e11)
    p = h.decide("r1", "approve", reason="v2 is right")
    assert p.returncode == 0 and "proposed" in p.stdout, p
    # And a claim edited to lapse past any calendar.
    assert h.cli("claim", "r2").returncode == 0
    h.sql("UPDATE phasegate_claims SET expires_at = 1e300")

    for args in (
        ["status", "r1"],
        ["status", "r2"],
        ["status"],
        ["status", "--json"],
        ["status", "--by-cause"],
        ["status", "--by-cause", "--json"],
        ["policy", "--show"],
        ["policy", "--json"],
        ["decide", "r1", "reset", "--dry-run", "--reason", "x"],
    ):
        p = h.cli(*args)
        assert p.returncode == 0 and not p.traceback, (args, p)
    st = h.status("r1")
    assert "out of range (3" in st["decisions"][0]["expires_at"]
    assert "out of range (1e+300" in h.status("r2")["claim"]["expires_at"]
    listed = json.loads(h.cli("status", "--json").stdout)
    assert {r["run_id"] for r in listed} >= {"r1", "r2"}
    assert "lapse after 3e+11 s" in h.cli("policy", "--show").stdout
    # A decision on the run is recorded as on any other run.
    p = h.decide("r1", "reset", reason="start over")
    assert p.returncode == 0, p
    assert h.status("r1")["decisions"][-1]["action"] == "reset"
