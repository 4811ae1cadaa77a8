"""`phasegate.testing.kill_at_each_step` on real workflows: real forked
children SIGKILLed at each boundary, real SQLite stores, a resume to the
end. A workflow that keeps its promises passes at every point; one that
calls the outside world without `ctx.effect`, or hands a value to a later
phase outside its output, is caught at the point where the rerun differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from phasegate.testing import KillTestFailed, kill_at_each_step
from tests.workflows import billing, inert, leaky


def _ledger(folder: Path) -> dict:
    return {"invoices": 1, "idempotent": True, "ledger": str(folder / "ledger.jsonl")}


def test_an_idempotent_billing_run_ends_the_same_after_a_kill_at_every_point(tmp_path):
    report = kill_at_each_step(
        billing.wf,
        _ledger,
        workdir=tmp_path,
        world=lambda d: billing.ledger_keys(str(d / "ledger.jsonl")),
        # A charge id is the gateway's random name: the totals are what must agree.
        same=lambda a, b: a["total"] == b["total"] and a["charged"] == b["charged"],
    )
    report.assert_ok()
    assert report.uninterrupted.status == "completed" and report.uninterrupted.output["charged"] == 1
    labels = [k.point.label for k in report.kills if k.point is not None]
    for expected in (
        "in-phase:load",
        "after-step:price/price_all",
        "after-intent:charge:inv-0",
        "after-effect:charge/charge:inv-0",
        "in-commit:charge",
        "after-checkpoint:report",
    ):
        assert expected in labels, labels
    # The gateway charged once in every attempt, however it was killed.
    assert all(k.world == ["kill-test/charge/charge:inv-0"] for k in report.kills)


def test_a_call_outside_ctx_effect_is_caught_where_a_rerun_charges_twice(tmp_path):
    report = kill_at_each_step(
        leaky.outside, lambda d: {"ledger": str(d / "ledger.jsonl")}, workdir=tmp_path, world=leaky.ledger_lines
    )
    bad = {str(k.point): k for k in report.failures}
    assert "in-commit:bill" in bad, str(report)
    assert bad["in-commit:bill"].world == ["bill-1", "bill-1"]
    with pytest.raises(
        KillTestFailed, match=r"killed at in-commit:bill \(point \d+ of \d+\).*left the world otherwise"
    ):
        report.assert_ok()


def test_a_value_kept_outside_the_outputs_is_caught_where_it_is_lost(tmp_path):
    report = kill_at_each_step(leaky.forgetful, {"n": 3}, workdir=tmp_path)
    assert report.uninterrupted.output == {"count": 3, "seen": 3}
    bad = {str(k.point): k for k in report.failures}
    assert "in-phase:total" in bad, str(report)
    assert bad["in-phase:total"].output == {"count": 3, "seen": 0}
    with pytest.raises(KillTestFailed, match="gave another output"):
        report.assert_ok()


def test_an_effect_neither_idempotent_nor_reconcilable_is_in_doubt_where_its_call_was_cut(tmp_path):
    report = kill_at_each_step(inert.wf, {"payloads": ["a", "b"]}, workdir=tmp_path)
    doubts = {str(k.point) for k in report.kills if k.in_doubt}
    # From its intent's commit to its completion's, which rides with the
    # phase's checkpoint (run/completions.py): a kill inside that
    # transaction takes the completion with it.
    assert doubts == {"after-intent:echo", "after-effect:carry/echo", "in-commit:carry"}, str(report)
    assert all(k.matched for k in report.kills if not k.in_doubt), str(report)
    with pytest.raises(KillTestFailed, match=r"killed at after-intent:echo .*in doubt"):
        report.assert_ok()
    report.assert_ok(allow_doubt=True)  # the author means an operator to answer it
