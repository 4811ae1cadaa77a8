"""The one way the tests run the real `phasegate` command line in a child
process.

Two modes, same code path. `exec` starts `python -m phasegate`, the way an
operator or a deploy script runs it. `fork` runs `phasegate.cli.main` in a
forked child of this (already warmed-up) interpreter: the child parses the same
argv, opens the store itself, exits with the same code and dies as hard under
SIGKILL, but skips about half a second of imports, which makes hundreds of
kills cheap. A fork refuses to happen while this process has the child's
SQLite database open (see `_no_open_databases`).

Every child gets its environment from `child_env()`, so all of them see the
repository on `PYTHONPATH` (the test workflows under `tests.workflows`).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]
KILLED = -signal.SIGKILL
Mode = Literal["exec", "fork"]
MODE_ENV = "PHASEGATE_TEST_CLI_MODE"
"""`exec` makes every child the tests start by default an exec'd one."""


def default_mode(args: Sequence[str] = (), *, cwd: Path | None = None) -> Mode:
    """The mode of a child whose test did not ask for one: forked and warm,
    unless it needs its own working directory (only an exec'd child has
    one), this process has the child's SQLite database open (a Pilot test's
    console: SQLite must not cross a fork, see `_no_open_databases`), or
    `PHASEGATE_TEST_CLI_MODE=exec` is set (a run of the suite with every
    child started the way an operator's shell starts it)."""
    if cwd is not None or os.environ.get(MODE_ENV, "").strip() == "exec":
        return "exec"
    try:
        _no_open_databases(_db_of(args))
    except RuntimeError:
        return "exec"
    return "fork"


