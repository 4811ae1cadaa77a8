"""Decisions and policy changes in the verified history (#29 findings 1-2),
through the command line: an edited, deleted or forged decision row is
integrity damage found by `verify` and by the start sequence before
anything is applied; a decision of a listed action without a second is never
applied, whatever its row says; the policy's whole audit can be read."""

from __future__ import annotations

import json

from engine_harness import Harness, one_line_error


def _blocked_on_tax(h: Harness) -> None:
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3


def _policy(h: Harness, *extra: str, reason: str = "four eyes on risky decisions") -> None:
    p = h.cli("policy", *extra, "--reason", reason)
    assert p.returncode == 0, p


def _integrity(h: Harness) -> list[dict[str, object]]:
    st = h.status("r1")
    return [b for b in st["blocked"] if b["kind"] == "integrity"]


def test_a_proposal_edited_to_pending_is_never_applied_and_verify_names_it(h):
    """Finding 1: one account, one UPDATE, and the worker applied an approval
    the policy said needed a second."""
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve,reset", reason="two")
    p = h.decide("r1", "approve", reason="alone")
    assert p.returncode == 0 and "proposed" in p.stdout, p
    (did,) = [d["id"] for d in h.status("r1")["decisions"] if d["action"] == "approve"]
    h.sql("UPDATE phasegate_decisions SET state = 'pending' WHERE id = ?", (did,))
    charges = len(h.charges())

    assert h.cli("worker", "--once").returncode == 0
    st = h.status("r1")
    assert st["status"] == "blocked", st["status"]
    assert [d["state"] for d in st["decisions"] if d["id"] == did] == ["pending"]  # not applied
    harmed = _integrity(h)
    assert harmed and harmed[0]["what"] == "decision" and harmed[0]["decision"] == did, harmed
    assert len(h.charges()) == charges

    v = h.cli("verify", "--json")
    assert v.returncode == 3, v
    (r,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    assert r["ok"] is False and [d["decision"] for d in r["decisions"]] == [did]
    assert r["decisions"][0]["problem"] == "edited"


def test_a_recomputed_seal_does_not_explain_an_approval_without_a_second(h):
    """A forger who recomputes the plain seal still cannot explain the state:
    policy 1 listed approve, and no second names the decision."""
    from phasegate.history import trail

    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve", reason="two")
    assert h.decide("r1", "approve", reason="alone").returncode == 0
    cols = ["id", "run_id", "action", "phase", "effect_key", "answers", "reason", "operator", "account", "at",
            "state", "expires_at", "seconded_by", "batch_id", "policy_id", "prev_id", "detail_json"]  # fmt: skip
    (row,) = h.sql(f"SELECT {', '.join(cols)} FROM phasegate_decisions WHERE action = 'approve'")
    rec = dict(zip(cols, row, strict=True))
    rec["state"] = "pending"
    h.sql(
        "UPDATE phasegate_decisions SET state = 'pending', seal = ? WHERE id = ?",
        (trail.decision_seal(rec, None), rec["id"]),
    )
    assert h.resume("r1").returncode == 3
    harmed = _integrity(h)
    assert [(b["decision"], b["problem"]) for b in harmed] == [(rec["id"], "unexplained")], harmed
    st = h.status("r1")
    assert st["status"] == "blocked" and [d["state"] for d in st["decisions"]] == ["pending"]  # never applied


def test_a_deleted_second_and_a_forged_proposer_are_found(h):
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve", reason="two")
    assert h.decide("r1", "approve", reason="alone").returncode == 0
    # A "second" row inserted by hand has no seal and is not in the history.
    h.sql(
        "INSERT INTO phasegate_decisions (run_id, action, reason, operator, account, at, state, detail_json)"
        " VALUES ('r1', 'second', 'me too', 'nina', 'nobody', 1, 'applied', '{\"decision\": 1}')"
    )
    h.sql("UPDATE phasegate_decisions SET operator = 'ada', account = 'ada' WHERE action = 'approve'")
    v = h.cli("verify", "--json")
    assert v.returncode == 3
    (r,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    problems = sorted(d["problem"] for d in r["decisions"])
    assert problems == ["edited", "unsealed"], r["decisions"]


def test_a_damaged_history_is_answered_by_a_new_decision(h):
    """The operator's way out: a decision that fits integrity settles the
    damaged decisions void and seals the rest anew; the run then asks again
    about what it was blocked on."""
    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve", reason="two")
    assert h.decide("r1", "approve", reason="alone").returncode == 0
    h.sql("UPDATE phasegate_decisions SET state = 'pending' WHERE action = 'approve'")
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "degrade", reason="the approval was forged: voided").returncode == 0
    assert h.cli("verify").returncode == 0
    assert h.resume("r1").returncode == 3
    st = h.status("r1")
    assert [b["kind"] for b in st["blocked"]] == ["env_mismatch"], st["blocked"]
    assert [d["state"] for d in st["decisions"] if d["action"] == "approve"] == ["void"]


def test_a_reordered_or_deleted_policy_change_is_found_and_decisions_are_refused(h):
    assert h.run("r1").returncode == 0
    _policy(h, "--require-second", "approve,reset", reason="strict")
    _policy(h, "--require-second", "", reason="relaxed")
    _policy(h, "--require-second", "approve,reset", reason="strict again")
    # The newest change deleted: the relaxed one would be in force.
    h.sql("DELETE FROM phasegate_policy WHERE reason = 'strict again'")
    v = h.cli("verify", "--json")
    assert v.returncode == 3
    (store,) = [r for r in json.loads(v.stdout) if r["run_id"] is None]
    assert store["policy"][0]["problem"] == "missing", store
    before = h.dump()
    line = one_line_error(h.decide("r1", "reset", reason="alone"))
    assert "policy's history is damaged" in line
    assert h.dump() == before


def test_the_whole_policy_audit_is_readable_and_decisions_name_their_policy(h):
    """Finding 2: relax, decide alone, restore, then 20 no-op changes: the
    relaxation is still readable, page by page and whole."""
    assert h.run("r1", kill="start:charge").killed
    _policy(h, "--require-second", "reset", reason="original rule")
    _policy(h, "--require-second", "", reason="relaxation")
    assert h.decide("r1", "reset", reason="alone").returncode == 0
    _policy(h, "--require-second", "reset", reason="restored")
    for i in range(20):
        _policy(h, "--proposal-seconds", "86400", reason=f"no-op {i}")
    shown = json.loads(h.cli("policy", "--show", "--json").stdout)
    assert len(shown["history"]) == 20 and shown["next_before"] is not None
    reasons = [p["reason"] for p in shown["history"]]
    page = shown
    while page["next_before"] is not None:
        page = json.loads(h.cli("policy", "--json", "--before", str(page["next_before"])).stdout)
        reasons += [p["reason"] for p in page["history"]]
    assert reasons[-3:] == ["restored", "relaxation", "original rule"]
    whole = json.loads(h.cli("policy", "--show", "--all", "--json").stdout)
    assert [p["reason"] for p in whole["history"]] == reasons and whole["next_before"] is None
    text = h.cli("policy", "--show", "--all").stdout
    assert "relaxation" in text and "original rule" in text
    paged = h.cli("policy", "--show").stdout
    assert "relaxation" not in paged and "--before" in paged
    # The reset was made under the relaxed policy, and says so.
    relaxed = next(p["id"] for p in whole["history"] if p["reason"] == "relaxation")
    (reset,) = [d for d in h.status("r1")["decisions"] if d["action"] == "reset"]
    assert reset["policy_id"] == relaxed


def _wind_back_to_4(h: Harness) -> None:
    """The store as schema 4 left it: no decision or policy seals, links or heads."""
    h.sql("UPDATE phasegate_meta SET value = '4' WHERE key = 'schema_version'")
    h.sql("DELETE FROM phasegate_meta WHERE key IN ('policy_last', 'policy_count')")
    h.sql("UPDATE phasegate_decisions SET seal = NULL, prev_id = NULL, policy_id = NULL")
    h.sql("UPDATE phasegate_policy SET seal = NULL, prev_id = NULL")
    h.sql("UPDATE phasegate_runs SET decisions_last = NULL, decisions_count = 0")


def test_an_upgrade_seals_what_exists_and_still_finds_an_unexplained_state(h):
    """Schema 5 seals a version 4 store's decisions and policy as they are
    (it cannot know better), but an approval of a listed action pending
    without a second is still found after the upgrade, and never applied."""
    from phasegate.store.schema import SCHEMA_VERSION

    _blocked_on_tax(h)
    _policy(h, "--require-second", "approve", reason="two")
    assert h.decide("r1", "approve", reason="alone").returncode == 0
    assert h.run("r2").returncode == 0
    _wind_back_to_4(h)
    h.sql("UPDATE phasegate_decisions SET state = 'pending' WHERE action = 'approve'")  # done before the upgrade
    v = h.cli("verify", "--json")
    assert h.sql("SELECT value FROM phasegate_meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert v.returncode == 3, v
    reports = {r["run_id"]: r for r in json.loads(v.stdout)}
    assert reports["r2"]["ok"] is True and not any(r["run_id"] is None for r in reports.values())
    assert [d["problem"] for d in reports["r1"]["decisions"]] == ["unexplained"]
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "blocked"
    assert [d["state"] for d in h.status("r1")["decisions"]] == ["pending"]


def test_an_upgraded_clean_store_verifies_and_its_seconds_still_work(h):
    _blocked_on_tax(h)
    _policy(h, "--require-second", "reset", reason="two")
    assert h.decide("r1", "approve", reason="fine").returncode == 0
    _wind_back_to_4(h)
    assert h.cli("verify").returncode == 0
    assert h.resume("r1").returncode == 0
    assert h.cli("verify").returncode == 0
