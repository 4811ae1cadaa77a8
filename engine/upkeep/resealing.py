"""Sealing a store anew under another key: turning a seal key on, rotating
it, or turning it off (`phasegate reseal`).

A reseal vouches for every record as it stands, so it first verifies the
whole store under the seals it carries now (the process's key, the store's)
and refuses if anything is damaged: damage must be answered, not laundered.
Then, in one write transaction, every checkpoint, effect record, decision,
policy change and message is sealed under the new key (each record's old seal
checked again inside the transaction, so nothing written in between slips
through), and the store's meta names the new key. Processes still running
with the old key (workers, watches) must be stopped first: their writes
would carry the old key's seals, which the new key does not accept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError
from ..history import chain, keys, seals, trail
from ..store.schema import SEAL_KEY
from ..store.store import Store
from .verify import Verifier


@dataclass(frozen=True)
class Resealed:
    """What a reseal sealed anew."""

    checkpoints: int
    effects: int
    decisions: int
    policy: int
    old: str | None
    """The key id the store's seals were under (None: plain hashes)."""
    new: str | None
    """The key id they are under now (None: plain hashes)."""
    messages: int = 0
    """Messages sent into runs (`phasegate send`), sealed anew."""


def reseal(store: Store, clock: Callable[[], float], new: keys.SealKey | None) -> Resealed:
    """Seal every record of the store under `new` (None: plain hashes).

    Args:
        store: The store, opened with the key its seals are under (or none).
        clock: The verification's clock.
        new: The key to seal under from now on, or None.

    Returns:
        The counts sealed, and the old and new key ids.

    Raises:
        StoreError: the store is damaged, or this process does not hold its key.
    """
    if store.db.seal_problem:
        raise StoreError(store.db.seal_problem)
    old = store.seal_key
    bad = [r for r in Verifier(store, clock).verify(record=False) if not r.ok]
    if bad:
        first = bad[0]
        where = f"run {first.run_id}" if first.run_id is not None else "the store"
        raise StoreError(
            f"{len(bad)} damaged report(s), the first in {where}: answer the damage (phasegate verify) before"
            " sealing anew, which would vouch for it; nothing was changed"
        )
    counts: dict[str, int] = {}
    with store.write() as conn:
        rows = store.seals.checkpoint_seals(conn)
        if old is not None:
            _all_vouch("checkpoint", [r for r in rows if r.seal != chain.entry_seal(r.payload_hash, old)])
        store.seals.set_seals(conn, "checkpoints", [(r.id, chain.entry_seal(r.payload_hash, new)) for r in rows])
        counts["checkpoints"] = len(rows)
        rows = store.seals.rows(conn, "effects")
        _all_vouch("effect record", [r for r in rows if not seals.vouches(r, old)])
        store.seals.set_seals(conn, "effects", [(r.id, seals.seal(r, new)) for r in rows])
        counts["effects"] = len(rows)
        rows = store.seals.rows(conn, "decisions")
        _all_vouch("decision", [r for r in rows if not trail.decision_vouched(r, old)])
        store.seals.set_seals(conn, "decisions", [(r.id, trail.decision_seal(r, new)) for r in rows])
        counts["decisions"] = len(rows)
        rows = store.seals.rows(conn, "policy") if "phasegate_policy" in store.tables else []
        _all_vouch("policy change", [r for r in rows if r.seal != trail.policy_seal(r, old)])
        store.seals.set_seals(conn, "policy", [(r.id, trail.policy_seal(r, new)) for r in rows])
        counts["policy"] = len(rows)
        sent = store.seals.rows(conn, "messages") if "phasegate_messages" in store.tables else []
        _all_vouch("message", [r for r in sent if not trail.message_vouched(r, old)])
        store.seals.set_seals(conn, "messages", [(r.id, trail.message_seal(r, new)) for r in sent])
        counts["messages"] = len(sent)
        store.meta.put(conn, SEAL_KEY, new.key_id if new is not None else "")
        # The policy's head, sealed anew under the new key (over the newest change's new seal).
        store.seal_key = new
        head, count, _ = store.policy.head(conn)
        newest = next((r for r in rows if int(r.id) == head), None)
        if rows or count:
            store.policy.seal_head(conn, head, count or 0, trail.policy_seal(newest, new) if newest else None)
    store.store_key_id = new.key_id if new is not None else None
    return Resealed(
        counts["checkpoints"], counts["effects"], counts["decisions"], counts["policy"],
        old.key_id if old else None, new.key_id if new else None, counts["messages"],
    )  # fmt: skip


def _all_vouch(what: str, unvouched: list[Any]) -> None:
    if unvouched:
        raise StoreError(
            f"{what} {unvouched[0].id} changed since it was verified (its seal no longer vouches for it);"
            " nothing was changed: run phasegate verify"
        )
