"""Large stores for the resume and console figures, built quickly.

A handful of template runs are produced by the real engine (a completed run,
a failed one, and one blocked on a changed environment). Each is then copied
N times with SQLite inserts: the run id is rewritten inside every envelope and
the hash chain recomputed, so the copies are runs the engine itself verifies
(`engine.verify` on a sample is part of the build). Only the fixture is
written with synchronous=OFF; the figures run with the engine's own settings.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from phasegate import Engine, Workflow

_world = {"tariff": "2026-01"}

wf = Workflow("nightly-billing")


@wf.probe("tariff")
def _tariff() -> str:
    return _world["tariff"]


@wf.phase()
def load(ctx: Any) -> Any:
    return [{"id": f"inv-{i}", "amount": 100 + i} for i in range(4)]


@wf.phase(needs=["load"], probes=["tariff"])
def price(ctx: Any, load: Any) -> Any:
    return [dict(r, total=r["amount"] * 2) for r in load]


@wf.phase(needs=["price"])
def charge(ctx: Any, price: Any) -> Any:
    if ctx.inputs.get("fail"):
        raise RuntimeError("gateway said 503 Service Unavailable")
    return [{"id": r["id"], "charged": r["total"]} for r in price]


@wf.phase(needs=["charge"])
def report(ctx: Any, charge: Any) -> Any:
    return {"charged": len(charge), "total": sum(c["charged"] for c in charge)}


#: (template run id, share of the copies): mostly finished runs, as in a real store.
MIX: tuple[tuple[str, float], ...] = (("tmpl-completed", 0.8), ("tmpl-failed", 0.1), ("tmpl-blocked", 0.1))


def _templates(engine: Engine) -> None:
    _world["tariff"] = "2026-01"
    engine.run(wf, "tmpl-completed", {"customer": "acme"})
    engine.run(wf, "tmpl-failed", {"customer": "acme", "fail": True})
    engine.run(wf, "tmpl-blocked", {"customer": "acme", "fail": True})
    _world["tariff"] = "2026-02"  # the world moved: its resume blocks for an operator
    engine.run(wf, "tmpl-blocked")
    _world["tariff"] = "2026-01"


def _plan(ck: sqlite3.Row, rid: str, cols: list[str]) -> tuple[list[str], list[str], list[Any]]:
    """A template checkpoint cut where a copy's run id and its link go: the
    pieces around them, which goes in each gap ("id" or "prev"), and its row."""
    env = ck["envelope"]
    marks = [("id", '"run_id":"', rid)]
    if ck["prev_hash"] != "genesis":
        marks.append(("prev", '"prev":"', ck["prev_hash"]))
    found = []
    for slot, key, value in marks:
        text = key + value + '"'
        if env.count(text) != 1:
            raise RuntimeError(f"a template envelope of {rid} holds {text!r} {env.count(text)} times")
        at = env.index(text) + len(key)
        found.append((at, at + len(value), slot))
    found.sort()
    parts, slots, last = [], [], 0
    for start, stop, slot in found:
        parts.append(env[last:start])
        slots.append(slot)
        last = stop
    parts.append(env[last:])
    return parts, slots, [ck[c] for c in cols]


def build(path: Path, runs: int) -> dict[str, Any]:
    """A store at `path` holding `runs` runs (plus the three templates)."""
    with Engine(path) as engine:
        _templates(engine)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        # A rollback journal for the bulk load, not the WAL: pages appended to
        # the file are not journaled, where the WAL would write every byte
        # twice (to the log, then to the file). WAL again afterwards.
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA cache_size=-262144")
        conn.row_factory = sqlite3.Row
        run_cols = [r[1] for r in conn.execute("PRAGMA table_info(phasegate_runs)")]
        ck_cols = [r[1] for r in conn.execute("PRAGMA table_info(phasegate_checkpoints)") if r[1] != "id"]
        tmpl: dict[str, tuple[sqlite3.Row, list[sqlite3.Row]]] = {}
        for rid, _share in MIX:
            run = conn.execute("SELECT * FROM phasegate_runs WHERE run_id = ?", (rid,)).fetchone()
            cks = conn.execute(
                "SELECT * FROM phasegate_checkpoints WHERE run_id = ? AND status = 'live' ORDER BY epoch, seq", (rid,)
            ).fetchall()
            tmpl[rid] = (run, cks)
        conn.execute("BEGIN")
        counts = {rid: 0 for rid, _ in MIX}
        run_sql = f"INSERT INTO phasegate_runs ({', '.join(run_cols)}) VALUES ({', '.join('?' * len(run_cols))})"
        ck_sql = f"INSERT INTO phasegate_checkpoints ({', '.join(ck_cols)}) VALUES ({', '.join('?' * len(ck_cols))})"
        run_batch: list[tuple[Any, ...]] = []
        ck_batch: list[tuple[Any, ...]] = []
        copies: list[str] = []
        cum = [(rid, sum(s for _r, s in MIX[: i + 1])) for i, (rid, _s) in enumerate(MIX)]
        r_id, r_head, r_upd, r_cre = (run_cols.index(c) for c in ("run_id", "head_hash", "updated_at", "created_at"))
        c_id, c_env, c_hash, c_prev = (ck_cols.index(c) for c in ("run_id", "envelope", "payload_hash", "prev_hash"))
        plans = {rid: (list(run), [_plan(ck, rid, ck_cols) for ck in cks]) for rid, (run, cks) in tmpl.items()}
        sha = hashlib.sha256
        for i in range(runs):
            frac = (i * 0.6180339887) % 1.0  # spread the kinds evenly through the ids
            rid = next(r for r, c in cum if frac < c)
            counts[rid] += 1
            new_id = f"{rid.removeprefix('tmpl-')}-{i:07d}"
            if len(copies) < 30:
                copies.append(new_id)
            run_row, ck_plans = plans[rid]
            prev = "genesis"
            for parts, slots, row in ck_plans:
                # The template's envelope with the new run id and link spliced in; its hash chained on.
                fill = {"id": new_id, "prev": prev}
                env = parts[0] + "".join(fill[slot] + part for slot, part in zip(slots, parts[1:], strict=True))
                digest = sha(env.encode()).hexdigest()
                row[c_id], row[c_env], row[c_hash], row[c_prev] = new_id, env, digest, prev
                ck_batch.append(tuple(row))
                prev = digest
            rv = list(run_row)
            rv[r_id], rv[r_head] = new_id, prev
            rv[r_upd] -= runs - i
            rv[r_cre] -= runs - i
            run_batch.append(tuple(rv))
            if len(ck_batch) > 50000:
                conn.executemany(run_sql, run_batch)
                conn.executemany(ck_sql, ck_batch)
                run_batch, ck_batch = [], []
        conn.executemany(run_sql, run_batch)
        conn.executemany(ck_sql, ck_batch)
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    # The copies must be runs the engine accepts, not lookalikes.
    with Engine(path) as engine:
        for rid in copies:
            rep = engine.verify(rid, record=False)
            if not rep[0].ok:
                raise RuntimeError(f"fixture copy {rid} does not verify: {rep[0].to_json()['failure']}")
    return {"runs": runs, "kinds": counts, "verified_sample": len(copies), "bytes": path.stat().st_size}
