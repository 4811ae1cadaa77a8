"""#28: a run id cut to its column keeps what tells it from the ids around
it, and an environment check no finished phase saved yet is not "same"."""

from __future__ import annotations

from phasegate.console._format import apart, shared_ends

BILLING = ["billing-umbrella-2026-11", "billing-initech-2026-11", "billing-hooli-2026-11", "billing-globex-2026-11"]


def test_a_cut_id_keeps_the_part_that_differs_from_its_neighbours() -> None:
    ends = shared_ends(BILLING)
    assert ends["billing-umbrella-2026-11"] == (8, 8)
    cut = {rid: apart(rid, 22, *ends[rid]) for rid in BILLING}
    assert cut["billing-umbrella-2026-11"] == "billi…umbrella-2026-11"
    assert cut["billing-initech-2026-11"] == "billin…initech-2026-11"
    assert all(len(c) <= 22 for c in cut.values())
    # Narrower: both shared ends are cut, the part that differs stays whole.
    assert apart("billing-umbrella-2026-11", 16, *ends["billing-umbrella-2026-11"]) == "bil…umbrella…-11"


def test_ids_that_differ_at_their_end_are_cut_in_the_middle() -> None:
    ids = [f"pipeline-orders-2026-11-{d}" for d in (27, 28, 29)]
    ends = shared_ends(ids)
    assert {apart(i, 22, *ends[i]) for i in ids} == {f"pipeline…rs-2026-11-{d}" for d in (27, 28, 29)}
    assert apart("short-id", 22, 0, 0) == "short-id"
