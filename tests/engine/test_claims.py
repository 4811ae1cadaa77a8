"""Claims (#13 part 3) through the command line: who is looking at a run, a
decision by someone else needing --force, expiry, release, takeover, and all
of it kept in the run's claim audit."""

from __future__ import annotations

import time

from phasegate.store.schema import SCHEMA_VERSION

ADA = {"PHASEGATE_OPERATOR": "ada"}
BOB = {"PHASEGATE_OPERATOR": "bob"}


def _completed(h):
    p = h.run("r1")
    assert p.returncode == 0, p
    return h


def _one_line(p) -> str:
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def test_a_claimed_run_needs_force_from_someone_else(h):
    _completed(h)
    p = h.cli("claim", "r1", env=ADA)
    assert p.returncode == 0, p
    assert "claimed by ada" in p.stdout
    claim = h.status("r1")["claim"]
    assert claim["operator"] == "ada" and claim["account"] and claim["expires_at"] > claim["claimed_at"]

    before = h.dump()
    p = h.decide("r1", "rewind", "--phase", "price", env=BOB)
    assert p.returncode == 4, p
    line = _one_line(p)
    assert "claimed by ada" in line and "--force" in line
    assert h.dump() == before  # nothing recorded

    p = h.decide("r1", "rewind", "--phase", "price", "--force", env=BOB)
    assert p.returncode == 0, p
    st = h.status("r1")
    assert [(d["action"], d["operator"], d["state"]) for d in st["decisions"]] == [("rewind", "bob", "pending")]
    assert st["claim"]["operator"] == "ada"  # a decision does not end the claim

    # The claimer decides without --force.
    assert h.cli("claim", "r1", "--release", env=BOB).returncode == 4
    assert h.resume("r1").returncode == 0
    assert h.decide("r1", "rewind", "--phase", "charge", env=ADA).returncode == 0


def test_a_claim_expires_and_the_audit_keeps_it(h):
    _completed(h)
    # The shortest claim there is (1 s: bounds.WAIT_SECONDS), waited out.
    p = h.cli("claim", "r1", env={**ADA, "PHASEGATE_CLAIM_SECONDS": "1"})
    assert p.returncode == 0, p
    time.sleep(1.1)  # sleep: the claim the test made must lapse, and the store's clock is the real one
    st = h.status("r1")
    assert st["claim"] is None
    assert [(c["kind"], c["operator"]) for c in st["claims"]] == [("claim", "ada"), ("expiry", "ada")]
    # Nobody holds it now: bob decides without --force.
    assert h.decide("r1", "rewind", "--phase", "price", env=BOB).returncode == 0
    text = h.cli("status", "r1").stdout
    assert "claim by ada" in text and "expiry by ada" in text and "claimed   by" not in text


def test_release_renew_and_takeover_are_audited(h):
    _completed(h)
    assert h.cli("claim", "r1", env=ADA).returncode == 0
    assert h.cli("claim", "r1", env=ADA).returncode == 0  # a renewal, by the claimer
    before = h.dump()
    p = h.cli("claim", "r1", env=BOB)
    assert p.returncode == 4 and "claimed by ada" in _one_line(p)
    assert h.dump() == before
    assert h.cli("claim", "r1", "--force", env=BOB).returncode == 0
    assert h.status("r1")["claim"]["operator"] == "bob"
    p = h.cli("claim", "r1", "--release", env=BOB)
    assert p.returncode == 0 and "released" in p.stdout
    st = h.status("r1")
    assert st["claim"] is None
    assert [(c["kind"], c["operator"]) for c in st["claims"]] == [
        ("claim", "ada"),
        ("release", "ada"),
        ("claim", "ada"),
        ("takeover", "bob"),
        ("claim", "bob"),
        ("release", "bob"),
    ]
    p = h.cli("claim", "r1", "--release", env=BOB)
    assert p.returncode == 2 and "not claimed" in _one_line(p)


def test_bad_claim_input_is_one_line_and_changes_nothing(h):
    _completed(h)
    before = h.dump()
    for args, env in (
        (("claim", "r1"), {"PHASEGATE_CLAIM_SECONDS": "soon"}),
        (("claim", "r1"), {"PHASEGATE_CLAIM_SECONDS": "-5"}),
        (("claim", "nope"), {}),
    ):
        p = h.cli(*args, env=env)
        assert p.returncode == 2, (args, p)
        _one_line(p)
    assert h.dump() == before


