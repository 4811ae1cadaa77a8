"""Figure 1, the limit: a raw `sqlite3` insert+commit of the same bytes, on a
reused connection, WAL, with synchronous=FULL and NORMAL."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ._util import median


def connect(path: Path, sync: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={sync}")
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, run_id TEXT, payload TEXT)")
    return conn


def commit_times(path: Path, payload: str, sync: str, n: int, *, gap_s: float = 0.0) -> list[float]:
    """Seconds per insert+commit for `n` back-to-back transactions (with `gap_s`
    of busy CPU between them when asked: an engine never commits back to back)."""
    conn = connect(path, sync)
    out: list[float] = []
    try:
        for i in range(n + 2):
            if gap_s:
                _spin(gap_s)
            t0 = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (run_id, payload) VALUES (?, ?)", (f"r{i}", payload))
            conn.execute("COMMIT")
            if i >= 2:  # the first commits pay for creating the WAL
                out.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return out


def commit_cost(path: Path, payload: str, sync: str, n: int, *, gap_s: float = 0.0) -> float:
    """The median seconds of one raw insert+commit in one run of `n`."""
    return median(commit_times(path, payload, sync, n, gap_s=gap_s))


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def committer(conn: sqlite3.Connection, payload: str) -> Callable[[], None]:
    """One raw insert+commit of `payload` per call, on `conn`."""

    def commit() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (run_id, payload) VALUES (?, ?)", ("r", payload))
        conn.execute("COMMIT")

    return commit
