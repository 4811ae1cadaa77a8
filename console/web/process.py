"""One browser session's console process: textual-serve's `AppService`
(which speaks the web driver's packet protocol) with the process started
without a shell and stopped for certain."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from asyncio.subprocess import Process
from collections.abc import Awaitable, Callable, Sequence

from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from phasegate.ops import WEB_USER_ENV

from ..served import PARENT_ENV

#: How long a console gets to quit on its own before its process group is killed.
QUIT_GRACE = 3.0


class ConsoleProcess(AppService):
    """Runs `argv` (never through a shell: the database path is not shell
    text) in a process group of its own, with `operator` as the name its
    decisions record, on the store `db` (passed in its environment: a URL's
    password must not be on a command line that every account can read)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        operator: str,
        db: str | None = None,
        web_user: str | None = None,
        write_bytes: Callable[[bytes], Awaitable[None]],
        write_str: Callable[[str], Awaitable[None]],
        close: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(
            " ".join(argv),
            write_bytes=write_bytes,
            write_str=write_str,
            close=close,
            download_manager=DownloadManager(),
        )
        self.argv = tuple(argv)
        """The console's command line, as an argv list (never a shell's text)."""
        self.operator = operator
        """The name the console's decisions record (`web:<user>`)."""
        self.db = db
        """The store's path or URL, or None to leave the environment's `PHASEGATE_DB`."""
        self.web_user = web_user
        """The user an authenticating proxy named (`--operator-header`), or None."""

    @property
    def pid(self) -> int | None:
        """The console process's id, or None before it starts."""
        return None if self._process is None else self._process.pid

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width, height)
        env["PHASEGATE_OPERATOR"] = self.operator
        if self.db is not None:
            env["PHASEGATE_DB"] = self.db
        # The console dies with this server (console/served.py): never an
        # orphan, write-capable, with nobody to stop it.
        env[PARENT_ENV] = str(os.getpid())
        # Only a proxy-authenticated user is passed on: it tells two people
        # apart for a second only where the store's policy names this
        # server's account (engine/oversight/identity.py). Never inherited otherwise.
        env.pop(WEB_USER_ENV, None)
        if self.web_user is not None:
            env[WEB_USER_ENV] = self.web_user
        return env

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        # A new session: the whole group can be killed at once, and a Ctrl+C
        # in the server's terminal reaches the server, which stops the
        # consoles in order, not every console at once mid-write.
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """Ask the console to quit; kill its process group if it has not
        within `QUIT_GRACE`; always reap it, so no process outlives its session."""
        try:
            await asyncio.wait_for(super().stop(), QUIT_GRACE)
        except (TimeoutError, ConnectionError, RuntimeError):
            pass
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def console_argv(*, read_only: bool) -> list[str]:
    """The served command: the terminal console itself, so there is no second
    UI. No `--db`: the store reaches it in the environment (`ConsoleProcess`)."""
    argv = [sys.executable, "-m", "phasegate", "console"]
    if read_only:
        argv.append("--read-only")
    return argv
