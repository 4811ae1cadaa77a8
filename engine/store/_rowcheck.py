"""Checking a run's row before anything reads it.

The checkpoints are hash-chained; the run's own row (status, lease, shape,
the operator's summary) is not, because it changes on every beat. Damage
there must still end in one clear error, not a traceback deep in a view, so
every run row is checked here as it leaves the store.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from .. import _json
from ..errors import StoreError
from ..states import RunStatus

_JSON = {
    "inputs_json": False,
    "shape_json": False,
    "blocked_json": False,
    "env_json": False,
    "notes_json": False,
    "error_json": True,
    "waiting_json": True,
    "held_json": True,
}
_INTS = {
    "epoch": False,
    "head_seq": False,
    "frontier_index": False,
    "phase_count": False,
    "steps_done": False,
    "lease_pid": True,
    "effects_count": False,
    "decisions_last": True,
    "decisions_count": False,
}
_TIMES = {
    "created_at": False,
    "updated_at": False,
    "last_checkpoint_at": True,
    "lease_expires_at": True,
    "heartbeat_at": True,
    "wake_at": True,
}
_TEXT = {
    "run_id": False,
    "workflow": False,
    "inputs_hash": False,
    "head_hash": False,
    "attention": False,
    "target": True,
    "frontier_phase": True,
    "lease_owner": True,
    "lease_host": True,
    "effects_last": True,
}
_STATUSES = frozenset(s.value for s in RunStatus)
#: A UNIX time past this (year 5138) is damage, not a date.
_MAX_TIME = 1e11


def problem(row: Any) -> str | None:
    """What is wrong with a run row, or None when it can be read safely."""
    m = _plain(row)
    for col, nullable in _TEXT.items():
        v = m.get(col)
        if not (isinstance(v, str) or (nullable and v is None)):
            return f"{col} is {type(v).__name__}, not text"
    if m.get("status") not in _STATUSES:
        return f"status {str(m.get('status'))[:40]!r} is not a run status"
    for col, nullable in _INTS.items():
        v = m.get(col)
        if not ((isinstance(v, int) and not isinstance(v, bool)) or (nullable and v is None)):
            return f"{col} {str(v)[:40]!r} is not a whole number"
    for col, nullable in _TIMES.items():
        v = m.get(col)
        if v is None and nullable:
            continue
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not 0 <= v < _MAX_TIME:
            return f"{col} {str(v)[:40]!r} is not a time"
    for col, nullable in _JSON.items():
        v = m.get(col)
        if v is None and nullable:
            continue
        if not isinstance(v, (str, bytes)):
            return f"{col} is not readable JSON"
        try:
            # Only its shape is looked at here: the faster parse will do.
            value = _json.loads_shallow(v)
        except (TypeError, ValueError):
            return f"{col} is not readable JSON"
        if col in ("shape_json", "blocked_json", "env_json", "notes_json") and not isinstance(value, list):
            return f"{col} is not a list"
        if col in ("waiting_json", "held_json") and not isinstance(value, dict):
            return f"{col} is not an object"
        if col == "shape_json" and not all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in value):
            return "shape_json does not describe phases"
        if col == "blocked_json" and not all(isinstance(b, dict) and isinstance(b.get("kind"), str) for b in value):
            return "blocked_json does not describe block reasons"
    return None


def _plain(row: Any) -> dict[str, Any]:
    """The row's columns as a dict: looking each up through a driver row's
    mapping view cost more than the checks (a verify checks every row)."""
    fields = getattr(row, "_fields", None)
    if fields is not None:
        return dict(zip(fields, row, strict=True))
    return dict(row._mapping)


R = TypeVar("R")


def check(row: R) -> R:
    """The row itself, or a StoreError naming the run and the damage."""
    if row is None:
        return row
    why = problem(row)
    if why is not None:
        rid = getattr(row, "_mapping", {}).get("run_id")
        raise StoreError(
            f"run {str(rid)[:80]!r}: its stored record is damaged ({why}); nothing was changed", title="damaged record"
        )
    return row


#: Values a column may hold; anything else is damage.
_ENUMS: dict[tuple[str, str], frozenset[str]] = {
    ("phasegate_checkpoints", "kind"): frozenset({"phase", "rewind", "env", "degrade"}),
    ("phasegate_checkpoints", "status"): frozenset({"live", "discarded", "archived"}),
    ("phasegate_checkpoints", "output_state"): frozenset({"present", "pruned", "archived", "none"}),
    ("phasegate_effects", "state"): frozenset({"intent", "done"}),
    ("phasegate_decisions", "state"): frozenset({"pending", "applied", "void", "proposed"}),
}


_Spec = tuple[str, bool, type | None, frozenset[str] | None]
_specs: dict[tuple[str, frozenset[str]], list[_Spec]] = {}


def _table_spec(table: Any, as_bytes: frozenset[str] = frozenset()) -> list[_Spec]:
    """Each column's name, whether it may be empty, its Python type and its
    allowed values: worked out once per table, not once per row (a verify
    of a large store checks every checkpoint row). Text columns in
    `as_bytes` were read as their stored bytes (`_sqlite.stored_text`)."""
    spec = _specs.get((table.name, as_bytes))
    if spec is None:
        from sqlalchemy import String, Text  # loaded already: `table` is one

        spec = []
        for col in table.columns:
            try:
                want: type | None = col.type.python_type
            except NotImplementedError:
                want = None
            if isinstance(col.type, String) and not isinstance(col.type, Text):
                # Declared with sqlmodel's AutoString until the tables became
                # Core (its python_type was `object`): short text columns were
                # never type-checked here, and checking them now would turn
                # rows that read today into errors. A separate decision.
                want = None
            if col.name in as_bytes:
                want = bytes
            spec.append((col.name, bool(col.nullable or col.primary_key), want, _ENUMS.get((table.name, col.name))))
        _specs[(table.name, as_bytes)] = spec
    return spec


_Step = tuple[int | None, str, bool, type | None, frozenset[str] | None]
_plans: dict[tuple[str, frozenset[str], tuple[str, ...]], list[_Step]] = {}


def _plan(table: Any, fields: tuple[str, ...], as_bytes: frozenset[str]) -> list[_Step]:
    """`_table_spec` for rows with these fields, each column's place in the
    row beside it (None: absent, read as empty), without the columns no
    value can fail (empty allowed, any type, any value): worked out once per
    row shape, so a row is checked by position, not through a dict of its
    columns (a verify checks every checkpoint row; the dict and its lookups
    were most of the check's cost, bench/RESULTS.md, issue 43)."""
    key = (table.name, as_bytes, fields)
    plan = _plans.get(key)
    if plan is None:
        at = {f: i for i, f in enumerate(fields)}
        plan = [
            (at.get(name), name, may_be_empty, want, allowed)
            for name, may_be_empty, want, allowed in _table_spec(table, as_bytes)
            if not (may_be_empty and want is None and allowed is None)
        ]
        _plans[key] = plan
    return plan


def _column_problem(table: Any, row: Any, as_bytes: frozenset[str] = frozenset()) -> str | None:
    fields = getattr(row, "_fields", None)
    if fields is None:
        m = _plain(row)
        steps: list[_Step] = [(None, *spec) for spec in _table_spec(table, as_bytes)]
    else:
        m = None
        steps = _plan(table, tuple(fields), as_bytes)
    for at, name, may_be_empty, want, allowed in steps:
        v = (row[at] if at is not None else None) if m is None else m.get(name)
        if v is None:
            if may_be_empty:
                continue
            return f"{name} is empty"
        # The allowed values first: a state column is short text, which is
        # not type-checked below, and an unknown state must never be read as
        # some other state (the soak found an output_state flipped to
        # "pres,nt" read as a lost output, and its phase re-run).
        if allowed is not None and v not in allowed:
            return f"{name} {str(v)[:40]!r} is not one of {', '.join(sorted(allowed))}"
        if want is None:
            continue
        if want is bytes and isinstance(v, str):
            return f"{name} is stored as {v[:20]}, not text"  # the name of its type (`_sqlite.stored_text`)
        if want is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        elif want is int:
            ok = isinstance(v, int) and not isinstance(v, bool)
        else:
            ok = isinstance(v, want)
        if not ok:
            return f"{name} {str(v)[:40]!r} is not {want.__name__}"
    return None


def check_all(table: Any, result: Any, *, as_bytes: frozenset[str] = frozenset()) -> list[Any]:
    """Every row of a query on `table`, each checked like a run's row: a
    damaged one is a StoreError naming the table, the run and the column.
    The text columns named in `as_bytes` were read as their stored bytes."""
    try:
        rows = list(result)
    except (ValueError, TypeError, OverflowError) as exc:  # the driver could not even convert a value
        raise StoreError(
            f"a row of {table.name} is damaged ({exc}); nothing was changed", title="damaged record"
        ) from None
    for row in rows:
        why = _column_problem(table, row, as_bytes)
        if why is not None:
            rid = row._mapping.get("run_id")
            raise StoreError(
                f"a row of {table.name} (run {str(rid)[:80]!r}) is damaged ({why}); nothing was changed",
                title="damaged record",
            )
    return rows
