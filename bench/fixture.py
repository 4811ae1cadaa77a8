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


def build(path: Path, runs: int) -> dict[str, Any]:
    """A store at `path` holding `runs` runs (plus the three templates)."""
    with Engine(path) as engine:
        _templates(engine)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
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
        for i in range(runs):
            frac = (i * 0.6180339887) % 1.0  # spread the kinds evenly through the ids
            rid = next(r for r, c in cum if frac < c)
            counts[rid] += 1
            new_id = f"{rid.removeprefix('tmpl-')}-{i:07d}"
            if len(copies) < 30:
                copies.append(new_id)
            run, cks = tmpl[rid]
            prev = "genesis"
            for ck in cks:
                env = ck["envelope"].replace(f'"run_id":"{rid}"', f'"run_id":"{new_id}"')
                if ck["prev_hash"] != "genesis":
                    env = env.replace(f'"prev":"{ck["prev_hash"]}"', f'"prev":"{prev}"')
                digest = hashlib.sha256(env.encode()).hexdigest()
                vals = dict(ck)
                vals.update(run_id=new_id, envelope=env, payload_hash=digest, prev_hash=prev)
                ck_batch.append(tuple(vals[c] for c in ck_cols))
                prev = digest
            rv = dict(run)
            rv.update(
                run_id=new_id,
                head_hash=prev,
                updated_at=run["updated_at"] - (runs - i),
                created_at=run["created_at"] - (runs - i),
            )
            run_batch.append(tuple(rv[c] for c in run_cols))
            if len(ck_batch) > 20000:
                conn.executemany(run_sql, run_batch)
                conn.executemany(ck_sql, ck_batch)
                run_batch, ck_batch = [], []
        conn.executemany(run_sql, run_batch)
        conn.executemany(ck_sql, ck_batch)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("ANALYZE")
    finally:
        conn.close()
    # The copies must be runs the engine accepts, not lookalikes.
    with Engine(path) as engine:
        for rid in copies:
            rep = engine.verify(rid, record=False)
            if not rep[0]["ok"]:
                raise RuntimeError(f"fixture copy {rid} does not verify: {rep[0]['failure']}")
    return {"runs": runs, "kinds": counts, "verified_sample": len(copies), "bytes": path.stat().st_size}
