"""An atomic effect: its function and its record commit in one transaction.

`ctx.effect(..., atomic=True)` calls its function as `fn(key, session)` with
an ORM session on the transaction that then records the effect done, so the
action (a write to the application's own tables in the same database) and
its record are one commit: it can never be in doubt, and needs no separate
intent. The ledger calls `perform` under its lock (ledger.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .. import _json
from ..history import seals
from ..observe import hooks
from . import effectrecord as record
from .completions import Completions
from .effectcall import call_effect
from .effectrecord import EffectRecord
from .lease import Fence

if TYPE_CHECKING:  # the store's module loads SQLAlchemy
    from ..store.store import Store


class Ledger(Protocol):
    """What an atomic effect needs of the run's ledger (`EffectLedger`)."""

    store: Store
    fence: Fence
    completions: Completions
    head: str | None

    def clock(self) -> float: ...

    def remember(self, rec: EffectRecord, *, new: bool) -> None: ...


def perform(
    ledger: Ledger,
    row: EffectRecord | None,
    phase: str,
    name: str,
    key: str,
    fn: Callable[..., Any],
    *,
    idempotent: bool,
) -> Any:
    """(under the ledger's lock) Call `fn(key, session)` and record the
    effect done, in one transaction fenced by the run's lease.

    Args:
        ledger: The run's effect ledger.
        row: The effect's record, if an earlier call left one that is not done.
        phase: The phase the effect belongs to.
        name: The effect's name, unique in its phase.
        key: Its idempotency key.
        fn: The action.
        idempotent: The target deduplicates by key.

    Returns:
        The result as a resume would read it back.
    """
    # Imported here: only an atomic effect needs the ORM, and a command
    # line start should not pay for it.
    from sqlmodel import Session

    fence, store = ledger.fence, ledger.store
    ledger.completions.flush()
    now = ledger.clock()
    with store.hot() as conn:
        with Session(bind=conn) as session:
            attempt = 1 if row is None else int(row.attempt)
            result = hooks.OBSERVER.effect_call(
                fence.run_id,
                phase,
                key,
                lambda: call_effect(fn, key, session, fence=fence, attempt=attempt),
            )
            session.flush()
        text = _json.dumps(result)
        rec = EffectRecord(
            row
            if row is not None
            else {
                "run_id": fence.run_id,
                "phase": phase,
                "name": name,
                "key": key,
                "idempotent": idempotent,
                "atomic": True,
                "attempt": 1,
                "retry_ok": False,
                "confirmed_by": None,
                "prev_key": ledger.head,
                "reconcilable": False,
                "redo_on_rewind": False,
                "intent_at": now,
            }
        )
        rec.update(state="done", done_at=now, result_json=text, result_hash=_json.sha256(text))
        seals.sealed(rec, store.seal_key)
        if row is None:
            store.effects.add(conn, record.columns(rec))
            store.effects.note_last(conn, fence.run_id, key)
        else:
            store.effects.rewrite(conn, record.columns(rec))
        fence.check(conn, now)
    ledger.remember(rec, new=row is None)
    hooks.OBSERVER.effect(rec.run_id, phase, key, "done", now)
    return _json.loads(text)
