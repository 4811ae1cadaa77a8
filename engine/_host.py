"""Who this process is, and whether another process on this host is alive."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

HOST = socket.gethostname()


def new_owner() -> str:
    return f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def pid_alive(pid: int) -> bool:
    """True while `pid` runs. A zombie (killed, not yet reaped by its parent)
    counts as dead: it will never write again."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


_role = "process"


def set_role(role: str) -> None:
    """Say what this process is ("worker"), for the notes it leaves (a takeover)."""
    global _role
    _role = role


def role() -> str:
    """What this process is: "worker" in `phasegate worker`, else "process"."""
    return _role
