"""Figure 6: integrity check throughput. `Engine.verify()` over every stored
checkpoint, in MB/s of envelope and output bytes checked, against
`hashlib.sha256` over the same bytes already in memory. The default verify
checks hashes and links over the stored bytes; `deep=True` (`verify --deep`)
parses every output too, and is reported beside it without a target."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from phasegate import Engine

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
                for r in eng.store.chain(conn, rid, 0):
                    blobs.append(r.envelope.encode())
                    if r.output_json is not None:
                        blobs.append(r.output_json.encode())
        total = sum(len(b) for b in blobs)
        eng.verify(record=False)  # warm the page cache for both sides
        v: list[float] = []
        d: list[float] = []
        h: list[float] = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            reports = eng.verify(record=False)
            t1 = time.perf_counter()
            for b in blobs:
                hashlib.sha256(b).hexdigest()
            t2 = time.perf_counter()
            deep = eng.verify(record=False, deep=True)
            t3 = time.perf_counter()
            assert all(r["ok"] for r in reports) and all(r["ok"] for r in deep)
            checked = sum(int(r["bytes"]) for r in reports)
            v.append(checked / (t1 - t0) / 1e6)
            h.append(total / (t2 - t1) / 1e6)
            d.append(checked / (t3 - t2) / 1e6)
    V, H, D = median(v), median(h), median(d)
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
                "hashes each, parses the envelopes, not the outputs)"
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
    ]
