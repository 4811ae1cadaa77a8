"""Figure: the console over a slow link (#17). What an operator's terminal
receives, measured on a real pseudo-terminal at 80x24 running
`python -m phasegate console` on the demo store (its live run still
committing, as on a real on-call screen):

- bytes sent while nobody types for 10 s (target under 2 KB/s);
- bytes sent for one `j` in the list (target under 2 KB);
- whether 20 `j` typed ahead in one write move the cursor 20 rows (the
  terminal's screen is rebuilt with pyte and the selected run read off it);
- bytes sent while nobody types for 10 s in the live run's own detail.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

from ._util import Figure, at_least, below, median

ROWS, COLS = 24, 80


class Terminal:
    """The console in a child on a pty of ROWS x COLS; counts what it sends."""

    def __init__(self, db: Path, *extra: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: size its terminal, then become the console
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
            env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLS), "LINES": str(ROWS)}
            env.pop("NO_COLOR", None)
            os.execvpe(sys.executable, [sys.executable, "-m", "phasegate", "console", "--db", str(db), *extra], env)
        self.pid, self.fd = pid, fd
        self.received = bytearray()

    def read_for(self, seconds: float) -> int:
        """Read for `seconds`; returns the bytes received in that time."""
        end = time.monotonic() + seconds
        got = 0
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.received += chunk
            got += len(chunk)
        return got

    def settle(self, quiet: float = 1.5, limit: float = 20.0) -> None:
        """Read until the console has been quiet for `quiet` seconds."""
        end = time.monotonic() + limit
        while time.monotonic() < end and self.read_for(quiet):
            pass

    def drawn(self, limit: float = 60.0) -> None:
        """Read until the first screen is drawn (its footer's `Help`): a
        start slower than `settle`'s quiet time (the first run after a change
        compiles the package) would otherwise be counted as idle traffic."""
        end = time.monotonic() + limit
        while b"Help" not in self.received and time.monotonic() < end:
            self.read_for(0.2)

    def send(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def screen(self) -> list[str]:
        import pyte

        screen = pyte.Screen(COLS, ROWS)
        pyte.ByteStream(screen).feed(bytes(self.received))
        return list(screen.display)

    def close(self) -> None:
        try:
            self.send(b"q")
            self.read_for(1.0)
        finally:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            os.close(self.fd)


def _demo(folder: Path) -> Path:
    db = folder / "wire-demo.db"
    subprocess.run(
        [sys.executable, "-m", "phasegate", "demo", "--no-console", "--db", str(db)],
        check=True,
        capture_output=True,
        env={**os.environ, "PHASEGATE_DEMO_LIVE_SECONDS": "120"},
        timeout=300,
    )
    return db


def _stop_live_run(db: Path) -> None:
    from phasegate.sample_runs._spare import kill_if_same

    pid_file = db.parent / f"{db.stem}.work" / "live-run.pid"
    if pid_file.exists():
        pid, started = pid_file.read_text().split("\n")[:2]
        kill_if_same(int(pid), started)


def _extra_runs(db: Path, n: int) -> None:
    """Enough runs that 20 rows of cursor movement stay on one page."""
    from phasegate import Engine, Workflow

    wf = Workflow("wire-extra")

    @wf.phase()
    def only(ctx: Any) -> int:
        return 1

    with Engine(db) as eng:
        for i in range(n):
            eng.run(wf, f"wire-extra-{i:03d}")


def run(folder: Path, *, idle: float = 10.0, presses: int = 5) -> list[Figure]:
    """`idle`: the seconds each idle window is read for; `presses`: the `j`
    behind the per-key median (--smoke shortens both)."""
    group = "console over a slow link (80x24, pty)"
    db = _demo(folder)
    try:
        _extra_runs(db, 24)
        term = Terminal(db)
        try:
            # Quiet for 3 s first: on a busy machine the first screens (the
            # page, the selected run, the workers' count) can come late and
            # would be counted as idle traffic.
            term.drawn()
            term.settle(quiet=3.0)
            idle_rate = term.read_for(idle) / idle
            # What one j costs: the 0.7 s after it, the median of 5 (a live
            # refresh landing in one window does not count for all).
            costs = []
            for _ in range(presses):
                term.send(b"j")
                costs.append(term.read_for(0.7))
                term.settle(quiet=0.5, limit=3.0)
            one_j = round(median(costs))
            term.send(b"g")
            term.settle(quiet=1.0)
            term.send(b"j" * 20)  # typed ahead: one write
            term.settle(quiet=1.5)
            try:
                moved = _rows_moved(db, term.screen())
            except ImportError:  # pyte comes with the test extra
                moved = None
        finally:
            term.close()
        # The live run's own detail: every commit re-reads it.
        term = Terminal(db, "--run", "pipeline-events-live")
        try:
            term.drawn()
            term.settle(quiet=3.0)
            detail_idle = term.read_for(idle) / idle
        finally:
            term.close()
    finally:
        _stop_live_run(db)
    target_idle, met_idle = below(idle_rate, 2048, " B/s")
    target_j, met_j = below(one_j, 2048, " B")
    target_b, met_b = at_least(moved, 20, " rows")
    target_d, met_d = below(detail_idle, 2048, " B/s")
    return [
        Figure(
            "bytes sent while idle",
            round(idle_rate),
            "B/s",
            target_idle,
            met_idle,
            group,
            detail=f"{idle:g} s, demo store",
        ),
        Figure(
            "bytes sent per j in the list",
            one_j,
            "B",
            target_j,
            met_j,
            group,
            detail=f"median of {presses} j, 0.7 s after each",
        ),
        Figure("rows moved by 20 j in one write", moved, "rows", target_b, met_b, group),
        Figure(
            "bytes sent while idle in a live run's detail",
            round(detail_idle),
            "B/s",
            target_d,
            met_d,
            group,
            detail=f"{idle:g} s; the run commits a step about every second",
        ),
    ]


def _rows_moved(db: Path, screen: list[str]) -> float | None:
    """Where the cursor is, from the `RUN: why` line under the table."""
    from phasegate import Engine

    with Engine(db, create=False, readonly=True) as eng:
        ids = [r.run_id for r in eng.runs(limit=200)]
    for line in reversed(screen):
        head = line.strip().split(":", 1)[0]
        if head in ids:
            return float(ids.index(head))
    return None
