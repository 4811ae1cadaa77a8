"""An in-doubt effect's reconcile hook asked, and its answer written down.

An effect started and never recorded done may have happened. When its author
gave it a reconcile hook (`ctx.effect(..., reconcile=fn)`), the ledger asks
the outside system instead of an operator (authoring/reconcile.py runs the
hook under its timeout). An answer that settles it ("done" with the result,
or "not done": call again) is recorded as a decision by `RECONCILER`, with
the hook's answer as its evidence, applied at once; "unknown" leaves it in
doubt, for a person, with what the hook said shown beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .. import _json
from ..authoring.reconcile import Reconciled, ask
from ..errors import UsageError
from ..observe import hooks
from ..states import Action, BlockKind
from .completions import Completions
from .effectrecord import EffectRecord
from .lease import Fence

if TYPE_CHECKING:  # the store's module loads SQLAlchemy
    from ..store.store import Store


class Ledger(Protocol):
    """What asking a reconcile hook needs of the run's ledger (`EffectLedger`)."""

    store: Store
    fence: Fence
    completions: Completions
    effects: dict[str, EffectRecord]

    def clock(self) -> float: ...

    def answer(self, conn: Any, key: str, action: Action, result: Any, decision: int, now: float) -> None: ...


RECONCILER = "phasegate"
"""The operator name automatic resolutions are recorded under."""


def reconcile(ledger: Ledger, row: EffectRecord, hook: Callable[[str], Any], timeout: float) -> Reconciled:
    """Ask the outside system about an in-doubt effect, and write down what it said.

    Args:
        ledger: The run's effect ledger (not locked: a hook may take its whole timeout).
        row: The in-doubt effect's record.
        hook: Its reconcile hook, called with the effect's key.
        timeout: Seconds the hook may take.

    Returns:
        What the hook said ("unknown" too when its result cannot be stored).
    """
    store, fence = ledger.store, ledger.fence
    ledger.completions.flush()
    got = ask(hook, row.key, timeout)
    if got.answer == "done":
        try:
            _json.dumps(got.result)
        except UsageError as exc:
            got = Reconciled.unknown(f"the reconcile hook's result cannot be stored: {exc}")
    from ..store.store import NewDecision  # loaded already: the store is open

    now = ledger.clock()
    with store.write() as conn:
        fence.check(conn, now)
        if got.answer != "unknown":
            action = Action.CONFIRM_EFFECT if got.answer == "done" else Action.RETRY_EFFECT
            detail: dict[str, Any] = {"reconcile": got.as_dict()}
            if got.answer == "done":
                detail["result"] = got.result
            decision = store.decisions.record(
                conn,
                NewDecision(
                    run_id=row.run_id,
                    action=action.value,
                    effect_key=row.key,
                    answers=BlockKind.IN_DOUBT_EFFECT.value,
                    reason=f"reconcile hook: {got.why}"[:500],
                    operator=RECONCILER,
                    at=now,
                    state="applied",
                    applied_at=now,
                    detail_json=_json.dumps(detail),
                ),
            )
            ledger.answer(conn, row.key, action, got.result, decision, now)
        shown = _json.dumps({**got.as_dict(), "at": now})
        store.effects.set_reconcile(conn, row.key, shown)
        ledger.effects[row.key]["reconcile_json"] = shown
    hooks.OBSERVER.effect(row.run_id, row.phase, row.key, f"reconciled_{got.answer}", now)
    return got
