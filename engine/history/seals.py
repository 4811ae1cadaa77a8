"""Effect records as part of the run's verified history.

The chain of checkpoints covers what phases produced; an effect record says
that an irreversible action happened, and losing one means doing it twice.
So each record carries a seal (a hash over everything that decides what a
resume does with it: state, result hash, attempt, retry permission, who
confirmed it) and the key of the record written before it. The run row holds
the key of the last one. Together they let the start sequence detect, before
any phase runs:

- an edited record (its seal no longer matches its fields: a completion
  deleted, a result swapped, a retry permission or confirmation forged);
- a deleted record (a later record, or the run row, names a key that is gone);
- a record inserted or re-ordered (it is not on the path from the last one).

Without a key seals are plain hashes, like the checkpoint chain: they catch
damage and mistakes, not a forger who recomputes them. With
`PHASEGATE_SEAL_KEY_FILE` (keys.py) each is an HMAC under a key kept outside
the store, which a forger without the key cannot recompute.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from .. import _json
from . import keys

#: The fields a seal covers, in order. Times are left out: they inform, and
#: nothing a resume decides depends on them.
SEALED: tuple[str, ...] = (
    "run_id",
    "phase",
    "name",
    "key",
    "state",
    "idempotent",
    "atomic",
    "attempt",
    "retry_ok",
    "result_hash",
    "confirmed_by",
    "prev_key",
    "reconcilable",
    "redo_on_rewind",
)

_BOOLS = frozenset({"idempotent", "atomic", "retry_ok", "reconcilable", "redo_on_rewind"})
_INTS = frozenset({"attempt", "confirmed_by"})

Problem = Literal["edited", "missing", "not_in_history", "unsealed"]


def _field(rec: Any, name: str) -> Any:
    # dict first: an isinstance against the Mapping ABC costs more than the rest of a seal.
    value = rec.get(name) if isinstance(rec, dict) or isinstance(rec, Mapping) else getattr(rec, name, None)
    if name in _BOOLS:
        return bool(value)
    if name in _INTS:
        return None if value is None else int(value)
    return value


#: The types whose JSON orjson writes exactly as the canonical encoder does
#: (tests/unit/test_effect_seals.py): no float to spell, no key to sort.
_PLAIN = frozenset({str, int, bool, type(None)})


_BOOL_AT = tuple(i for i, n in enumerate(SEALED) if n in _BOOLS)
_INT_AT = tuple(i for i, n in enumerate(SEALED) if n in _INTS)


def _fields(rec: Mapping[str, Any] | Any) -> list[Any]:
    """`_field` of every sealed name, in order (a dict, the effect path's
    record, without a call and two set lookups a field)."""
    if not isinstance(rec, dict):
        return [_field(rec, n) for n in SEALED]
    get = rec.get
    fields = [get(n) for n in SEALED]
    for i in _BOOL_AT:
        fields[i] = bool(fields[i])
    for i in _INT_AT:
        v = fields[i]
        if v is not None:
            fields[i] = int(v)
    return fields


def canonical(fields: list[Any]) -> bytes:
    """The canonical bytes of a record's sealed fields, in order."""
    # A record phasegate wrote holds only strings, integers, booleans and
    # None: orjson's bytes are then the canonical text, without the checks
    # `_json.dumps` makes for floats and NaN (3-4 us a seal, two seals an
    # effect; an effect name like "charge-1" even sent every seal down the
    # standard library's path, its "e-1" looking like an exponent). A lone
    # surrogate or an integer past 64 bits makes orjson refuse, and anything
    # else (a damaged row's float) takes the canonical path.
    for v in fields:
        if type(v) not in _PLAIN:
            break
    else:
        try:
            return orjson.dumps(fields)
        except TypeError:
            pass
    return _json.dumps(fields).encode("utf-8", "surrogatepass")


def seal(rec: Mapping[str, Any] | Any, key: keys.SealKey | None) -> str:
    """The seal of a record (a mapping or a row) as its fields are now:
    under `key` (the store's: `Store.seal_key`), else a plain hash."""
    return keys.digest(canonical(_fields(rec)), key)


def mismatch(stored: str | None, data: bytes, key: keys.SealKey | None) -> str | None:
    """Why a stored seal does not vouch for `data` (None when it does).

    Args:
        stored: The seal the record carries (not empty).
        data: The canonical bytes it should cover.
        key: The store's key (`Store.seal_key`): None for a store sealed
            with plain hashes; a key not held here (`SealKey.unheld`) checks
            a seal's kind and key id only.

    Returns:
        None, or the reason in a few words ("was changed after it was written").
    """
    return kind_problem(stored, key) or (
        None
        if key is not None and not key.held
        else (None if hmac.compare_digest(str(stored), keys.digest(data, key)) else "was changed after it was written")
    )


