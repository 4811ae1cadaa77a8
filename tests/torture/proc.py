"""The torture's defaults over the tests' one CLI helper (tests/support/cli.py):
children are forked by default (hundreds of kills stay cheap), and a forked
child names SQLite's own error in a driver error's message, so a failure says
which I/O error it was."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from tests.support.cli import KILLED, ROOT, Child, Mode, Result, inproc, start_fn, wait_for
from tests.support.cli import start as _start

__all__ = ["KILLED", "ROOT", "Child", "Result", "inproc", "run", "start", "start_fn", "wait_for"]


def start(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    mode: Mode = "fork",
    before: Callable[[], None] | None = None,
    preexec: Callable[[], None] | None = None,
    wrapper: Sequence[str] = (),
) -> Child:
    forked = mode == "fork"
    return _start(args, env=env, mode=mode, before=before, preexec=preexec, wrapper=wrapper, sqlite_error_names=forked)


def run(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    mode: Mode = "fork",
    timeout: float = 120.0,
    before: Callable[[], None] | None = None,
    preexec: Callable[[], None] | None = None,
    wrapper: Sequence[str] = (),
) -> Result:
    return start(args, env=env, mode=mode, before=before, preexec=preexec, wrapper=wrapper).wait(timeout)