def child_env(extra: Mapping[str, str] | None = None, *, drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment without `drop`, plus `extra`, with the
    repository first on `PYTHONPATH`: the environment of every child."""
    dropped = set(drop)
    full = {k: v for k, v in os.environ.items() if k not in dropped}
    full.update(extra or {})
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")])
    return full


@dataclass
class Result:
    """How a child ended: its exit code (KILLED when SIGKILL ended it) and
    what it printed. `returncode` as in `subprocess`; `rc` is the same."""

    returncode: int
    stdout: str
    stderr: str
    pid: int = 0

    @property
    def rc(self) -> int:
        return self.returncode

    @property
    def killed(self) -> bool:
        return self.returncode == KILLED

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr or "Traceback" in self.stdout


class Child:
    """A running `phasegate` child whose output goes to files; `kill()`
    SIGKILLs and reaps it, `wait()` reaps it. Both return its `Result`."""

    def __init__(self, pid: int, out: Path, err: Path, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self._out, self._err, self._popen = out, err, popen
        self.rc: int | None = None
        self.result: Result | None = None
        """Set once the child has been reaped."""

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

    def output_so_far(self) -> str:
        """What it has printed to stdout until now (it may still be running)."""
        if self.result is not None:
            return self.result.stdout
        return self._out.read_text(errors="replace")

    def alive(self) -> bool:
        """Still running; reaps (and records `result`) once it is not."""
        if self.poll() is None:
            return True
        self.wait()
        return False

    def kill(self) -> Result:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        return self.wait()

    def wait(self, timeout: float = 120.0) -> Result:
        if self.result is not None:
            return self.result
        deadline = time.monotonic() + timeout
        if self._popen is not None and self.rc is None:
            # An exec'd child: block in waitpid instead of polling.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.rc = self._popen.wait(timeout)
        while self.poll() is None:
            if time.monotonic() > deadline:
                result = self.kill()
                raise TimeoutError(f"child {self.pid} ran longer than {timeout}s: {result}")
            time.sleep(0.002)  # sleep: a forked child has no Popen to block on; its exit is polled
        assert self.rc is not None
        out = self._out.read_text(errors="replace")
        err = self._err.read_text(errors="replace")
        for p in (self._out, self._err):
            p.unlink(missing_ok=True)
        self.result = Result(self.rc, out, err, self.pid)
        return self.result


_warm = False

#: What the warm-up runs in this process, against a throwaway SQLite store:
#: every module and first-use cache the commands the tests fork need.
_WARM_ARGV = (
    ["run", "{billing}:wf", "--run-id", "warm", "--input", "{inputs}"],
    ["status", "warm", "--json"],
    ["status", "--json"],
    ["status"],
    ["verify"],
    ["prune"],
    ["decide", "warm", "rewind", "--phase", "load", "--reason", "warm-up"],
    ["resume", "warm"],
    ["worker", "--once"],
)


def warm() -> None:
    """Run the command line once in this process, so forked children inherit
    its imports instead of paying for them: the commands load the engine, the
    store and SQLAlchemy lazily (a cold `phasegate --help` stays cheap), so
    importing the parser alone leaves a forked `status --json` ~0.4 s of
    imports of its own. Also loads the PostgreSQL driver (no connection made).

    The run happens with this process's `PHASEGATE_...` variables set aside
    (a test's kill or pause point must not fire here), its logging set back
    afterwards and its pause points read again at their next use."""
    global _warm
    if _warm:
        return
    _warm = True
    from phasegate import _pause
    from phasegate.cli.main import build_parser, main

    build_parser()
    root, ours = logging.getLogger(), logging.getLogger("phasegate")
    saved_logging = (list(root.handlers), root.level, ours.level)
    saved_env = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("PHASEGATE_")}
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            billing = ROOT / "tests" / "workflows" / "billing.py"
            inputs = json.dumps({"ledger": str(Path(tmp) / "ledger")})
            for argv in _WARM_ARGV:
                main([a.format(billing=billing, inputs=inputs) for a in argv] + ["--db", str(Path(tmp) / "warm.db")])
        import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401

        import phasegate.store._postgres  # noqa: F401
    except Exception:  # noqa: BLE001, S110 - only a speed-up; the tests themselves will show what is broken
        pass
    finally:
        os.environ.update(saved_env)
        root.handlers[:] = saved_logging[0]
        root.setLevel(saved_logging[1])
        ours.setLevel(saved_logging[2])
        _pause._forget()


def name_sqlite_errors() -> None:
    """In a child: add SQLite's own error name to a driver error's message,
    so a torture failure says which I/O error it was (diagnosis only: it
    changes the message, so only the torture tests turn it on)."""
    import phasegate.store._sqlite as sq

    explain = sq.explain

    def named(exc: BaseException, path: Path | None) -> object:
        err = explain(exc, path)
        orig = getattr(exc, "orig", exc)
        if getattr(orig, "sqlite_errorname", None):
            err.message += f" [{orig.sqlite_errorname}]"
        return err

    sq.explain = named  # type: ignore[assignment]


def _no_open_databases(db: str | Path | None) -> None:
    """SQLite must not be carried across fork: a child that inherits an open
    connection's file (and SQLite's in-memory lock bookkeeping for it) can
    believe it holds locks it does not. So a fork happens only while this
    process has the child's database closed. (The torture harness once did
    not: the result was "disk I/O error" and charges made twice, in the
    harness, not the engine.)"""
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


def _db_of(args: Sequence[str]) -> str | None:
    return args[list(args).index("--db") + 1] if "--db" in args else None


def _outfiles() -> tuple[Path, Path]:
    fd1, p1 = tempfile.mkstemp(prefix="pg-out-")
    fd2, p2 = tempfile.mkstemp(prefix="pg-err-")
    os.close(fd1)
    os.close(fd2)
    return Path(p1), Path(p2)


def _fresh_logging() -> None:
    """In a forked child: logging as a fresh interpreter has it, so the
    command's `logging.basicConfig` takes effect (pytest's capture handlers on
    the root logger would otherwise swallow a worker's log lines)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    for logger in logging.Logger.manager.loggerDict.values():
        if isinstance(logger, logging.Logger):
            logger.setLevel(logging.NOTSET)
            logger.disabled = False