def kind_problem(stored: str | None, key: keys.SealKey | None) -> str | None:
    """Why a seal's kind is not the store's (None when it is): a plain hash
    on a keyed store was written without the key, a keyed seal on a plain
    store was not written by this store's phasegate.

    Args:
        stored: The seal a record carries (not empty).
        key: The store's key, held or not, or None (plain hashes).

    Returns:
        None, or the reason.
    """
    if key is None:
        if keys.is_keyed(stored):
            return f"carries a keyed seal (key {keys.id_of(stored)}) on a store sealed with plain hashes"
        return None
    if not keys.is_keyed(stored):
        return "carries a plain hash, not a seal under the store's key: written or rewritten without the key"
    if keys.id_of(stored) != key.key_id:
        return f"is sealed under another key (id {keys.id_of(stored)}), not this store's ({key.key_id})"
    return None


def sealed(values: dict[str, Any], key: keys.SealKey | None) -> dict[str, Any]:
    """`values` with its seal set under the store's `key` (the caller's dict,
    for an insert or update)."""
    values["seal"] = seal(values, key)
    return values


@dataclass(frozen=True)
class EffectDamage:
    """One effect record that the verified history does not vouch for."""

    key: str
    """The effect's full key (`?` when the record is gone with nothing left that names it)."""
    problem: Problem
    """missing, edited, not_in_history or unsealed."""
    detail: str
    """What is wrong, in one line."""

    def as_dict(self) -> dict[str, str]:
        """The damage as `verify --json` and the run's block reason name it.

        Returns:
            `effect` (the key), `problem` and `detail`.
        """
        return {"effect": self.key, "problem": self.problem, "detail": self.detail}


#: The key of damage whose record is gone with nothing left that names it.
UNNAMED = "?"


def check(
    records: Iterable[Any], head: str | None, count: int | None, with_key: keys.SealKey | None
) -> list[EffectDamage]:
    """Every way a run's effect records differ from what their seals, their
    links and the run's record count say: empty when the history is whole.

    Args:
        records: The run's effect records.
        head: The key of its newest record, as the run row names it.
        count: How many records the run row counts (None: not counted).
        with_key: The store's key (`Store.seal_key`).

    Returns:
        The damage found.
    """
    sk = with_key
    by_key = {r.key: r for r in records}
    damage: list[EffectDamage] = []
    for r in by_key.values():
        if not r.seal:
            damage.append(
                EffectDamage(r.key, "unsealed", f"effect record {r.key} has no seal: not written by phasegate")
            )
        elif (why := mismatch(r.seal, canonical(_fields(r)), sk)) is not None:
            damage.append(EffectDamage(r.key, "edited", f"effect record {r.key} {why} ({r.state})"))
    seen: set[str] = set()
    at, after = head, None
    while at:
        if at in seen:
            damage.append(EffectDamage(at, "edited", f"effect records loop back to {at}: re-ordered"))
            break
        rec = by_key.get(at)
        if rec is None:
            named_by = f"the record of {after}" if after else "the run"
            damage.append(EffectDamage(at, "missing", f"effect record {at} was deleted ({named_by} names it)"))
            break
        seen.add(at)
        at, after = rec.prev_key, at
    # Records cut off behind a deleted one are explained by that deletion.
    named = sum(1 for d in damage if d.problem == "missing")
    broken = named > 0
    if count is not None and count - len(by_key) > named:
        lost = count - len(by_key) - named
        damage.append(
            EffectDamage(
                UNNAMED,
                "missing",
                f"{lost} more effect record(s) of this run were deleted and nothing left names them: name each"
                " from the outside system's records (confirm_effect --effect KEY --result JSON, or retry_effect"
                " --effect KEY)",
            )
        )
    for key in by_key:
        if not broken and key not in seen and not any(d.key == key for d in damage):
            damage.append(
                EffectDamage(key, "not_in_history", f"effect record {key} is not in the run's history: inserted")
            )
    return damage


def split_key(run_id: str, key: str) -> tuple[str, str] | None:
    """(phase, name) of an effect key `run/phase/name`, or None."""
    prefix = run_id + "/"
    if not key.startswith(prefix) or "/" not in key[len(prefix) :]:
        return None
    phase, name = key[len(prefix) :].split("/", 1)
    return phase, name


def vouches(rec: Mapping[str, Any] | Any, key: keys.SealKey | None) -> bool:
    """Whether a record's stored seal vouches for its fields as they are now."""
    stored = _field(rec, "seal") if not isinstance(rec, dict) else rec.get("seal")
    if not stored:
        return False
    return mismatch(stored, canonical(_fields(rec)), key) is None
