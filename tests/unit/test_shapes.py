"""The stored JSON shapes (shapes.py) say what the engine writes: each is
checked here against the code that writes it, so the two cannot drift."""

from __future__ import annotations

import typing
from typing import Any

from phasegate import shapes
from phasegate.authoring.reconcile import Reconciled
from phasegate.authoring.workflow import Workflow
from phasegate.history.chain import Folded, IntegrityFailure
from phasegate.run.environment import compare
from phasegate.run.ledger import in_doubt_reason
from phasegate.states import BlockKind
from phasegate.store.schema import effects


def _keys(td: Any) -> frozenset[str]:
    return frozenset(td.__required_keys__ | td.__optional_keys__)


def test_each_kind_of_block_has_one_shape() -> None:
    kinds = [typing.get_args(typing.get_type_hints(td)["kind"]) for td in typing.get_args(shapes.BlockedReason)]
    assert sorted(k for (k,) in kinds) == sorted(k.value for k in BlockKind)


def test_an_integrity_failure_is_stored_as_its_shape() -> None:
    failure = IntegrityFailure(seq=2, phase="load", what="hash", expected="a", actual="b", message="changed")
    assert set(failure.as_dict()) == _keys(shapes.IntegrityReason)


def test_an_env_comparison_row_is_stored_as_its_shape() -> None:
    wf = Workflow("shapes")

    @wf.probe("tax")
    def tax() -> str:
        return "v2"

    @wf.phase()
    def load(ctx: Any) -> int:
        return 1

    cmp = compare(wf, Folded(probes={"tax": "v1"}, shape=wf.shape()), {"tax": "v2"}, now=1.0)
    assert cmp.blocking and all(set(row) == _keys(shapes.EnvCheck) for row in cmp.rows)


def test_an_in_doubt_reason_and_a_reconcile_answer_are_stored_as_their_shapes() -> None:
    asked = Reconciled.unknown("timeout", evidence={"tries": 3})
    reason = in_doubt_reason("r/charge/pay", "pay", "charge", asked).as_dict()
    assert set(reason) == _keys(shapes.InDoubtBlock)
    assert set(reason["reconcile"]) <= _keys(shapes.ReconcileAnswer)
    done = {**Reconciled.done({"id": 1}, evidence={"tries": 1}).as_dict(), "at": 1.0}
    assert set(done) == _keys(shapes.ReconcileAnswer)


def test_an_effect_row_claims_only_columns_of_the_effects_table() -> None:
    claimed = set(typing.get_type_hints(shapes.EffectRow))
    assert claimed <= {c.name for c in effects.columns}
