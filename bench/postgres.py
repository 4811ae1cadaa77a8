"""Figure 10: a phasegate checkpoint on PostgreSQL against the raw limit
there: one psycopg INSERT + COMMIT of the same bytes on a reused connection
to the same local server. Paired as the SQLite figure is (`workloads.Paired`):
each phase makes one raw commit on entry, and the boundary is the gap between
phase entries net of it. The server is the one `PHASEGATE_TEST_PG` names (the
test suite's default otherwise); without one the figure is skipped, with why."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from typing import Any

from phasegate import Engine

from . import payload
from ._util import Figure, at_most, median
from .workloads import Marks, Paired, chain_workflow, paired_workflow

PG = os.environ.get("PHASEGATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
NAME = "PostgreSQL checkpoint 1KB: phasegate / raw psycopg commit"


def _skipped(why: str) -> list[Figure]:
    return [Figure(NAME, None, "x", "<= 1.3x", None, group="10 postgres", skipped=why)]


def run(quick: bool, rounds: int) -> list[Figure]:
    try:
        import psycopg
    except ImportError:
        return _skipped("psycopg not installed: pip install '.[postgres]'")
    where = re.sub(r"://([^:@/]+):[^@/]*@", r"://\1:***@", PG)
    try:
        admin = psycopg.connect(PG, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        return _skipped(f"no PostgreSQL at {where}: {str(exc).strip().splitlines()[0]}")
    schema = f"pgbench_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{PG}{'&' if '?' in PG else '?'}options=-csearch_path%3D{schema}"
    try:
        return _measure(psycopg, url, where, quick, rounds)
    finally:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.close()


def _measure(psycopg: Any, url: str, where: str, quick: bool, rounds: int) -> list[Figure]:
    state = payload.state(1024)
    text = payload.text(1024)
    conn = psycopg.connect(url)
    conn.execute("CREATE TABLE raw_limit (id serial PRIMARY KEY, run_id text, payload text)")
    conn.commit()

    def commit() -> None:
        conn.execute("INSERT INTO raw_limit (run_id, payload) VALUES (%s, %s)", ("r", text))
        conn.commit()

    phases = 7 if quick else 13
    bound: list[float] = []
    raws: list[float] = []
    ratios: list[float] = []
    try:
        with Engine(url) as eng:
            eng.run(chain_workflow("warm", 2, state, Marks()), "warm")
            for r in range(rounds):
                pairs = _pairs(eng, state, phases, commit, r)
                bound.append(median([b for b, _ in pairs]))
                raws.append(median([c for _, c in pairs]))
                ratios.append(median([b / c for b, c in pairs]))
    finally:
        conn.close()
    ratio = median(ratios)
    tgt, met = at_most(ratio, 1.3)
    return [
        Figure(
            NAME,
            ratio,
            "x",
            tgt,
            met,
            group="10 postgres",
            baseline=f"raw psycopg INSERT+COMMIT of the same {len(text)} bytes: {median(raws) * 1e6:.0f} us (median)",
            detail=(
                f"phasegate boundary {median(bound) * 1e6:.0f} us (median), {where}; ratio = median of per-boundary "
                f"ratios, each boundary paired with the raw commit made beside it, {phases} phases a run"
            ),
            samples=ratios,
        )
    ]


def _pairs(eng: Engine, state: Any, phases: int, commit: Callable[[], None], r: int) -> list[tuple[float, float]]:
    paired = Paired(commit)
    eng.run(paired_workflow("paired", phases, state, paired), f"paired-{r}")
    return paired.pairs()
