"""#17: `y` then Enter sends the selected run id to the terminal as OSC 52
(what a terminal at the far end of SSH puts on its clipboard), and the
console sends OSC 52 at no other time. `phasegate console` runs on a real
pseudo-terminal at 80x24; the bytes it writes are read as they come."""

from __future__ import annotations

import base64
import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

from phasegate import Engine
from tests.support.cli import child_env


def _read(fd: int, seconds: float) -> bytes:
    got = bytearray()
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    return bytes(got)


def _until(fd: int, needle: bytes, seen: bytearray, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while needle not in seen:
        assert time.monotonic() < end, seen[-2000:]
        seen += _read(fd, 0.2)


def test_y_sends_the_run_id_as_osc_52_and_nothing_else_does(store: Path) -> None:
    env = child_env({"TERM": "xterm-256color"}, drop=("NO_COLOR", "PHASEGATE_CONSOLE_OSC52"))
    pid, fd = pty.fork()
    if pid == 0:  # the child: an 80x24 terminal, then the console
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.execvpe(sys.executable, [sys.executable, "-m", "phasegate", "console", "--db", str(store)], env)
    try:
        seen = bytearray()
        _until(fd, b"Help", seen)
        seen += _read(fd, 2.0)
        for key in (b"j", b"k", b"?", b"\x1b"):  # moving and help: no clipboard
            os.write(fd, key)
            seen += _read(fd, 0.5)
        assert b"\x1b]52;" not in seen
        os.write(fd, b"y")
        _until(fd, b"copy from", seen)
        os.write(fd, b"\r")
        _until(fd, b"\x1b]52;c;", seen)
        _until(fd, b"\x07", seen[seen.index(b"\x1b]52;c;") :])
        sent = re.search(rb"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", bytes(seen))
        assert sent is not None and seen.count(b"\x1b]52;") == 1
        copied = base64.b64decode(sent.group(1)).decode()
        with Engine(store, create=False, readonly=True) as eng:
            assert copied in {r.run_id for r in eng.runs()}
        assert copied.encode() in seen  # the notice said which run id was copied
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
