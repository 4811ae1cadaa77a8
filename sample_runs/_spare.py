"""Spare processes: forked from the demo builder before it starts any thread,
each waiting to be told which `phasegate` command to run.

A spare is a real, separate process running the same `main()` that the
`phasegate` executable runs, so killing it is a real crash. Forking it from a
process that has already imported the engine skips the interpreter start and
the imports a fresh `phasegate run` pays (most of a second of CPU each), which
is most of what the demo would otherwise spend.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any


class Spare:
    """One forked child, idle until `run` hands it a command."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(write_fd)
            code = 70
            try:
                code = _child(read_fd)
            finally:
                os._exit(code)
        os.close(read_fd)
        self.pid = pid
        self._write_fd: int | None = write_fd
        self.returncode: int | None = None

    def run(self, argv: list[str], *, env: dict[str, str], log: Path, detach: bool = False) -> None:
        """Start `phasegate ARGV` in this process, its output appended to `log`."""
        if self._write_fd is None:
            raise RuntimeError("a spare runs one command")
        data = json.dumps({"argv": argv, "env": env, "log": str(log), "detach": detach}).encode()
        with os.fdopen(self._write_fd, "wb") as fh:
            fh.write(data)
        self._write_fd = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL it and reap it."""
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait()

    def wait(self) -> int:
        if self.returncode is None:
            _pid, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def dismiss(self) -> None:
        """An unused spare: close its pipe (it exits on the empty read) and reap it."""
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
            self.wait()


def _child(read_fd: int) -> int:
    with os.fdopen(read_fd, "rb") as fh:
        data = fh.read()
    if not data:
        return 0
    cmd: dict[str, Any] = json.loads(data)
    if cmd["detach"]:
        os.setsid()  # out of the terminal's process group: Ctrl-C on the demo does not reach it
    out = os.open(cmd["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.clear()
    os.environ.update(cmd["env"])
    import logging

    from phasegate.cli.main import main

    # The builder silenced the engine's logger for its progress display; a
    # run's own log file should have what `phasegate run` would print.
    logging.getLogger("phasegate").setLevel(logging.NOTSET)
    try:
        code = main(cmd["argv"])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def start_time(pid: int) -> str:
    """When `pid` started (clock ticks since boot, from /proc), or "" if unknown:
    with the pid, it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def kill_if_same(pid: int, started: str) -> bool:
    """SIGKILL `pid` only if it is still the process that started at `started`."""
    if not started or start_time(pid) != started:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
