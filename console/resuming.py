"""Resuming a run from the console: `phasegate resume RUN` started as a
detached child (our own command line, as an argv list, never a shell), its
output appended to a private log beside the store, and how it ended said
once it has. The only command the console ever starts."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from phasegate import Engine, UsageError
from phasegate.ops import new_private_file, safe


@dataclass(frozen=True)
class Resumed:
    """A `phasegate resume` the console started, detached from it."""

    run_id: str
    """The run being resumed."""
    pid: int
    """The child's process id."""
    log: Path
    """The file its output is appended to, beside the store."""
    proc: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)
    """The child, watched until it ends (`watch_resume`)."""


@dataclass(frozen=True)
class ResumeEnded:
    """How a resume the console started ended."""

    run_id: str
    """The run it resumed."""
    pid: int
    """The child's process id."""
    code: int
    """Its exit status (negative: the signal that ended it)."""
    last_line: str
    """Its log's last line, made safe (what it said last, an error's message)."""
    log: Path
    """The file its output went to."""


def resume_command(db: Path, run_id: str) -> list[str]:
    """The argv of a resume the console starts: our own command, an argv
    list (no shell); "--" so a run id that starts with "-" is a run id, never
    an option; `-P` so that a folder named `phasegate` (a clone) in the
    working directory cannot shadow the installed package."""
    return [sys.executable, "-P", "-m", "phasegate", "resume", "--db", str(db), "--", run_id]


def resume_now(engine: Engine, run_id: str) -> Resumed:
    """Start `phasegate resume RUN` detached from the console (it goes on if
    the console quits), its output appended to a log beside the store. It
    starts in the store's folder, not the operator's: nothing there is on
    its path (`-P`), and a relative path it writes lands beside the store."""
    db = engine.db_file
    if db is None:
        raise UsageError(f"resume from the console needs an SQLite store; run: phasegate resume {run_id}")
    db = db.resolve()
    logs = db.parent / f"{db.name}.logs"
    log, out = _new_log(logs, run_id)
    with out:
        proc = subprocess.Popen(
            resume_command(db, run_id),
            cwd=db.parent,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the console's Ctrl-C or its exit
        )
    return Resumed(run_id, proc.pid, log, proc)


def watch_resume(started: Resumed, on_end: Callable[[ResumeEnded], None]) -> None:
    """Wait for the child from a thread of its own (so a long console session
    leaves no zombie behind) and say how it ended: its exit status and its
    log's last line."""
    proc = started.proc
    if proc is None:
        return

    def wait() -> None:
        code = proc.wait()
        on_end(ResumeEnded(started.run_id, started.pid, code, last_line(started.log), started.log))

    threading.Thread(target=wait, name=f"resume-{proc.pid}", daemon=True).start()


def last_line(log: Path, limit: int = 200) -> str:
    """The last non-empty line of a log, made safe and cut to `limit`
    characters (stored and child output alike: never sent raw to a terminal)."""
    try:
        with log.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            tail = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(its log could not be read: {exc.strerror or exc})"
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    said = safe(lines[-1].strip()) if lines else "(its log is empty)"
    return said if len(said) <= limit else said[: limit - 3] + "..."


def _new_log(logs: Path, run_id: str) -> tuple[Path, BinaryIO]:
    """A new log file for one resume of `run_id`, in the store's logs folder.

    Made as archives are (`new_private_file`): the folder is this account's
    own, the file new and never opened through a link, so that another
    account cannot turn the log's write into one onto a file of its choosing.

    Raises:
        UsageError: The folder is refused (one line saying why).
    """
    # The run id is any printable text ("/" and ".." too): a slug and a hash
    # of it name the file, the time and a count tell its resumes apart.
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:60]
    stem = f"resume-{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}-{time.strftime('%Y%m%dT%H%M%S')}"
    for n in range(100):
        name = f"{stem}.log" if n == 0 else f"{stem}.{n}.log"
        try:
            return logs / name, new_private_file(logs, name)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(f"no resume log written: {exc.strerror or exc}", title="resume") from None
    raise UsageError(f"no resume log written: {logs} holds 100 logs named {stem}*", title="resume")
