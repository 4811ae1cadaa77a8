"""`phasegate status` (the list of runs) read straight through the sqlite3 driver (store/_quickread.py).

A person types `phasegate status` to look, and it should answer in about the
time a command takes to start: most of the engine's start is importing
SQLAlchemy (bench/: cli start). For an SQLite store at this engine's format,
with no setting to check, the runs table is read with one plain query and
put in the attention order by the same rules as the engine's list
(runorder.py), and each line is built by the same `RunSummary.from_row`; the
claims in force are read with a second one (`Store.claims.current`'s
rule), each made a `ClaimView` as the engine makes it.
Anything else (a URL, an older or newer store, a damaged row, a driver
error, a lease or retention setting in the environment, which the engine
checks) answers None, and the engine lists the runs with its own checks and
errors: the output is the same either way.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import StoreError
from ..run.lease import holder_alive
from ..store import _quickread, _rowcheck, runorder
from .models import ClaimView, RunSummary

#: Settings the engine checks when it opens a store: with one set, it opens.
_CHECKED_SETTINGS = ("PHASEGATE_LEASE_SECONDS", "PHASEGATE_RETENTION_DAYS")

#: A claim row's columns the engine requires (`_rowcheck.check_all`), and its times.
_CLAIM_NOT_NULL = ("run_id", "operator", "account", "claimed_at", "expires_at")
_CLAIM_TIMES = ("claimed_at", "expires_at", "released_at")


class _Row:
    """A driver row read as the engine reads one (attributes and `_mapping`)."""

    __slots__ = ("_mapping",)

    def __init__(self, mapping: dict[str, Any]) -> None:
        self._mapping = mapping

    def __getattr__(self, name: str) -> Any:
        try:
            return self._mapping[name]
        except KeyError:
            raise AttributeError(name) from None


class Listing(NamedTuple):
    runs: list[RunSummary]
    """Every run, in attention order."""
    claims: dict[str, ClaimView]
    """The claim in force on a run, by run id."""


def _claim(values: dict[str, Any]) -> ClaimView | None:
    """A claim row as the engine reads it; None when the engine would call it damaged."""
    if any(values.get(k) is None for k in _CLAIM_NOT_NULL):
        return None
    for k in _CLAIM_TIMES:
        v = values.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
            return None
    return ClaimView.from_row(_Row(values))


def runs(target: str, now: float | None = None) -> Listing | None:
    """Every run in attention order, as `Engine.runs()` lists them, and the
    claims in force on them; None when the engine must answer instead."""
    now = time.time() if now is None else now
    if "://" in target or any(os.environ.get(k) for k in _CHECKED_SETTINGS):
        return None
    path = Path(target).expanduser().absolute()
    if not path.is_file():
        return None
    got = _quickread.read(path, now)
    if got is None:
        return None
    rows = [_Row(r) for r in got.runs]
    held: dict[str, ClaimView] = {}
    for mapping in got.claims:
        claim = _claim(mapping)
        if claim is None:
            return None  # a damaged claim: the engine says so
        held[mapping["run_id"]] = claim
    order = runorder.Order.parse("attention")
    keyed: list[tuple[Any, tuple[Any, ...]]] = []
    try:
        for r in rows:
            _rowcheck.check(r)
            r._mapping["pending_decision"] = bool(r._mapping["pending_decision"])
            rank = None
            if r.status == "running" and not holder_alive(r, now):
                rank = runorder.interrupted_rank(r.pending_decision)
            keyed.append((r, order.key_of(r, rank)))
    except StoreError:
        return None  # a damaged row: the engine's list shows it as such
    keyed.sort(key=lambda rk: order.sort_tuple(rk[1]))
    return Listing([RunSummary.from_row(r, now, key) for r, key in keyed], held)