def _fork(
    body: Callable[[], int], *, extra_env: Mapping[str, str] | None, db: str | Path | None, drop: Iterable[str] = ()
) -> Child:
    """Fork (guarded); the child runs `body()` with its output in files and
    exits with what it returns; a SystemExit's code, 1 on an uncaught error."""
    out, err = _outfiles()
    warm()
    _no_open_databases(db)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        rc = 1
        try:
            for name in drop:
                os.environ.pop(name, None)
            os.environ.update(extra_env or {})
            os.dup2(os.open(out, os.O_WRONLY | os.O_TRUNC), 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_TRUNC), 2)
            sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _fresh_logging()
            rc = body()
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


def start(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    mode: Mode = "exec",
    before: Callable[[], None] | None = None,
    preexec: Callable[[], None] | None = None,
    wrapper: Sequence[str] = (),
    sqlite_error_names: bool = False,
    cwd: Path | None = None,
    drop: Iterable[str] = (),
) -> Child:
    """Start `phasegate ARGS` in a child (a long-running one: a holder, a
    worker, a run to kill). `env` is added to this process's environment.
    `drop` names variables the child must not inherit. `before` runs in a
    forked child just before the command (a test hook, e.g. to cap the
    database size); `wrapper` prefixes an exec'd command."""
    if mode == "exec":
        if before is not None or sqlite_error_names:
            raise ValueError("`before` and `sqlite_error_names` need mode='fork'")
        out, err = _outfiles()
        with out.open("wb") as o, err.open("wb") as e:
            popen = subprocess.Popen(
                [*wrapper, sys.executable, "-m", "phasegate", *args],
                stdout=o,
                stderr=e,
                env=child_env(env, drop=drop),
                cwd=cwd or ROOT,
                preexec_fn=preexec,
            )
        return Child(popen.pid, out, err, popen)
    if wrapper or cwd is not None:
        raise ValueError("`wrapper` and `cwd` need mode='exec'")

    def body() -> int:
        if preexec is not None:
            preexec()
        if sqlite_error_names:
            name_sqlite_errors()
        if before is not None:
            before()
        from phasegate.cli.main import main

        return main(list(args))

    return _fork(body, extra_env=env, db=_db_of(args), drop=drop)


def run(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    mode: Mode = "exec",
    timeout: float = 120.0,
    before: Callable[[], None] | None = None,
    preexec: Callable[[], None] | None = None,
    wrapper: Sequence[str] = (),
    sqlite_error_names: bool = False,
    cwd: Path | None = None,
    drop: Iterable[str] = (),
) -> Result:
    """`phasegate ARGS` in a child, to its end."""
    child = start(
        args,
        env=env,
        mode=mode,
        before=before,
        preexec=preexec,
        wrapper=wrapper,
        sqlite_error_names=sqlite_error_names,
        cwd=cwd,
        drop=drop,
    )
    return child.wait(timeout)


def popen(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    drop: Iterable[str] = (),
    merge_stderr: bool = False,
) -> subprocess.Popen[str]:
    """`python -m phasegate ARGS` in the background with its output on
    pipes, for a test that reads it as it comes (a worker's log lines)."""
    return subprocess.Popen(
        [sys.executable, "-m", "phasegate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        text=True,
        env=child_env(env, drop=drop),
        cwd=ROOT,
    )


def start_fn(fn: Callable[[], int], *, env: Mapping[str, str] | None = None, db: Path | None = None) -> Child:
    """Run `fn()` in a forked child (guarded for `db`); its return value is
    the exit code."""
    return _fork(fn, extra_env=env, db=db)


def inproc(args: Sequence[str]) -> Result:
    """`phasegate ARGS` in this process (for quick reads and decisions)."""
    from phasegate.cli.main import main

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


def wait_for(path: Path, timeout: float = 60.0) -> None:
    """A barrier between processes: return once `path` exists."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.001)  # sleep: a barrier between processes, polled every 1 ms (forked children use it)
