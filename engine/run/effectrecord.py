"""An effect's record: the row the ledger (ledger.py) writes for each
effect, from its intent to its result, and nothing of the protocol around it.

A record is the effects table's columns (`store/_effects.py`,
`EffectColumns`) read by name or attribute. Its states are `intent` (the
call may have happened) and `done` (its result saved); `retry_ok`,
`idempotent` and `atomic` say whether an intent may simply be called again
(ledger.py `needs_answer`). Each record names the run's record before it
(`prev_key`) and is sealed over its columns (history/seals.py), so the
run's effects form one verified history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from .. import _json

if TYPE_CHECKING:  # the store's module loads SQLAlchemy: the views import the ledger without it
    from ..store._effects import EffectColumns


def effect_key(run_id: str, phase: str, name: str) -> str:
    """An effect's idempotency key, before any rewind generation (`KEY@EPOCH.REWINDS`)."""
    return f"{run_id}/{phase}/{name}"


class EffectRecord(dict[str, Any]):
    """One effect record as read or written: its columns, by name or attribute."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def record_of(row: Any) -> EffectRecord:
    """A stored row (`Store.effects.of_run`, `by_key`) as a record."""
    return EffectRecord(row._mapping)


def new_intent(
    run_id: str,
    phase: str,
    name: str,
    key: str,
    now: float,
    prev_key: str | None,
    *,
    idempotent: bool = False,
    reconcilable: bool = False,
    redo_on_rewind: bool = False,
) -> EffectRecord:
    """A new record in the intent state, linked after the run's last one (`prev_key`), not yet sealed."""
    return EffectRecord(
        run_id=run_id,
        phase=phase,
        name=name,
        key=key,
        state="intent",
        idempotent=idempotent,
        atomic=False,
        attempt=1,
        retry_ok=False,
        result_hash=None,
        confirmed_by=None,
        prev_key=prev_key,
        reconcilable=reconcilable,
        redo_on_rewind=redo_on_rewind,
        intent_at=now,
    )


def confirm_done(rec: EffectRecord, result_json: str, decision: int, now: float) -> None:
    """An operator's (or a reconcile hook's) answer: the effect happened,
    with this result; `rec` changed in place, to be sealed again."""
    rec.update(
        state="done",
        done_at=now,
        result_json=result_json,
        result_hash=_json.sha256(result_json),
        confirmed_by=decision,
    )


def allow_retry(rec: EffectRecord) -> None:
    """An answer that the effect did not happen: an intent that may be
    called again; `rec` changed in place, to be sealed again."""
    rec.update(state="intent", done_at=None, result_json=None, result_hash=None, retry_ok=True)


def columns(rec: EffectRecord) -> EffectColumns:
    """The record's columns as the store writes them (all but its id)."""
    return cast("EffectColumns", {k: v for k, v in rec.items() if k != "id"})


#: The hot path's parameters for a new intent (`_hotpath.py` "intent") and a re-intent ("reintent").
_INTENT = (
    "run_id",
    "phase",
    "name",
    "key",
    "idempotent",
    "intent_at",
    "prev_key",
    "seal",
    "reconcilable",
    "redo_on_rewind",
)
_REINTENT = ("key", "attempt", "intent_at", "idempotent", "reconcilable", "seal")


def intent_params(rec: EffectRecord) -> dict[str, Any]:
    """The hot path's "intent" statement's parameters for a new, sealed record."""
    return {k: rec[k] for k in _INTENT}


def reintent_params(rec: EffectRecord) -> dict[str, Any]:
    """The hot path's "reintent" statement's parameters for a sealed retry of a record."""
    return {k: rec[k] for k in _REINTENT}
