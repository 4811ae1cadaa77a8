"""A console that `phasegate serve` started for one browser session: tied to
the server's life, and given its store without a command line.

A served console takes its orders from the server (read-only or not, whose
decisions it records), so it must not outlive it: left behind by a SIGKILL of
the server, it would go on with nobody to stop it, write-capable. It asks the
kernel to kill it when the server dies (Linux's parent-death signal) and, on
every system, watches its parent itself.

The store's URL may hold a database password, and every account on the
machine can read every process's command line (`ps -eo args`): the server
passes it in the environment (`PHASEGATE_DB`), which only the same account
can read, never as `--db`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

from phasegate import PhasegateError

#: Set by `phasegate serve` in each console's environment: the server's pid.
PARENT_ENV = "PHASEGATE_SERVE_PARENT"
#: How often the parent watch looks (where the kernel's signal is not to be had).
WATCH_EVERY = 0.5
#: prctl(2): the signal this process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


class ServerGone(PhasegateError):
    """The server that started this console is not its parent (any more)."""

    title = "served console"
    """The notice's title."""


def tether(environ: dict[str, str] | None = None) -> bool:
    """Tie this console to the server that started it, when one did.

    Args:
        environ: The environment to read `PARENT_ENV` from (default: this process's).

    Returns:
        Whether this console is a served one (and now tied to its server).

    Raises:
        ServerGone: `PARENT_ENV` names a process that is not this one's parent:
            the server died before the tie was made, or the variable was set by
            someone else. Nothing was opened yet.
    """
    raw = (os.environ if environ is None else environ).get(PARENT_ENV)
    if raw is None:
        return False
    try:
        parent = int(raw)
    except ValueError:
        raise ServerGone(f"{PARENT_ENV}={raw!r} is not a process id") from None
    if sys.platform.startswith("linux"):
        _parent_death_signal(signal.SIGKILL)
    # Checked after the signal is asked for: a server that died before that
    # moment left this process to another parent, and sends no signal.
    if os.getppid() != parent:
        raise ServerGone(f"the server that started this console (pid {parent}) is gone")
    threading.Thread(target=_watch_parent, args=(parent,), name="serve-parent", daemon=True).start()
    return True


def _parent_death_signal(sig: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the parent watch below still ends this process


def _watch_parent(parent: int) -> None:
    """The fallback where the kernel does not signal: re-parented (the
    server died), this process ends at once, as SIGKILL would end it."""
    while True:
        threading.Event().wait(WATCH_EVERY)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
