"""Figure 3b (#29): what a keyed seal (PHASEGATE_SEAL_KEY_FILE, an HMAC
under a key outside the store) costs against the plain hash, on a 1 KB
checkpoint and on an effect: keyed and unkeyed runs alternate in the same
process, each on its own store, and the ratio is the median of the pairs'
ratios. The stores are on a tmpfs where there is one (/dev/shm): with the
fsync taken out what is left is CPU, so the ratio is the seal's share at its
largest (on a disk, fsync latency varies more between two runs than the seal
costs). The seal's own CPU time (HMAC-SHA256 against SHA-256) is in the detail."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from phasegate import Engine, Workflow
from phasegate.history import keys, seals

from ._util import Figure, at_most, median, scratch, scratch_in
from .workloads import effects_workflow

KEY_ENV = keys.KEY_FILE_ENV
OUTPUT = "x" * 1000
"""A 1 KB phase output (as JSON text, with its quotes: 1002 bytes)."""


def run(quick: bool, rounds: int) -> list[Figure]:
    phases = 15 if quick else 40
    count = 15 if quick else 40
    return [
        _figure("1 KB checkpoint", rounds, lambda d: _checkpoints(d, phases), phases, "checkpoints"),
        _figure("effect (intent + completion)", rounds, lambda d: _effects(d, count), count, "effects"),
    ]


def _workflow(phases: int) -> Workflow:
    wf = Workflow("sealed-chain")
    for i in range(phases):

        def phase(ctx: Any, **_: Any) -> str:
            return OUTPUT

        wf.phase(f"p{i:02d}")(phase)
    return wf


def _checkpoints(d: Path, phases: int) -> float:
    with Engine(d / "c.db") as eng:
        eng.run(_workflow(2), "warm")
        t0 = time.perf_counter()
        eng.run(_workflow(phases), "r1")
        return time.perf_counter() - t0


def _effects(d: Path, count: int) -> float:
    with Engine(d / "e.db") as eng:
        eng.run(effects_workflow("warm", 2, lambda: None, {"ok": 1}), "warm")
        t0 = time.perf_counter()
        eng.run(effects_workflow("effects", count, lambda: None, {"ok": 1}), "r1")
        return time.perf_counter() - t0


SHM = Path("/dev/shm")


def _place() -> Any:
    """A scratch folder on a tmpfs (/dev/shm) where there is one, else on the disk."""
    return scratch_in(SHM, "pgbench-seal-") if SHM.is_dir() and os.access(SHM, os.W_OK) else scratch("pgbench-seal-")


def _keyed(d: Path, keyed: bool) -> None:
    if keyed:
        key = d / "seal.key"
        key.write_bytes(os.urandom(32).hex().encode())
        key.chmod(0o600)
        os.environ[KEY_ENV] = str(key)
    else:
        os.environ.pop(KEY_ENV, None)


def _figure(what: str, rounds: int, timed: Callable[[Path], float], n: int, unit: str) -> Figure:
    saved = os.environ.get(KEY_ENV)
    plain: list[float] = []
    keyed: list[float] = []
    ratios: list[float] = []
    try:
        # Three pairs a round: one effect's fsync varies 5x from one second to the next here.
        for i in range(rounds * 3):
            pair: dict[bool, float] = {}
            # Alternated, each on a fresh store: fsync latency drifts between rounds, not within a pair.
            for mode in (False, True) if i % 2 == 0 else (True, False):
                with _place() as d:
                    _keyed(d, mode)
                    pair[mode] = timed(d) / n
            plain.append(pair[False])
            keyed.append(pair[True])
            ratios.append(pair[True] / pair[False])
    finally:
        if saved is None:
            os.environ.pop(KEY_ENV, None)
        else:
            os.environ[KEY_ENV] = saved
    ratio = median(ratios)
    tgt, met = at_most(ratio, 1.10)
    plain_us, keyed_us = _seal_cpu()
    return Figure(
        f"keyed seal: {what}, keyed / unkeyed",
        ratio,
        "x",
        tgt,
        met,
        group="3b keyed seal",
        baseline=f"unkeyed (plain SHA-256 seals): {median(plain) * 1e6:.0f} us a {unit[:-1]}",
        detail=f"keyed (HMAC-SHA256 under PHASEGATE_SEAL_KEY_FILE): {median(keyed) * 1e6:.0f} us a {unit[:-1]};"
        f" {n} {unit} a run, alternated on fresh stores on {'a tmpfs (no fsync cost)' if SHM.is_dir() else 'disk'};"
        f" the seal alone: {keyed_us:.2f} us keyed,"
        f" {plain_us:.2f} us plain (an effect record's fields)",
        samples=ratios,
    )


def _seal_cpu() -> tuple[float, float]:
    """Microseconds per seal of an effect record's fields, plain and keyed."""
    rec = {
        "run_id": "r1",
        "phase": "charge",
        "name": "charge-1",
        "key": "r1/charge/charge-1",
        "state": "done",
        "idempotent": False,
        "atomic": False,
        "attempt": 1,
        "retry_ok": False,
        "result_hash": "ab" * 32,
        "confirmed_by": None,
        "prev_key": "r1/charge/charge-0",
        "reconcilable": False,
        "redo_on_rewind": False,
    }
    key = keys.SealKey(os.urandom(32), "0" * 16)
    n = 20_000
    t0 = time.perf_counter()
    for _ in range(n):
        seals.seal(rec, None)
    plain = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        seals.seal(rec, key)
    keyed = (time.perf_counter() - t0) / n
    return plain * 1e6, keyed * 1e6
