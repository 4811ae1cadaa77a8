"""Figures 1 and 2: the raw limit, and the cost of one phase boundary in
phasegate, LangGraph (one super-step) and DBOS (one step), carrying the same state.

An engine's boundary cost is measured the same way for all three: the time
of a whole run with `big` boundaries minus one with `small`, divided by the
difference, so start-up costs cancel and a checkpoint written in the
background (LangGraph's default `durability="async"`) still counts once the
run has to wait for it."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phasegate import Engine

from . import payload, raw
from ._util import Figure, at_most, median, scratch, scratch_in
from .peers import dbos as dbos_peer
from .peers import langgraph as lg_peer
from .workloads import Marks, Paired, chain_workflow, paired_workflow

log = logging.getLogger("bench")


#: The issue's line for each size: the raw commit carries bytes that are
#: already serialized; an engine must encode and hash them first, which grows
#: with the payload.
LIMITS = {"1KB": 1.3, "64KB": 1.5, "1MB": 2.0}


@dataclass
class Settings:
    rounds: int
    sizes: dict[str, int]
    commits: dict[str, int]
    small: int
    big: int
    peers: bool
    peer_big: int = 23
    """Boundaries of the long run in the peer comparison: a wide difference
    keeps the marginal cost above the noise of the two runs' totals."""
    peer_rounds: int = 7


def settings(quick: bool, rounds: int) -> Settings:
    if quick:
        return Settings(rounds, {"1KB": 1024, "64KB": 65536}, {"1KB": 12, "64KB": 8}, 2, 7, peers=False)
    return Settings(
        rounds, dict(payload.SIZES), {"1KB": 30, "64KB": 20, "1MB": 12}, 3, 13, peers=True, peer_rounds=max(rounds, 7)
    )


def _phasegate(d: Path, state: Any, s: Settings) -> tuple[float, float]:
    """(marginal seconds per boundary, median gap between phase entries) of one round."""
    with Engine(d / "pg.db") as eng:
        warm = chain_workflow("warm", 2, state, Marks())
        eng.run(warm, "warm")
        small_m, big_m = Marks(), Marks()
        small = chain_workflow(f"c{s.small}", s.small, state, small_m)
        big = chain_workflow(f"c{s.peer_big}", s.peer_big, state, big_m)
        t0 = time.perf_counter()
        eng.run(small, "small")
        t1 = time.perf_counter()
        eng.run(big, "big")
        t2 = time.perf_counter()
    return ((t2 - t1) - (t1 - t0)) / (s.peer_big - s.small), median(big_m.gaps())


