"""Many runs at once (#13): the runs that need attention grouped by cause
(`status --by-cause`), and one decision for every run of a cause
(`decide --cause`), recorded in one transaction or not at all."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engine_harness import BILLING_FILE

from phasegate.store.schema import SCHEMA_VERSION

N = 50


def _block_on_tax(h, run_ids: list[str], *, target: str | None = None) -> None:
    """Each run stopped before its charges (its process killed), then the tax
    table changes and a worker resumes them: each blocks on the same change."""
    for rid in run_ids:
        p = h.run(rid, kill="start:charge", target=target, invoices=1)
        assert p.killed, p


def _causes(h) -> list[dict[str, Any]]:
    p = h.cli("status", "--by-cause", "--json")
    assert p.returncode == 0, p
    return json.loads(p.stdout)


def _worker(h) -> None:
    p = h.cli("worker", "--once")
    assert p.returncode == 0, p


def _decisions(h) -> list[tuple[Any, ...]]:
    return h.sql("SELECT run_id, action, state, batch_id FROM phasegate_decisions ORDER BY id")


def test_fifty_runs_blocked_by_one_probe_change_are_decided_with_one_command(h):
    runs = [f"bill-{i:02d}" for i in range(N)]
    _block_on_tax(h, runs)
    h.tax.write_text("vat-2026-v2")
    _worker(h)

    causes = _causes(h)
    assert len(causes) == 1
    cause = causes[0]
    assert set(cause) >= {"cause", "kind", "summary", "runs", "allowed_actions"}
    assert cause["kind"] == "probe_change"
    assert cause["runs"] == sorted(runs)
    assert "tax_table" in cause["summary"] and "vat-2026-v2" in cause["summary"]
    assert cause["allowed_actions"][0] == "approve" and "reset" in cause["allowed_actions"]
    # The id is the cause's, not the call's: asked again, the same.
    assert _causes(h)[0]["cause"] == cause["cause"]

    p = h.cli("decide", "--cause", cause["cause"], "approve", "--reason", "the new tax table is right")
    assert p.returncode == 0, p
    assert f"{N} run(s)" in p.stdout
    rows = _decisions(h)
    assert len(rows) == N and {r[0] for r in rows} == set(runs)
    assert {(r[1], r[2]) for r in rows} == {("approve", "pending")}
    batch = {r[3] for r in rows}
    assert len(batch) == 1 and batch != {None}
    (batch_id,) = batch
    assert batch_id in p.stdout
    reasons = h.sql("SELECT DISTINCT reason FROM phasegate_decisions")
    assert reasons == [("the new tax table is right",)]
    # Decided, they no longer need a person: the cause is gone.
    assert _causes(h) == []

    _worker(h)
    p = h.cli("status", "--json")
    assert p.returncode == 0, p
    every = {st["run_id"]: st for st in json.loads(p.stdout)}
    assert sorted(every) == sorted(runs)
    for rid, st in every.items():
        assert st["status"] == "completed", (rid, st["status"], st["attention"])
        assert [(d["action"], d["state"], d["batch_id"]) for d in st["decisions"]] == [("approve", "applied", batch_id)]
    # The audit in text too.
    assert f"(batch {batch_id})" in h.cli("status", runs[0]).stdout


def _second_workflow(h) -> str:
    """The billing workflow under another name, its pricing phase called
    `rate`: its runs block on the same tax change, but have no phase `price`."""
    text = BILLING_FILE.read_text()
    text = text.replace('Workflow("test-billing")', 'Workflow("test-billing-b")')
    text = text.replace("def price(ctx, load)", "def rate(ctx, load)")
    text = text.replace(
        '@wf.phase(needs=["price"])\ndef charge(ctx, price)', '@wf.phase(needs=["rate"])\ndef charge(ctx, rate)'
    )
    text = text.replace("for row in price:", "for row in rate:")
    assert "def rate(ctx, load)" in text and "def charge(ctx, rate)" in text
    path = h.tmp / "billing_b.py"
    path.write_text(text)
    return f"{path}:wf"


def _mixed_cause(h) -> dict[str, Any]:
    _block_on_tax(h, ["a-1", "a-2", "a-3"])
    _block_on_tax(h, ["b-1"], target=_second_workflow(h))
    h.tax.write_text("vat-2026-v2")
    _worker(h)
    (cause,) = _causes(h)
    assert cause["runs"] == ["a-1", "a-2", "a-3", "b-1"]
    assert sorted(cause["workflows"]) == ["test-billing", "test-billing-b"]
    return cause


def test_a_group_with_a_run_that_does_not_fit_is_refused_as_a_whole(h):
    cause = _mixed_cause(h)
    before = h.dump()
    p = h.cli("decide", "--cause", cause["cause"], "rewind", "--phase", "price", "--reason", "re-price")
    assert p.returncode == 2, p
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in p.stderr
    # One line per unfit run, then what happened.
    assert lines[0].startswith("b-1: does not fit:") and "no phase 'price'" in lines[0]
    assert lines[-1] == (
        "phasegate: decision refused: 1 of 4 run(s) do not fit; nothing was recorded (--skip-unfit records the rest)"
    )
    assert len(lines) == 2
    assert _decisions(h) == []
    assert h.dump() == before


def test_skip_unfit_records_the_runs_it_fits_and_lists_the_rest(h):
    cause = _mixed_cause(h)
    p = h.cli("decide", "--cause", cause["cause"], "rewind", "--phase", "price", "--reason", "re-price", "--skip-unfit")
    assert p.returncode == 0, p
    assert "skipped 1 run(s) that do not fit:" in p.stdout and "b-1: run 'b-1' has no phase 'price'" in p.stdout
    rows = _decisions(h)
    assert sorted(r[0] for r in rows) == ["a-1", "a-2", "a-3"]
    assert len({r[3] for r in rows}) == 1 and rows[0][3] is not None
    # What is left needs attention still: the skipped run, alone in its cause.
    assert [c["runs"] for c in _causes(h)] == [["b-1"]]


def test_dry_run_says_what_each_run_would_get_and_changes_nothing(h):
    cause = _mixed_cause(h)
    before = h.dump()
    p = h.cli("decide", "--cause", cause["cause"], "approve", "--reason", "fine", "--dry-run")
    assert p.returncode == 0, p
    for rid in cause["runs"]:
        assert f"{rid}: Accept the changed environment (tax_table)" in p.stdout
    assert "accepts: tax_table: vat-2026-v1 -> vat-2026-v2" in p.stdout
    p = h.cli("decide", "--cause", cause["cause"], "rewind", "--phase", "price", "--reason", "x", "--dry-run")
    assert p.returncode == 2, p
    assert "b-1: does not fit: run 'b-1' has no phase 'price'" in p.stdout
    assert "a-1: Re-run from price" in p.stdout
    assert "nothing would be recorded" in p.stderr
    assert h.dump() == before


def test_a_run_decided_alone_leaves_the_cause(h):
    _block_on_tax(h, ["a-1", "a-2", "a-3"])
    h.tax.write_text("vat-2026-v2")
    _worker(h)
    (cause,) = _causes(h)
    assert h.decide("a-2", "approve").returncode == 0
    (left,) = _causes(h)
    # The same cause (same id), without the run that was decided.
    assert left["cause"] == cause["cause"] and left["runs"] == ["a-1", "a-3"]
    p = h.cli("decide", "--cause", cause["cause"], "approve", "--reason", "fine")
    assert p.returncode == 0, p
    assert sorted(r[0] for r in _decisions(h)) == ["a-1", "a-2", "a-3"]
    assert len({r[3] for r in _decisions(h)}) == 2  # a-2's own decision has no batch
    assert h.sql("SELECT batch_id FROM phasegate_decisions WHERE run_id='a-2'") == [(None,)]


@pytest.mark.parametrize(
    "argv, said",
    [
        (["decide", "--cause", "c-0000000000", "approve", "--reason", "x"], "no such cause: no cause c-0000000000"),
        (["decide", "--cause", "nonsense", "approve", "--reason", "x"], "is not a cause id"),
        (["decide", "--cause", "c-0000000000", "--reason", "x"], "name the action"),
        (["decide", "r1", "approve", "--cause", "c-0000000000", "--reason", "x"], "not both"),
        (["decide", "r1", "approve", "--reason", "x", "--skip-unfit"], "--skip-unfit is for a group"),
        (["decide", "--cause", "c-0000000000", "approve", "--reason", " "], "a decision needs a reason"),
        (["decide", "--cause", "c-0000000000", "bless", "--reason", "x"], "unknown action"),
        (["status", "r1", "--by-cause"], "--by-cause lists every cause"),
    ],
)
def test_bad_group_usage_is_one_line_and_changes_nothing(h, argv, said):
    assert h.run("r1", kill="start:charge").killed
    before = h.dump()
    line = h.one_line_error(h.cli(*argv))
    assert said in line, line
    assert h.dump() == before


def test_causes_of_failures_mask_numbers_and_ids(h):
    """Failed runs group by exception type and message, numbers and ids masked."""
    flaky = h.tmp / "boom.py"
    flaky.write_text(
        "from phasegate import Workflow\n"
        "wf = Workflow('boom')\n"
        "@wf.phase()\n"
        "def fetch(ctx):\n"
        "    n = ctx.inputs['n']\n"
        "    raise TimeoutError(f'invoice {n} timed out after {30 + n}s (request 0x{n:08x}ab)')\n"
    )
    for i in range(3):
        assert h.cli("run", f"{flaky}:wf", "--run-id", f"f{i}", "--input", json.dumps({"n": i})).returncode == 1
    (cause,) = _causes(h)
    assert cause["kind"] == "exception" and cause["runs"] == ["f0", "f1", "f2"]
    assert cause["summary"] == "TimeoutError: invoice <n> timed out after <n>s (request <hex>)"
    assert "reset" in cause["allowed_actions"]


def test_in_doubt_effects_of_one_name_are_one_cause(h):
    for rid in ("d-1", "d-2"):
        assert h.run(rid, kill="after:charge:inv-1").killed
    (cause,) = _causes(h)
    assert cause["kind"] == "in_doubt_effect" and cause["runs"] == ["d-1", "d-2"]
    assert "charge:inv-1" in cause["summary"]
    assert {"confirm_effect", "retry_effect"} <= set(cause["allowed_actions"])
    p = h.cli("decide", "--cause", cause["cause"], "retry_effect", "--reason", "not in the gateway's ledger")
    assert p.returncode == 0, p
    rows = h.sql("SELECT run_id, effect_key FROM phasegate_decisions ORDER BY run_id")
    assert rows == [("d-1", "d-1/charge/charge:inv-1"), ("d-2", "d-2/charge/charge:inv-1")]


def test_a_store_of_format_3_gains_the_batch_column(h):
    assert h.run("r1", kill="start:charge").killed
    h.sql("ALTER TABLE phasegate_decisions DROP COLUMN batch_id")
    h.sql("UPDATE phasegate_meta SET value='3' WHERE key='schema_version'")
    assert h.decide("r1", "reset", reason="start over").returncode == 0
    assert h.sql("SELECT value FROM phasegate_meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert h.sql("SELECT action, batch_id FROM phasegate_decisions") == [("reset", None)]


def test_the_text_listing_fits_80_columns_and_escapes_stored_text(h):
    for rid in ("t-1", "t-2"):
        assert h.run(rid, kill="start:charge").killed
    # A probe value is someone else's text: an escape sequence, and long.
    h.tax.write_text("\x1b]52;c;ZXZpbA==\x07 rates " + "x" * 200)
    _worker(h)
    p = h.cli("status", "--by-cause")
    assert p.returncode == 0, p
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout
    assert "\\x1b]52" in p.stdout
    lines = p.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [ln for ln in lines if len(ln) > 80]
    assert lines[0].startswith("c-") and "probe_change" in lines[0] and "2 runs" in lines[0]
    assert "runs: t-1, t-2" in p.stdout and "fits: approve, rewind, reset" in p.stdout
    assert h.cli("status", "--by-cause", "--json").stdout.count("\\u001b") == 1


def test_a_group_respects_claims_and_the_second_operator_policy(h):
    _block_on_tax(h, ["a-1", "a-2"])
    h.tax.write_text("vat-2026-v2")
    _worker(h)
    (cause,) = _causes(h)
    # Someone else is looking at a-2: the group is refused without --force.
    assert h.cli("claim", "a-2", "--operator", "ada").returncode == 0
    p = h.cli("decide", "--cause", cause["cause"], "approve", "--reason", "fine", "--operator", "bob")
    assert p.returncode == 2, p
    assert p.stderr.startswith("a-2: does not fit:") and "ada" in p.stderr.splitlines()[0]
    assert _decisions(h) == []
    p = h.cli("decide", "--cause", cause["cause"], "approve", "--reason", "fine", "--operator", "bob", "--dry-run")
    assert p.returncode == 2 and "a-2: does not fit: run 'a-2' is claimed by ada" in p.stdout, p
    # With --force the dry run says whose claim it would override, on that run only.
    p = h.cli(
        "decide", "--cause", cause["cause"], "approve", "--reason", "fine", "--operator", "bob", "--dry-run", "--force"
    )
    assert p.returncode == 0, p
    assert p.stdout.count("--force overrides: claimed by ada, just now") == 1, p.stdout
    a2 = p.stdout[p.stdout.index("a-2: ") :]
    assert "    --force overrides: claimed by ada, just now" in a2
    assert _decisions(h) == []
    # The policy asks a second operator for approvals: each run's is proposed, in one batch.
    p = h.cli("policy", "--require-second", "approve", "--reason", "two people approve")
    assert p.returncode == 0, p
    p = h.cli("decide", "--cause", cause["cause"], "approve", "--reason", "fine", "--operator", "bob", "--force")
    assert p.returncode == 0, p
    assert "proposed" in p.stdout
    rows = _decisions(h)
    assert [(r[0], r[1], r[2]) for r in rows] == [("a-1", "approve", "proposed"), ("a-2", "approve", "proposed")]
    assert rows[0][3] == rows[1][3] is not None
