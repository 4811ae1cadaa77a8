"""Upgrading an older store, in the caller's one transaction.

Version 2 added tables (sources, alerts). Version 3 seals the effect ledger
(engine/history/seals.py): it adds columns, then links and seals each run's existing
effect records in the order they were written. A store written before seals
existed has nothing to check them against, so the upgrade vouches for the
records as they are at that moment; damage done before it is not detectable
afterwards (run `phasegate verify` before upgrading a store you doubt).
Version 4 added the workers' heartbeat table (nothing to fill: a worker
writes its row when it starts), and each run's stored attention rank
(runorder.py), filled from its status and decisions, with the indexes the
runs list pages by.
Version 5 seals decisions and policy changes (engine/history/trail.py): it
adds columns, then links and seals each run's existing decisions and the
policy's existing changes in the order they were written, and names the
last of each. As with version 3, the upgrade vouches for those rows as they
are at that moment; what it cannot vouch for is a state no recorded
transition explains (a decision of a listed action applied without a
second), which `verify` and the start sequence still find afterwards.
Version 6 adds the columns of waiting, paused and cancelled runs (when a
waiting run is due, what it waits for, an operator's hold): nothing to fill.
Version 7 seals the policy's head (meta `policy_head`: the newest change and
the count as one seal), so a deleted tail with the head moved back is found.
The upgrade vouches for the head as it stands, under the store's key where
the upgrading process holds it; a keyed store upgraded by a process without
its key is left without a head seal, which is damage (decisions are refused)
until the policy is recorded anew with the key.
Version 8 adds the messages table (`phasegate send`, `ctx.recv`): nothing
to fill, nothing was ever sent to a run of an older store.
It also adds the runs' code versions (`code_json`, run/codeversion.py):
nothing to fill (a run started before it shows no code version until its
next attempt records one; its `started` is then that attempt's).
It also adds the running phase's last-known progress (`progress_json`,
run/progress.py): nothing to fill, a run reports it as it goes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, inspect, select, text, update

from ..history import seals, trail
from ..history.keys import SealKey
from . import _paging
from .schema import (
    ADDED_COLUMNS,
    ADDED_IN,
    ADDED_INDEXES,
    POLICY_COUNT,
    POLICY_HEAD,
    POLICY_LAST,
    SEAL_KEY,
    decisions,
    effects,
    meta,
    metadata,
    policy,
    runs,
)


def upgrade(conn: Connection, version: int, held_key: SealKey | None = None) -> set[str]:
    """Bring a store at `version` to the current schema; returns the tables
    added. `held_key`: the seal key this process was given (version 7 seals
    the policy's head under it when it is the store's)."""
    added = [metadata.tables[n] for n, v in ADDED_IN.items() if version < v]
    metadata.create_all(conn, tables=added, checkfirst=True)
    have: dict[str, set[str]] = {}
    for (table, column), (since, ddl) in ADDED_COLUMNS.items():
        if version >= since:
            continue
        if table not in have:
            have[table] = {c["name"] for c in inspect(conn).get_columns(table)}
        if column not in have[table]:  # a half-upgraded store, or one a test wound back
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}"))
    if version < 3:
        _seal_effects(conn)
    if version < 4:
        # Every run's stored attention rank, from its status and decisions, in one statement.
        conn.execute(update(runs).values(attention_rank=_paging.rank_sql()))
    if version < 5:
        _seal_decisions(conn)
        _seal_policy(conn)
    if version < 7:
        _seal_policy_head(conn, held_key)
    for _name, (since, index) in ADDED_INDEXES.items():
        if version < since:
            index.create(conn, checkfirst=True)
    return {t.name for t in added}


def _seal_effects(conn: Connection) -> None:
    last: dict[str, str] = {}
    count: dict[str, int] = {}
    for row in conn.execute(select(effects).order_by(effects.c.id)):
        rec: dict[str, Any] = dict(row._mapping)
        rec["prev_key"] = last.get(rec["run_id"])
        conn.execute(
            update(effects)
            .where(effects.c.id == rec["id"])
            .values(prev_key=rec["prev_key"], seal=seals.seal(rec, None))
        )
        last[rec["run_id"]] = rec["key"]
        count[rec["run_id"]] = count.get(rec["run_id"], 0) + 1
    for run_id, key in last.items():
        conn.execute(update(runs).where(runs.c.run_id == run_id).values(effects_last=key, effects_count=count[run_id]))


def _seal_decisions(conn: Connection) -> None:
    last: dict[str, int] = {}
    count: dict[str, int] = {}
    for row in conn.execute(select(decisions).order_by(decisions.c.id)).fetchall():
        rec: dict[str, Any] = dict(row._mapping)
        rid = str(rec["run_id"])
        rec["prev_id"] = last.get(rid)
        conn.execute(
            update(decisions)
            .where(decisions.c.id == rec["id"])
            .values(prev_id=rec["prev_id"], seal=trail.decision_seal(rec, None))
        )
        last[rid] = int(rec["id"])
        count[rid] = count.get(rid, 0) + 1
    for rid, did in last.items():
        conn.execute(update(runs).where(runs.c.run_id == rid).values(decisions_last=did, decisions_count=count[rid]))


def _seal_policy(conn: Connection) -> None:
    last: int | None = None
    n = 0
    for row in conn.execute(select(policy).order_by(policy.c.id)).fetchall():
        rec: dict[str, Any] = dict(row._mapping)
        rec["prev_id"] = last
        conn.execute(
            update(policy).where(policy.c.id == rec["id"]).values(prev_id=last, seal=trail.policy_seal(rec, None))
        )
        last, n = int(rec["id"]), n + 1
    for key, value in ((POLICY_LAST, "" if last is None else str(last)), (POLICY_COUNT, str(n))):
        if conn.execute(update(meta).where(meta.c.key == key).values(value=value)).rowcount == 0:
            conn.execute(meta.insert().values(key=key, value=value))


def _seal_policy_head(conn: Connection, held_key: SealKey | None) -> None:
    """The policy's head sealed as it stands: plain on a plain store, under
    the store's key where this process holds it, else left unsealed."""
    got = {str(r.key): str(r.value or "") for r in conn.execute(select(meta.c.key, meta.c.value))}
    stored = got.get(SEAL_KEY) or None
    if stored is not None and (held_key is None or held_key.key_id != stored):
        return  # keyed under a key not held here: verify says the head is unsealed
    key = held_key if stored is not None else None
    last = int(got[POLICY_LAST]) if got.get(POLICY_LAST, "").isdigit() else None
    count = int(got[POLICY_COUNT]) if got.get(POLICY_COUNT, "").isdigit() else 0
    if last is None and not count:
        return  # no policy recorded: nothing to anchor
    seal = conn.execute(select(policy.c.seal).where(policy.c.id == last)).scalar() if last is not None else None
    value = trail.policy_head_seal(last, count, seal, key)
    if conn.execute(update(meta).where(meta.c.key == POLICY_HEAD).values(value=value)).rowcount == 0:
        conn.execute(meta.insert().values(key=POLICY_HEAD, value=value))
