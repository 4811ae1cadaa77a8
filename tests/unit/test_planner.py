"""`plan_start` without a database: hand-built chains, effects and decisions
in, the start sequence's decision out."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from phasegate import Action, BlockKind, PhaseContext, UsageError, Workflow
from phasegate.history import chain
from phasegate.history.seals import EffectDamage
from phasegate.run import environment
from phasegate.run.planner import (
    AnswerEffect,
    Approve,
    Degrade,
    Pending,
    Rewind,
    SetAside,
    StartFacts,
    Void,
    plan_start,
)

wf = Workflow("unit")


@wf.probe("rates")
def rates() -> str:
    return "v1"


@wf.phase()
def load(ctx: PhaseContext) -> list[int]:
    return [1, 2]


@wf.phase(needs=["load"], probes=["rates"])
def price(ctx: PhaseContext, load: list[int]) -> int:
    return sum(load)


@wf.phase(needs=["price"])
def report(ctx: PhaseContext, price: int) -> str:
    return str(price)


def _entries(done: list[str], probes: dict[str, Any] | None = None) -> list[chain.Entry]:
    """Verified entries for phases done in order, written against `probes`."""
    out: list[chain.Entry] = []
    prev = chain.GENESIS
    for seq, name in enumerate(done):
        p = wf.get(name)
        env = environment.fingerprint(wf, probes or {"rates": "v1"}, p.code_hash, 100.0 + seq)
        text, digest = chain.envelope(
            run_id="r1",
            epoch=0,
            seq=seq,
            kind="phase",
            prev=prev,
            inputs_hash="h",
            env=env,
            phase=name,
            phase_index=p.index,
            output_hash="o",
        )
        row = SimpleNamespace(seq=seq, phase=name, payload_hash=digest, created_at=100.0 + seq, output_state="present")
        out.append(chain.Entry(row=row, env=json.loads(text), output=[1, 2], output_ok=True))
        prev = digest
    return out


def facts(
    done: list[str],
    *,
    failure: chain.IntegrityFailure | None = None,
    pending: list[Pending] | None = None,
    effects: list[Any] | None = None,
    probes: dict[str, Any] | None = None,
    retrievable: bool = True,
    saved_probes: dict[str, Any] | None = None,
    damage: list[Any] | None = None,
) -> StartFacts:
    entries = _entries(done, saved_probes)
    return StartFacts(
        wf=wf,
        verified=chain.Verified(entries, failure),
        rows=[e.row for e in entries],
        pending=pending or [],
        effects=effects or [],
        effect_damage=damage or [],
        probes=probes if probes is not None else {"rates": "v1"},
        now=200.0,
        last_codes={p.name: p.code_hash for p in wf.phases},
        damaged_records=lambda phases: [],
        retrievable=lambda state, name: retrievable,
    )


def test_a_fresh_run_runs_every_phase() -> None:
    plan = plan_start(facts([]))
    assert plan.apply is None and plan.blocks == ()
    assert [p.name for p in plan.to_run] == ["load", "price", "report"]


def test_a_resume_runs_only_what_is_open() -> None:
    plan = plan_start(facts(["load"]))
    assert [p.name for p in plan.to_run] == ["price", "report"]


def test_an_integrity_failure_blocks_until_decided_then_sets_aside() -> None:
    failure = chain.IntegrityFailure(1, "price", "hash", "a", "b", "envelope hash mismatch")
    plan = plan_start(facts(["load", "price"], failure=failure))
    assert [b.kind for b in plan.blocks] == [BlockKind.INTEGRITY]
    dec = Pending(7, Action.DEGRADE, BlockKind.INTEGRITY)
    plan = plan_start(facts(["load", "price"], failure=failure, pending=[dec]))
    assert isinstance(plan.apply, SetAside)
    assert plan.apply.untrusted == (1,) and plan.apply.decision == 7
    assert [e.row.phase for e in plan.apply.trusted] == ["load"]


def test_a_rewind_answering_integrity_is_carried_out_as_a_rewind_afterwards() -> None:
    failure = chain.IntegrityFailure(1, "price", "hash", "a", "b", "envelope hash mismatch")
    dec = Pending(3, Action.REWIND, BlockKind.INTEGRITY, phase="load")
    plan = plan_start(facts(["load", "price"], failure=failure, pending=[dec]))
    assert isinstance(plan.apply, SetAside) and plan.apply.decision is None
    plan = plan_start(facts(["load"], pending=[dec]))
    assert plan.apply == Rewind("load", 0, ("load", "price", "report"), 3)


def test_a_moved_probe_blocks_only_an_open_run_and_an_approval_must_cover_it() -> None:
    plan = plan_start(facts(["load", "price"], probes={"rates": "v2"}))
    assert [b.kind for b in plan.blocks] == [BlockKind.ENV_MISMATCH]
    assert plan_start(facts(["load", "price", "report"], probes={"rates": "v2"})).blocks == ()
    stale = Pending(
        4, Action.APPROVE, BlockKind.ENV_MISMATCH, detail={"accepted": [{"probe": "rates", "current": "v3"}]}
    )
    assert isinstance(plan_start(facts(["load", "price"], probes={"rates": "v2"}, pending=[stale])).apply, Void)
    ok = Pending(5, Action.APPROVE, BlockKind.ENV_MISMATCH, detail={"accepted": [{"probe": "rates", "current": "v2"}]})
    plan = plan_start(facts(["load", "price"], probes={"rates": "v2"}, pending=[ok]))
    assert plan.apply == Approve(("rates",), {}, 5)


def test_an_effect_in_doubt_blocks_and_an_answer_is_applied() -> None:
    eff = SimpleNamespace(
        key="r1/price/charge",
        name="charge",
        phase="price",
        state="intent",
        idempotent=False,
        atomic=False,
        retry_ok=False,
    )
    plan = plan_start(facts(["load"], effects=[eff]))
    assert [b.kind for b in plan.blocks] == [BlockKind.IN_DOUBT_EFFECT]
    dec = Pending(9, Action.CONFIRM_EFFECT, BlockKind.IN_DOUBT_EFFECT, effect_key=eff.key, detail={"result": {"id": 1}})
    assert plan_start(facts(["load"], effects=[eff], pending=[dec])).apply == AnswerEffect(
        eff.key, Action.CONFIRM_EFFECT, {"id": 1}, 9
    )
    idem = SimpleNamespace(**{**vars(eff), "idempotent": True})
    assert plan_start(facts(["load"], effects=[idem])).blocks == ()


def test_a_reconcilable_effect_in_doubt_lets_its_phase_run_to_ask() -> None:
    eff = SimpleNamespace(
        key="r1/price/charge",
        name="charge",
        phase="price",
        state="intent",
        idempotent=False,
        atomic=False,
        retry_ok=False,
        reconcilable=True,
    )
    plan = plan_start(facts(["load"], effects=[eff]))
    assert plan.blocks == () and [p.name for p in plan.to_run] == ["price", "report"]


def test_damaged_effect_records_block_before_anything_and_only_an_answer_repairs() -> None:
    dmg = EffectDamage("r1/price/charge", "missing", "effect record r1/price/charge was deleted")
    rewind = Pending(3, Action.REWIND, None, phase="load")
    plan = plan_start(facts(["load"], damage=[dmg], pending=[rewind]))
    assert plan.apply is None and [b.kind for b in plan.blocks] == [BlockKind.INTEGRITY]
    assert plan.blocks[0].data["effect"] == dmg.key and plan.blocks[0].data["problem"] == "missing"
    ans = Pending(4, Action.RETRY_EFFECT, BlockKind.INTEGRITY, effect_key=dmg.key, detail={"repair": True})
    assert plan_start(facts(["load"], damage=[dmg], pending=[rewind])).apply is None
    assert plan_start(facts(["load"], damage=[dmg], pending=[rewind])).apply is None
    plan = plan_start(facts(["load"], damage=[dmg], pending=[rewind, ans]))
    assert plan.apply == AnswerEffect(dmg.key, Action.RETRY_EFFECT, None, 4, repair=True)


def test_a_correction_re_opens_the_phase_that_read_the_result() -> None:
    eff = SimpleNamespace(key="r1/price/charge", name="charge", phase="price", state="done")
    dec = Pending(7, Action.CONFIRM_EFFECT, None, effect_key=eff.key, detail={"correction": True, "result": {"id": 2}})
    plan = plan_start(facts(["load", "price", "report"], effects=[eff], pending=[dec]))
    assert isinstance(plan.apply, AnswerEffect) and plan.apply.result == {"id": 2}
    assert plan.apply.reopen == Rewind("price", 1, ("price", "report"), 7)


def test_a_lost_output_below_a_floor_is_rederived_or_blocks_and_degrade_skips() -> None:
    plan = plan_start(facts(["load", "price"], retrievable=False))
    # Both outputs are lost; both phases can be run again from their own inputs.
    assert plan.blocks == () and plan.rederive == ("load", "price")
    assert [p.name for p in plan.to_run] == ["load", "price", "report"]
    assert any("re-deriving" in n for n in plan.notes)
    no_rederive = Workflow("unit2")

    @no_rederive.phase(rederivable=False)
    def fetch(ctx: PhaseContext) -> int:
        return 1

    @no_rederive.phase(needs=["fetch"])
    def use(ctx: PhaseContext, fetch: int) -> int:
        return fetch

    base = facts([])
    f = StartFacts(
        **{
            **vars(base),
            "wf": no_rederive,
            "verified": chain.Verified([], None),
            "last_codes": {},
        }
    )
    # nothing done: fetch will run, so use's floor is met
    assert plan_start(f).blocks == ()


def test_decisions_nothing_needs_are_voided_when_the_run_goes_on() -> None:
    dec = Pending(11, Action.DEGRADE, BlockKind.BELOW_FLOOR)
    plan = plan_start(facts(["load"], pending=[dec]))
    assert plan.blocks == () and plan.void == (11,)


def test_degrade_is_applied_when_a_floor_cannot_be_met() -> None:
    dec = Pending(12, Action.DEGRADE, BlockKind.BELOW_FLOOR)
    base = facts(["load", "price"], retrievable=False, pending=[dec])
    strict = Workflow("unit3")

    @strict.phase(rederivable=False)
    def load(ctx: PhaseContext) -> int:  # noqa: F811 - a second workflow's phase
        return 1

    @strict.phase(needs=["load"])
    def price(ctx: PhaseContext, load: int) -> int:  # noqa: F811
        return load

    entries = []
    env = environment.fingerprint(strict, {}, strict.get("load").code_hash, 1.0)
    text, digest = chain.envelope(
        run_id="r1",
        epoch=0,
        seq=0,
        kind="phase",
        prev=chain.GENESIS,
        inputs_hash="h",
        env=env,
        phase="load",
        phase_index=0,
    )
    row = SimpleNamespace(seq=0, phase="load", payload_hash=digest, created_at=1.0, output_state="pruned")
    entries.append(chain.Entry(row=row, env=json.loads(text)))
    f = StartFacts(
        **{
            **vars(base),
            "wf": strict,
            "verified": chain.Verified(entries, None),
            "rows": [row],
            "probes": {},
            "last_codes": {},
        }
    )
    plan = plan_start(f)
    assert plan.apply == Degrade(("price",), 12)


@pytest.mark.parametrize("phase", [None, "nosuch"])
def test_a_rewind_to_a_phase_the_workflow_lacks_is_refused(phase: str | None) -> None:
    dec = Pending(13, Action.REWIND, None, phase=phase)
    with pytest.raises(UsageError):
        plan_start(facts(["load"], pending=[dec]))
