"""`phasegate serve` driven through a real headless chromium: what the page
shows is read back from the browser, what a decision did is read from the
store, and the server's child processes are read from /proc."""

from __future__ import annotations

import getpass
import hashlib
import http.client
import http.server
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from tests.console import fixtures as fx
from tests.support.waiting import TimedOut
from tests.web.browser import Terminal, wait_for
from tests.web.conftest import alive

RUN_IDS = [
    fx.COMPLETED,
    fx.INTERRUPTED,
    fx.IN_DOUBT,
    fx.INTEGRITY,
    fx.ENV_MISMATCH,
    fx.BELOW_FLOOR,
    fx.FAILED,
    fx.RUNNING,
]


def store_runs(db: Path) -> dict[str, str]:
    """Run id -> status, as the store holds them."""
    with Engine(db, create=False, readonly=True) as eng:
        return {v.run_id: v.status for v in eng.runs()}


def decisions(db: Path) -> list[tuple[str, str, str]]:
    """(run, action, operator) of every decision the store holds (pending, applied or void)."""
    with Engine(db, create=False, readonly=True) as eng:
        return [(r, d.action, d.operator) for r in RUN_IDS for d in eng.status(r).decisions]


def handshake(served: Any, *, token: str | None = None, origin: str | None = "same", **headers: str) -> int:
    """A WebSocket opening handshake by hand; returns the HTTP status (101 = accepted)."""
    conn = http.client.HTTPConnection(served.hostport, timeout=30)
    h = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        **headers,
    }
    if origin == "same":
        h["Origin"] = served.origin
    elif origin is not None:
        h["Origin"] = origin
    conn.request("GET", f"/{served.token if token is None else token}/ws?width=80&height=24", headers=h)
    status = conn.getresponse().status
    conn.close()
    return status


def open_runs_list(term: Terminal) -> str:
    return term.wait_text(fx.ENV_MISMATCH)


def approve_env_mismatch(term: Terminal, reason: str) -> None:
    """Filter the list down to the env-mismatch run, press `a`, type a reason, Enter."""
    open_runs_list(term)
    term.type("/")
    term.type(*fx.ENV_MISMATCH)
    term.type("\n")
    term.wait_text("of 1")
    term.type("a")


def test_the_page_shows_the_runs_list_the_store_holds(store: Path, serve: Any, open_console: Any) -> None:
    served = serve(store)
    term = open_console(served.url)
    open_runs_list(term)
    # The header is painted by its own refresh, which may come after the rows
    # on a loaded machine: read the page once both are there.
    text = term.wait_text("READ-ONLY")
    runs = store_runs(store)
    assert len(runs) == 8
    lines = [line.strip() for line in text.splitlines()]
    for run_id, status in runs.items():
        row = next((line for line in lines if line.startswith(run_id)), None)
        assert row is not None, f"{run_id} not on the page:\n{text}"
        assert status in row, f"{run_id}: the store says {status}, the page says {row!r}"
    assert "read-only" in text.lower()  # the header says READ-ONLY
    assert len(served.children()) == 1
    # The token is printed once, in the URL, and never in the server's log.
    assert served.token not in served.log()


@pytest.mark.parametrize("token", ["", "wrong-token"])
def test_without_the_token_nothing_is_served_and_no_process_starts(
    store: Path, serve: Any, browser: Any, token: str
) -> None:
    served = serve(store)
    bad = f"{served.origin}/{token}/" if token else f"{served.origin}/"
    browser.get(bad)
    assert "403" in browser.find_element("tag name", "body").text
    browser.get(f"{served.origin}/{token or 'x'}/static/js/textual.js")
    assert "403" in browser.find_element("tag name", "body").text
    # A near miss: the right token with its last character changed.
    assert handshake(served, token=served.token[:-1] + ("A" if served.token[-1] != "A" else "B")) == 403
    assert handshake(served, token=token or "x") == 403
    assert served.children() == []
    assert served.proc.poll() is None


