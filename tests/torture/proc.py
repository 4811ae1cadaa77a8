"""Running the real `phasegate` command line as a child process.

Two ways, same code path: `fork` runs `phasegate.cli.main` in a forked child of
this (already warmed-up) interpreter, which makes hundreds of kills cheap;
`exec` spawns `python -m phasegate`, the way a deploy script runs it. Either way
the child is a separate process that a SIGKILL ends for real.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KILLED = -signal.SIGKILL


@dataclass
class Result:
    """How a child ended: its exit code (KILLED when SIGKILL ended it)."""

    rc: int
    stdout: str
    stderr: str
    pid: int = 0

    @property
    def killed(self) -> bool:
        return self.rc == KILLED

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr or "Traceback" in self.stdout


class Child:
    """A running `phasegate` child; `kill()` SIGKILLs it, `wait()` reaps it."""

    def __init__(self, pid: int, out: Path, err: Path, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self._out, self._err, self._popen = out, err, popen
        self.rc: int | None = None

    def poll(self) -> int | None:
        if self.rc is not None:
            return self.rc
        if self._popen is not None:
            self.rc = self._popen.poll()
            return self.rc
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return None
        self.rc = os.waitstatus_to_exitcode(status)
        return self.rc

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float = 120.0) -> Result:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                self.wait(5)
                raise TimeoutError(f"child {self.pid} ran longer than {timeout}s")
            time.sleep(0.002)
        out = self._out.read_text(errors="replace")
        err = self._err.read_text(errors="replace")
        for p in (self._out, self._err):
            p.unlink(missing_ok=True)
        assert self.rc is not None
        return Result(self.rc, out, err, self.pid)


_warm = False


def _name_driver_errors() -> None:
    """In a child: add SQLite's own error name to a driver error's message,
    so a torture failure says which I/O error it was (diagnosis only)."""
    import phasegate.store._sqlite as sq

    explain = sq.explain

    def named(exc: BaseException, path: Path | None) -> object:
        err = explain(exc, path)
        orig = getattr(exc, "orig", exc)
        if getattr(orig, "sqlite_errorname", None):
            err.message += f" [{orig.sqlite_errorname}]"
        return err

    sq.explain = named  # type: ignore[assignment]


def warm() -> None:
    """Import everything `phasegate` imports (the command line loads its
    console and demo commands lazily) once, so forked children start warm."""
    global _warm
    if not _warm:
        from phasegate.cli import build_parser

        build_parser()
        _warm = True


def _no_open_databases(db: str | Path | None) -> None:
    """SQLite must not be carried across fork: a child that inherits an open
    connection's file (and SQLite's in-memory lock bookkeeping for it) can
    believe it holds locks it does not. The harness forks only when this
    process has the child's database closed. (It once did not: the result
    was "disk I/O error" and charges made twice, in the harness, not the engine.)"""
    fds = Path("/proc/self/fd")
    if db is None or not fds.is_dir():
        return
    base = str(Path(db).absolute())
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target in (base, base + "-wal", base + "-shm", base + "-journal"):
            raise RuntimeError(f"refusing to fork with {target} open in this process")


def _outfiles() -> tuple[Path, Path]:
    fd1, p1 = tempfile.mkstemp(prefix="pg-out-")
    fd2, p2 = tempfile.mkstemp(prefix="pg-err-")
    os.close(fd1)
    os.close(fd2)
    return Path(p1), Path(p2)


def start(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    mode: str = "fork",
    before: Callable[[], None] | None = None,
    preexec: Callable[[], None] | None = None,
    wrapper: Sequence[str] = (),
) -> Child:
    """Start `phasegate ARGS` in a child. `before` runs in a forked child just
    before the command (a test hook, e.g. to cap the database size)."""
    out, err = _outfiles()
    if mode == "exec":
        full = {**os.environ, **(env or {})}
        full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")])
        with out.open("wb") as o, err.open("wb") as e:
            popen = subprocess.Popen(
                [*wrapper, sys.executable, "-m", "phasegate", *args],
                stdout=o,
                stderr=e,
                env=full,
                cwd=ROOT,
                preexec_fn=preexec,
            )
        return Child(popen.pid, out, err, popen)
    warm()
    _no_open_databases(args[list(args).index("--db") + 1] if "--db" in args else None)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        rc = 1
        try:
            os.environ.update(env or {})
            fo = os.open(out, os.O_WRONLY | os.O_TRUNC)
            fe = os.open(err, os.O_WRONLY | os.O_TRUNC)
            os.dup2(fo, 1)
            os.dup2(fe, 2)
            sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if preexec is not None:
                preexec()
            _name_driver_errors()
            if before is not None:
                before()
            from phasegate.cli import main

            rc = main(list(args))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - what the interpreter would print for an uncaught error
            traceback.print_exc()
            rc = 1
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(rc)
    return Child(pid, out, err)


def run(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    mode: str = "fork",
    timeout: float = 120.0,
    before: Callable[[], None] | None = None,
    preexec: Callable[[], None] | None = None,
    wrapper: Sequence[str] = (),
) -> Result:
    return start(args, env=env, mode=mode, before=before, preexec=preexec, wrapper=wrapper).wait(timeout)


def inproc(args: Sequence[str]) -> Result:
    """`phasegate ARGS` in this process (for quick reads and decisions)."""
    from phasegate.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 - reported like the interpreter would
            traceback.print_exc()
            rc = 1
    return Result(rc, out.getvalue(), err.getvalue(), os.getpid())


def start_fn(fn: Callable[[], int], *, env: dict[str, str] | None = None, db: Path | None = None) -> Child:
    """Run `fn()` in a forked child; its return value is the exit code."""
    out, err = _outfiles()
    warm()
    _no_open_databases(db)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            os.environ.update(env or {})
            os.dup2(os.open(out, os.O_WRONLY | os.O_TRUNC), 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_TRUNC), 2)
            sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            rc = fn()
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
            rc = 1
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(rc)
    return Child(pid, out, err)


def wait_for(path: Path, timeout: float = 60.0) -> None:
    """A barrier between processes: return once `path` exists."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.001)
