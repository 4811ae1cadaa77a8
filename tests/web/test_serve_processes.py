"""`phasegate serve`'s console processes (issue #29, findings 7, 8 and 13):
a real `serve`, real WebSocket handshakes kept open by a WebSocket client
(no browser needed), and the children read from /proc."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websocket  # websocket-client, which selenium brings

from tests.console import fixtures as fx
from tests.support import cli
from tests.web.browser import wait_for
from tests.web.conftest import Served, alive

SECRET = "TopSecret99"


def open_session(served: Served) -> websocket.WebSocket:
    """A session as the page opens it: the handshake with this server's Origin."""
    ws = websocket.create_connection(
        f"ws://{served.hostport}/{served.token}/ws?width=80&height=24", origin=served.origin, timeout=30
    )
    assert ws.getstatus() == 101
    return ws


def screen_bytes(ws: websocket.WebSocket, want: bytes, *, timeout: float = 60) -> bytes:
    """What the console drew, frame by frame, until `want` is in it."""
    seen = b""
    end = time.monotonic() + timeout
    while want not in seen:
        assert time.monotonic() < end, f"the console never drew {want!r}"
        opcode, data = ws.recv_data()
        assert opcode != websocket.ABNF.OPCODE_CLOSE, f"the session closed: {data!r}"
        seen += data if isinstance(data, bytes) else data.encode()
    return seen


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")


@contextlib.contextmanager
def killed_afterwards(pids: list[int]) -> Iterator[None]:
    """Whatever the test finds, no console it started is left running."""
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def test_sigkill_of_serve_takes_its_consoles_with_it(store: Path, serve: Any) -> None:
    """Finding 7: SIGKILL of `serve` left its consoles running, re-parented to
    pid 1, write-capable, for 18 minutes and more."""
    served = serve(store, "--allow-decisions")
    sessions = [open_session(served), open_session(served)]
    kids = wait_for(lambda: len(served.children()) == 2 and served.children(), what="two console processes")
    with killed_afterwards(kids):
        for ws in sessions:
            screen_bytes(ws, fx.ENV_MISMATCH.encode())  # each console is up, its runs list drawn
        served.proc.send_signal(signal.SIGKILL)
        served.proc.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in kids), timeout=30, what="the consoles to die with serve")
    for ws in sessions:
        ws.close()


def test_a_console_whose_server_is_gone_opens_nothing(store: Path) -> None:
    """A console told it was served by a process that is not its parent (the
    server died first, or the variable was set by hand) refuses in one line."""
    p = cli.run(
        ["console", "--db", str(store)],
        env={"PHASEGATE_SERVE_PARENT": "0"},  # no process's parent here
        mode="exec",
        timeout=60,
    )
    assert p.returncode == 2, p
    assert p.stderr.count("\n") == 1 and "is gone" in p.stderr, p.stderr


@pytest.fixture
def pg_store() -> Iterator[str]:
    """A PostgreSQL store with one run, reached by a URL with a password
    (the server trusts local connections, so any password is accepted)."""
    from tests.engine.pg_schema import pg_schema

    with pg_schema() as url:
        assert url.startswith("postgresql://postgres@")
        secret = url.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@", 1)
        p = cli.run(
            ["run", "tests.console.wf:wf", "--run-id", "pg-served-1", "--input", json.dumps({"invoices": 1})]
            + ["--db", secret],
            mode="exec",
        )
        assert p.returncode == 0, p
        yield secret


def test_the_store_url_is_on_no_console_command_line(pg_store: str, serve: Any) -> None:
    """Finding 8: another account's `ps -eo args` showed
    `console --db postgresql://postgres:TopSecret99@...`. The URL travels in
    the console's environment, which only its own account can read."""
    # As the review ran it: the URL on serve's own command line (the operator's
    # to keep off it, with PHASEGATE_DB), never passed on to a console's.
    served = serve(pg_store)
    ws = open_session(served)
    kids = wait_for(served.children, what="the console process")
    with killed_afterwards(kids):
        screen_bytes(ws, b"pg-served-1")  # the console did open the store
        for pid in kids:
            line = cmdline(pid)
            assert " console" in line and SECRET not in line and "postgresql" not in line, line
    ws.close()


def test_blur_focus_and_ping_do_not_keep_an_idle_session_open(store: Path, serve: Any) -> None:
    """Finding 13: any text message (a page sends `["blur"]` on its own)
    reset the idle timer, so an unattended session was never closed."""
    served = serve(store, "--idle-timeout", "2")
    ws = open_session(served)
    wait_for(lambda: "session 1 opened" in served.log(), what="the session to open")
    kids = served.children()
    with killed_afterwards(kids):
        ws.settimeout(0.3)
        closed = False
        end = time.monotonic() + 60
        while not closed and time.monotonic() < end:
            for message in (["blur"], ["focus"], ["ping", "p"], ["nonsense"]):
                try:
                    ws.send(json.dumps(message))
                    while True:
                        opcode, _data = ws.recv_data()
                        if opcode == websocket.ABNF.OPCODE_CLOSE:
                            closed = True
                            break
                except websocket.WebSocketTimeoutException:
                    pass
                except (websocket.WebSocketConnectionClosedException, BrokenPipeError, ConnectionResetError):
                    closed = True
                if closed:
                    break
        assert closed, "the session was kept open by messages that are not input"
        wait_for(lambda: "session 1 closed" in served.log(), what="the session's end in the log")
        assert "idle" in served.log()
        wait_for(lambda: served.children() == [], what="the console process to end")


def test_where_no_parent_death_signal_is_had_the_console_watches_its_parent(tmp_path: Path) -> None:
    """The fallback of the parent-death signal (other systems, or a kernel
    that refuses it): a tethered process whose parent dies ends by itself."""
    grandchild = (
        "import os, sys, time\n"
        "from phasegate.console import served\n"
        "served._parent_death_signal = lambda sig: None  # as where prctl is not to be had\n"
        "assert served.tether({served.PARENT_ENV: str(os.getppid())})\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(120)\n"
    )
    # The middle process starts the tethered one, says its pid, and is killed.
    middle = (
        "import subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', {grandchild!r}], stdout=subprocess.PIPE, text=True)\n"
        "print(p.stdout.readline().strip(), flush=True)\n"
        "import time; time.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", middle], stdout=subprocess.PIPE, text=True, env=cli.child_env(), cwd=cli.ROOT
    )
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    assert alive(pid)
    proc.kill()
    proc.wait()
    try:
        wait_for(lambda: not alive(pid), timeout=30, what="the orphan to end itself")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