class _Foreign(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>another site</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def foreign_site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_websocket_from_a_foreign_origin_is_refused(store: Path, serve: Any, browser: Any, foreign_site: str) -> None:
    served = serve(store, "--allow-decisions")
    # Another site open in the operator's browser, which even knows the token:
    # its page's WebSocket carries its own Origin and is refused.
    browser.get(foreign_site)
    outcome = browser.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const ws = new WebSocket(arguments[0]);
        ws.onopen = () => done("open");
        ws.onerror = () => done("refused");
        """,
        f"ws://{served.hostport}/{served.token}/ws?width=80&height=24",
    )
    assert outcome == "refused"
    assert handshake(served, origin="http://evil.example") == 403
    assert handshake(served, origin=None) == 403
    assert served.children() == []
    assert "origin" in served.log()


def test_read_only_a_on_a_blocked_run_changes_nothing(store: Path, serve: Any, open_console: Any) -> None:
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    served = serve(store)
    term = open_console(served.url)
    approve_env_mismatch(term, "")
    term.type(*"checked it", "\n")
    # Give a decision every chance to land: the console answers a key it
    # knows at once, so a later key's echo means `a` was handled.
    # xterm.js drops a key typed while a loaded machine keeps its input
    # handler busy, and a dropped key leaves the console somewhere else than
    # the list: Esc back to it and ask again, a few times at most.
    for attempt in range(3):
        term.type("?")
        try:
            term.wait_text("pprove", timeout=20)  # the help screen lists the action, but offers it nowhere
            break
        except TimedOut:
            if attempt == 2:
                raise
            term.type("\x1b", "\x1b")
    term.type("\x1b")
    assert decisions(store) == []
    assert store_runs(store)[fx.ENV_MISMATCH] == "blocked"
    served.stop()
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


@pytest.mark.parametrize(
    ("args", "headers", "operator"),
    [
        ((), {}, f"web:{getpass.getuser()}"),
        (("--operator-header", "X-Forwarded-User"), {"X-Forwarded-User": "ana.ops@example.com"}, "ana.ops@example.com"),
    ],
    ids=["login-name", "proxy-header"],
)
def test_an_approve_typed_in_the_browser_lands_with_the_operator(
    store: Path,
    serve: Any,
    browser: Any,
    open_console: Any,
    args: tuple[str, ...],
    headers: dict[str, str],
    operator: str,
) -> None:
    served = serve(store, "--allow-decisions", *args)
    if headers:
        # What an authenticating proxy in front would add to every request.
        browser.execute_cdp_cmd("Network.enable", {})
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": headers})
    term = open_console(served.url)
    approve_env_mismatch(term, "checked the new tax table")
    term.wait_text("reason")
    term.type(*"checked the new tax table", "\n")
    landed = wait_for(lambda: decisions(store), what="the decision in the store")
    assert landed == [(fx.ENV_MISMATCH, "approve", operator)]


def test_an_operator_header_that_is_missing_or_not_a_name_is_refused(store: Path, serve: Any) -> None:
    served = serve(store, "--allow-decisions", "--operator-header", "X-Forwarded-User")
    assert handshake(served) == 403
    for value in ("ana ops", "<b>ana</b>", "ana;ops", "", "a" * 200):
        assert handshake(served, **{"X-Forwarded-User": value}) == 403, value
    # A control character is refused before it reaches us (400 from aiohttp's parser).
    assert handshake(served, **{"X-Forwarded-User": "ana\x1b[31m"}) in (400, 403)
    assert served.children() == []


def test_the_session_cap_holds(store: Path, serve: Any, browser: Any, open_console: Any) -> None:
    served = serve(store, "--max-sessions", "1")
    open_runs_list(open_console(served.url))
    assert len(served.children()) == 1
    browser.switch_to.new_window("tab")
    second = open_console(served.url)
    wait_for(lambda: second.text() is not None and second.closed, what="the second session refused")
    assert handshake(served) == 503
    assert len(served.children()) == 1
    assert "sessions are in use" in served.log()


def test_an_idle_session_is_closed_with_its_process(store: Path, serve: Any, open_console: Any) -> None:
    served = serve(store, "--idle-timeout", "2")
    term = open_console(served.url)
    wait_for(lambda: "session 1 opened" in served.log(), what="the session to open")
    wait_for(lambda: "session 1 closed" in served.log(), what="the idle session to close")
    assert served.children() == []
    wait_for(lambda: term.text() is not None and term.closed, what="the page to be closed")
    assert "idle" in served.log()


def test_sigterm_stops_every_session_and_leaves_no_child(
    store: Path, serve: Any, browser: Any, open_console: Any
) -> None:
    served = serve(store, "--allow-decisions")
    open_runs_list(open_console(served.url))
    browser.switch_to.new_window("tab")
    open_runs_list(open_console(served.url))
    kids = served.children()
    assert len(kids) == 2
    assert served.stop(signal.SIGTERM) == 0
    assert not any(alive(pid) for pid in kids)