def _langgraph(d: Path, state: Any, s: Settings) -> float:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(d / "lg.db", check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        apps = {k: lg_peer._graph(k, state, Marks()).compile(checkpointer=saver) for k in (2, s.small, s.peer_big)}
        apps[2].invoke({"data": state}, {"configurable": {"thread_id": "warm"}})
        t0 = time.perf_counter()
        apps[s.small].invoke({"data": state}, {"configurable": {"thread_id": uuid.uuid4().hex}})
        t1 = time.perf_counter()
        apps[s.peer_big].invoke({"data": state}, {"configurable": {"thread_id": uuid.uuid4().hex}})
        t2 = time.perf_counter()
    finally:
        conn.close()
    return ((t2 - t1) - (t1 - t0)) / (s.peer_big - s.small)


def _paired(d: Path, state: Any, text: str, phases: int) -> list[tuple[float, float]]:
    """(boundary, raw commit) pairs of one run: see `workloads.Paired`."""
    conn = raw.connect(d / "paired-raw.db", "FULL")
    try:
        paired = Paired(raw.committer(conn, text))
        with Engine(d / "paired-pg.db") as eng:
            eng.run(chain_workflow("warm", 2, state, Marks()), "warm")
            eng.run(paired_workflow("paired", phases, state, paired), "paired")
    finally:
        conn.close()
    return paired.pairs()


def _json_parts(state: Any, text: str) -> dict[str, float]:
    """Median microseconds of the JSON work a boundary does on the output:
    the canonical encode (bytes), the parse of a copy for a later phase (from
    those bytes), the sha256 over them."""
    from phasegate import _json

    data = text.encode("utf-8")
    reps = max(5, min(200, 2_000_000 // max(len(text), 1)))
    out: dict[str, float] = {}
    for name, fn in (
        ("encode", lambda: _json.encode(state)),
        ("parse", lambda: _json.loads_canonical(data, True)),
        ("sha256", lambda: _json.sha256(data)),
    ):
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        out[name] = median(ts) * 1e6
    return out


def _tmpfs() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def run(quick: bool, rounds: int) -> list[Figure]:
    s = settings(quick, rounds)
    figs: list[Figure] = []
    lg_skip = "--quick runs no peers" if not s.peers else lg_peer.available()
    dbos_skip = "--quick runs no peers" if not s.peers else dbos_peer.available()
    durability: dict[str, str] = {"phasegate": "WAL, synchronous=FULL: fsync on every commit"}
    with scratch() as d:
        if lg_skip is None:
            durability["langgraph"] = lg_peer.durability(d / "lg-dur.db")
        if dbos_skip is None:
            try:
                durability["dbos"] = dbos_peer.durability(d / "dbos-dur.db")
            except Exception as exc:  # noqa: BLE001 - a peer that cannot start here is skipped, with why
                dbos_skip = f"could not start: {exc}"[:300]
    shm = _tmpfs()
    for label, nbytes in s.sizes.items():
        state = payload.state(nbytes)
        text = payload.text(nbytes)
        full: list[float] = []  # raw FULL commit, median per round
        normal: list[float] = []
        bound: list[float] = []  # phasegate boundary, median per round
        ratios: list[float] = []  # median paired ratio per round
        cpu_pg: list[float] = []
        cpu_raw: list[float] = []
        pg: list[float] = []  # marginal, for the peer comparison
        lg: list[float] = []
        pg_gap: list[float] = []
        phases = s.big
        for r in range(s.rounds):
            with scratch() as d:
                pairs = _paired(d, state, text, phases)
                bound.append(median([b for b, _ in pairs]))
                full.append(median([c for _, c in pairs]))
                ratios.append(median([b / c for b, c in pairs]))
                normal.append(raw.commit_cost(d / "normal.db", text, "NORMAL", s.commits[label]))
                if s.peers:
                    marginal, gap = _phasegate(d, state, s)
                    pg.append(marginal)
                    pg_gap.append(gap)
                    if lg_skip is None:
                        lg.append(_langgraph(d, state, s))
            if shm is not None:
                with scratch_in(shm) as d:
                    pairs = _paired(d, state, text, phases)
                    cpu_pg.append(median([b for b, _ in pairs]))
                    cpu_raw.append(median([c for _, c in pairs]))
            log.info("checkpoint %s round %d: raw %.0fus pg %.0fus", label, r, full[-1] * 1e6, bound[-1] * 1e6)
        for _ in range(s.peer_rounds - s.rounds if s.peers else 0):
            with scratch() as d:
                marginal, gap = _phasegate(d, state, s)
                pg.append(marginal)
                pg_gap.append(gap)
                if lg_skip is None:
                    lg.append(_langgraph(d, state, s))
        dbos: list[float] = []
        if dbos_skip is None:
            with scratch() as d:
                try:
                    dbos = dbos_peer.step_costs(d / "dbos.db", nbytes, s.peer_rounds, s.small, s.peer_big)
                except Exception as exc:  # noqa: BLE001
                    dbos_skip = f"failed: {exc}"[:300]
        R, N, B = median(full), median(normal), median(bound)
        g = f"checkpoint {label}"
        figs.append(
            Figure(
                f"raw commit {label}, WAL synchronous=FULL",
                R * 1e6,
                "us",
                group="1 raw limit",
                detail=f"{len(text)} bytes per insert+commit on a reused connection, one beside each phasegate boundary",
                samples=[x * 1e6 for x in full],
            )
        )
        figs.append(
            Figure(
                f"raw commit {label}, WAL synchronous=NORMAL",
                N * 1e6,
                "us",
                group="1 raw limit",
                detail=f"no fsync per commit; {s.commits[label]} back-to-back commits per run",
                samples=[x * 1e6 for x in normal],
            )
        )
        ratio = median(ratios)
        tgt, met = at_most(ratio, LIMITS.get(label, 1.3))
        figs.append(
            Figure(
                f"{g}: phasegate / raw FULL",
                ratio,
                "x",
                tgt,
                met,
                group="2 checkpoint",
                baseline=f"raw FULL commit of the same {len(text)} bytes, {R * 1e6:.0f} us (median)",
                detail=f"phasegate boundary {B * 1e6:.0f} us (median); ratio = median of per-boundary ratios, each boundary paired with the raw commit made beside it; {durability['phasegate']}",
                samples=ratios,
            )
        )
        if cpu_pg:
            C, CR = median(cpu_pg), median(cpu_raw)
            parts = _json_parts(state, text)
            figs.append(
                Figure(
                    f"{g}: CPU cost without fsync (tmpfs), phasegate - raw",
                    (C - CR) * 1e6,
                    "us",
                    None,
                    None,
                    group="2 checkpoint",
                    baseline=f"raw commit on tmpfs {CR * 1e6:.0f} us",
                    detail=f"phasegate boundary on tmpfs {C * 1e6:.0f} us: what our code adds, with the disk taken out; "
                    f"of it, measured beside: canonical JSON encode of the output {parts['encode']:.0f} us, "
                    f"re-parse of it (the copy later phases get) {parts['parse']:.0f} us, sha256 {parts['sha256']:.0f} us",
                    samples=[(a - b) * 1e6 for a, b in zip(cpu_pg, cpu_raw, strict=True)],
                )
            )
        P = median(pg) if pg else None
        for key, name, skip, vals in (
            ("langgraph", lg_peer.NAME, lg_skip, lg),
            ("dbos", dbos_peer.NAME, dbos_skip, dbos),
        ):
            if skip is not None or not vals or P is None:
                figs.append(
                    Figure(
                        f"{g}: phasegate / {name}",
                        None,
                        "x",
                        "< 1x",
                        None,
                        group="2 checkpoint",
                        skipped=skip or "no result",
                    )
                )
                continue
            V = median(vals)
            figs.append(
                Figure(
                    f"{g}: phasegate / {name}",
                    P / V,
                    "x",
                    "< 1x",
                    P < V,
                    group="2 checkpoint",
                    baseline=f"{name}: {V * 1e6:.0f} us per {'super-step' if key == 'langgraph' else 'step'}, {V / R:.1f}x raw FULL ({durability[key]})",
                    detail=f"phasegate {P * 1e6:.0f} us per boundary (median gap between its phase entries in the same runs: {median(pg_gap) * 1e6:.0f} us); each engine as (run with {s.peer_big} - run with {s.small}) / {s.peer_big - s.small}, median of {len(vals)} rounds",
                    samples=[x * 1e6 for x in vals],
                )
            )
    return figs