def test_a_version_3_store_is_upgraded_for_claims_and_proposals(h):
    """A store written before claims (schema 3) gains the tables and columns
    the first time it is opened for writing, and keeps its decisions."""
    _completed(h)
    assert h.decide("r1", "rewind", "--phase", "price").returncode == 0
    # Wound back to version 3: what version 4 added is taken away again.
    h.sql("DROP TABLE phasegate_claims")
    h.sql("DROP TABLE phasegate_policy")
    for column in ("account", "expires_at", "seconded_by"):
        h.sql(f"ALTER TABLE phasegate_decisions DROP COLUMN {column}")
    h.sql("UPDATE phasegate_meta SET value = '3' WHERE key = 'schema_version'")
    assert h.cli("claim", "r1", env=ADA).returncode == 0
    assert h.sql("SELECT value FROM phasegate_meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    st = h.status("r1")
    assert st["claim"]["operator"] == "ada"
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [("rewind", "pending")]
    assert "account" not in st["decisions"][0]  # recorded before accounts were


def test_a_hostile_operator_name_is_shown_escaped(h):
    _completed(h)
    evil = {"PHASEGATE_OPERATOR": "ada\x1b]52;c;ZXZpbA==\x07\u202e"}
    assert h.cli("claim", "r1", env=evil).returncode == 0
    p = h.decide("r1", "rewind", "--phase", "price", env=BOB)
    assert p.returncode == 4
    for out in (p.stderr, h.cli("status", "r1").stdout, h.cli("status", "r1", "--json").stdout):
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert h.status("r1")["claim"]["operator"] == evil["PHASEGATE_OPERATOR"]  # stored as given


def _line(out: str, run_id: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith(run_id + " ")]
    assert len(lines) == 1, out
    return lines[0]


def test_the_runs_list_says_who_claimed_a_run(h):
    """Plain `phasegate status` (the list): "claimed by ada, ..." first in the
    run's reason, as the console's runs list says it; an expired or released
    claim is not shown. On SQLite the list is read without the engine
    (quickstatus.py); with a setting to check, the engine lists it: the same
    bytes either way."""
    _completed(h)
    assert h.run("r2").returncode == 0
    assert h.cli("claim", "r1", env=ADA).returncode == 0
    assert h.cli("claim", "r2", env={**BOB, "PHASEGATE_CLAIM_SECONDS": "1"}).returncode == 0
    time.sleep(1.1)  # sleep: the shortest claim there is, waited out (the store's clock is the real one)
    quick = h.cli("status")
    full = h.cli("status", env={"PHASEGATE_LEASE_SECONDS": "30"})
    assert quick.returncode == full.returncode == 0
    assert quick.stdout == full.stdout
    assert "claimed by ada, just now" in _line(quick.stdout, "r1")
    assert "claimed" not in _line(quick.stdout, "r2")
    assert h.cli("claim", "r1", "--release", env=ADA).returncode == 0
    assert "claimed" not in h.cli("status").stdout


def test_the_runs_list_escapes_and_cuts_a_claimers_name(h):
    _completed(h)
    evil = "ada\x1b]52;c;ZXZpbA==\x07\u202e" + "x" * 200
    assert h.cli("claim", "r1", env={"PHASEGATE_OPERATOR": evil}).returncode == 0
    quick = h.cli("status")
    full = h.cli("status", env={"PHASEGATE_LEASE_SECONDS": "30"})
    assert quick.stdout == full.stdout
    line = _line(quick.stdout, "r1")
    assert "\x1b" not in line and "\u202e" not in line and "\x07" not in line
    said = line[line.index("claimed by ") :]
    assert said.startswith("claimed by ada\\x1b]52;c;") and said.endswith("..., just now"), said
    assert len(said) <= 80


def test_a_dry_run_meets_a_claim_as_the_decision_would(h):
    """`decide --dry-run` on a run someone else claimed: the line and exit
    code 4 the decision itself gives without --force; with --force, what it
    would override. Nothing recorded either way."""
    _completed(h)
    assert h.cli("claim", "r1", env=ADA).returncode == 0
    before = h.dump()
    dry = h.decide("r1", "rewind", "--phase", "price", "--dry-run", env=BOB)
    real = h.decide("r1", "rewind", "--phase", "price", env=BOB)
    assert dry.returncode == real.returncode == 4, (dry, real)
    assert _one_line(dry) == _one_line(real)
    assert "claimed by ada" in _one_line(dry) and "--force" in _one_line(dry)
    forced = h.decide("r1", "rewind", "--phase", "price", "--dry-run", "--force", env=BOB)
    assert forced.returncode == 0, forced
    assert "re-runs: price" in forced.stdout
    assert forced.stdout.splitlines()[-1] == "  --force overrides: claimed by ada, just now"
    own = h.decide("r1", "rewind", "--phase", "price", "--dry-run", env=ADA)
    assert own.returncode == 0 and "overrides" not in own.stdout, own
    assert h.dump() == before
    # A decision that does not fit is refused for that first, as the decision is.
    dry = h.decide("r1", "rewind", "--phase", "nope", "--dry-run", env=BOB)
    real = h.decide("r1", "rewind", "--phase", "nope", env=BOB)
    assert dry.returncode == real.returncode == 2 and _one_line(dry) == _one_line(real)
