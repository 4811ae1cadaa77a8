"""Figure 6: integrity check throughput. `Engine.verify()` with its defaults
(what `phasegate verify` runs: failures recorded on their runs) over every
stored checkpoint, in MB/s of envelope and output bytes checked, against
`hashlib.sha256` over the same bytes already in memory, in one thread. The
default verify checks hashes and links over the stored bytes, and on a
machine with a core to spare verifies a large store in two threads
(`upkeep/verify.py` `Verifier._lane`; the detail says which ran); `deep=True`
(`verify --deep`) parses every output too, and is reported beside it
without a target. Two reads of the same rows with nothing else done are
measured beside it: the plain one (text decoded, encoded back, hashed) and
the least a one-thread verify must do (bytes off a mapped file, hashed)."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

from phasegate import Engine
from phasegate.upkeep import verify as verify_module

from . import payload
from ._util import Figure, at_least, median
from .workloads import Marks, chain_workflow


def build(path: Path, runs: int, nbytes: int) -> None:
    state = payload.state(nbytes)
    with Engine(path) as eng:
        wf = chain_workflow("verify", 4, state, Marks())
        for i in range(runs):
            eng.run(wf, f"v-{i:04d}")


def run(quick: bool, rounds: int, path: Path) -> list[Figure]:
    with Engine(path) as eng:
        with eng.store.read() as conn:
            blobs = []
            for rid in eng.run_ids():
                for r in eng.store.checkpoints.chain(conn, rid, 0):
                    blobs.append(r.envelope.encode())
                    if r.output_json is not None:
                        blobs.append(r.output_json.encode())
        total = sum(len(b) for b in blobs)
        eng.verify()  # warm the page cache for both sides
        v: list[float] = []
        d: list[float] = []
        h: list[float] = []
        lim: list[float] = []
        least: list[float] = []
        lanes: list[float] = []
        for _ in range(rounds):
            lanes.append(verify_module._spare_cores())
            t0 = time.perf_counter()
            reports = eng.verify()
            t1 = time.perf_counter()
            for b in blobs:
                hashlib.sha256(b).hexdigest()
            t2 = time.perf_counter()
            deep = eng.verify(record=False, deep=True)
            t3 = time.perf_counter()
            limit_bytes = _read_and_hash(path)
            t4 = time.perf_counter()
            least_bytes = _read_bytes_and_hash(path)
            t5 = time.perf_counter()
            lim.append(limit_bytes / (t4 - t3) / 1e6)
            least.append(least_bytes / (t5 - t4) / 1e6)
            assert all(r.ok for r in reports) and all(r.ok for r in deep)
            checked = sum(r.bytes for r in reports)
            v.append(checked / (t1 - t0) / 1e6)
            h.append(total / (t2 - t1) / 1e6)
            d.append(checked / (t3 - t2) / 1e6)
    two = sum(1 for s in lanes if s >= 1)
    ran = (
        "in two threads"
        if two == len(lanes)
        else "in one thread (no core to spare)"
        if not two
        else f"in two threads in {two} of {len(lanes)} rounds"
    )
    V, H, D, L, LB = median(v), median(h), median(d), median(lim), median(least)
    tgt, met = at_least(V / H, 0.7, "x")
    return [
        Figure(
            "verify throughput / hashlib",
            V / H,
            "x",
            tgt,
            met,
            group="6 verify",
            baseline=f"hashlib.sha256 over the same {total / 1e6:.1f} MB in memory: {H:.0f} MB/s",
            detail=(
                f"Engine.verify(): {V:.0f} MB/s over {len(blobs)} envelopes and outputs (reads them from SQLite, "
                f"hashes each, parses the envelopes, not the outputs), {ran}"
            ),
            samples=[a / b for a, b in zip(v, h, strict=True)],
        ),
        Figure("verify throughput", V, "MB/s", None, None, group="6 verify", samples=v),
        Figure(
            "verify --deep throughput / hashlib",
            D / H,
            "x",
            None,
            None,
            group="6 verify",
            baseline=f"hashlib.sha256 over the same bytes: {H:.0f} MB/s",
            detail=f"Engine.verify(deep=True): {D:.0f} MB/s (parses every output too)",
            samples=[a / b for a, b in zip(d, h, strict=True)],
        ),
        _limit(
            "verify: raw sqlite3 read + sha256 / hashlib",
            lim,
            h,
            f"the limit of a verify that reads its bytes from SQLite: {L:.0f} MB/s for a plain sqlite3 "
            "SELECT of every envelope and output and a sha256 of each, nothing else",
        ),
        _limit(
            "verify: raw sqlite3 read as bytes, mapped + sha256 / hashlib",
            least,
            h,
            f"the least a one-thread verify must do: {LB:.0f} MB/s for one sqlite3 SELECT of every envelope "
            "and output as stored bytes in index order, off the file mapped into memory, and a sha256 of each",
        ),
    ]


def _limit(name: str, rates: list[float], hashlib_rates: list[float], detail: str) -> Figure:
    """A one-thread reading limit beside verify, as a ratio to hashlib in memory (no target)."""
    return Figure(
        name,
        median(rates) / median(hashlib_rates),
        "x",
        None,
        None,
        group="6 verify",
        baseline=f"hashlib.sha256 over the same bytes in memory: {median(hashlib_rates):.0f} MB/s",
        detail=detail,
        samples=[a / b for a, b in zip(rates, hashlib_rates, strict=True)],
    )


def _read_and_hash(path: Path) -> int:
    """Bytes read and hashed by the least a verify must do: one query, every
    envelope and output read, each hashed."""
    conn = sqlite3.connect(path)
    try:
        n = 0
        for env, out in conn.execute("SELECT envelope, output_json FROM phasegate_checkpoints WHERE status = 'live'"):
            hashlib.sha256(env.encode()).hexdigest()
            n += len(env)
            if out is not None:
                hashlib.sha256(out.encode()).hexdigest()
                n += len(out)
        return n
    finally:
        conn.close()


def _read_bytes_and_hash(path: Path) -> int:
    """As `_read_and_hash`, the way a verify reads now: the values as their
    stored bytes (no decode, no encode back), in the index's order, off the
    file mapped into memory."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA mmap_size=2147483648")
        n = 0
        for env, out in conn.execute(
            "SELECT CAST(envelope AS BLOB), CAST(output_json AS BLOB) FROM phasegate_checkpoints"
            " WHERE status = 'live' ORDER BY run_id, epoch, seq"
        ):
            hashlib.sha256(env).hexdigest()
            n += len(env)
            if out is not None:
                hashlib.sha256(out).hexdigest()
                n += len(out)
        return n
    finally:
        conn.close()
