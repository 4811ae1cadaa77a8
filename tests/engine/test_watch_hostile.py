"""`phasegate watch` against receivers that misbehave (issue #29, findings 4
and 5): a loopback HTTP server this test starts, which redirects to another
host name, answers `200` and then one byte a second, hangs, or holds a
request until the test lets it go. The watch is the real command; what it
did is read from the server's requests and the store's alerts table."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from engine_harness import Harness
from test_watch import WatchProc, fail

from tests.support.waiting import until


class Receiver:
    """A webhook receiver on 127.0.0.1 that misbehaves by path:

    - `/r302`: `302 Found` to `http://localhost:PORT/sink` (another host name);
    - `/sink`: `200 OK`, any method;
    - `/trickle`: the status line `200 OK`, then one byte a second, forever;
    - `/hang`: reads the request, never answers;
    - `/hold`: answers `200 OK` once the test sets `release`.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.closing = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length) if length else b""
                with receiver.lock:
                    receiver.requests.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "host": self.headers.get("Host"),
                            "auth": self.headers.get("Authorization"),
                            "body": body,
                        }
                    )
                path = self.path.split("?", 1)[0]
                if path == "/r302":
                    port = receiver.port
                    self.send_response(302)
                    self.send_header("Location", f"http://localhost:{port}/sink")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif path == "/trickle":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    self.wfile.flush()
                    while not receiver.closing.wait(1.0):
                        try:
                            self.wfile.write(b"X")  # a header that never ends
                            self.wfile.flush()
                        except OSError:
                            return  # the watch gave up on it
                elif path == "/hang":
                    receiver.closing.wait()
                else:
                    if path == "/hold":
                        receiver.release.wait()
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            do_POST = _handle  # noqa: N815 - http.server's naming
            do_GET = _handle  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, userinfo: str = "") -> str:
        return f"http://{userinfo}127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        with self.lock:
            return [r["path"] for r in self.requests]

    def close(self) -> None:
        self.closing.set()
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def alerts(h: Harness) -> list[tuple[Any, ...]]:
    return h.sql("SELECT run_id, state, attempts FROM phasegate_alerts ORDER BY run_id")


def test_a_redirect_is_a_failure_and_no_credential_goes_to_its_target(tmp_path: Any, receiver: Receiver) -> None:
    """Finding 4: the watch sent a bodiless GET with the Basic credentials to
    the host the 302 named, and recorded the alert as sent."""
    h = Harness(tmp_path)
    fail(h, "f1")
    url = receiver.url("/r302?token=abc", userinfo="user:s3cret@")
    p = h.cli("watch", "--once", "--webhook", url, "--retries", "1", "--backoff", "0.05", real=True)
    assert p.returncode == 0, p.stderr
    # Tried and retried at the URL given; the redirect's target never reached.
    assert receiver.paths() == ["/r302?token=abc", "/r302?token=abc"], receiver.requests
    assert all(r["method"] == "POST" and r["host"] == f"127.0.0.1:{receiver.port}" for r in receiver.requests)
    assert "HTTP 302" in p.stderr and "not followed" in p.stderr and "not delivered" in p.stderr, p.stderr
    assert "s3cret" not in p.stderr and "abc" not in p.stderr, p.stderr
    # Not announced: the stop stays on record as failed, not sent.
    assert alerts(h) == [("f1", "failed", 2)]


def test_timeout_bounds_a_receiver_that_trickles_its_answer(tmp_path: Any, receiver: Receiver) -> None:
    """Finding 5: `200 OK` and then one byte a second held the watch on one
    stop for minutes: `--timeout` bounded each read, not the request."""
    h = Harness(tmp_path)
    fail(h, "f1")
    fail(h, "f2")
    trickle = receiver.url("/trickle")
    # Each byte comes sooner than the timeout: a per-read timeout never fires.
    w = WatchProc(h, "--once", "--webhook", trickle, "--timeout", "2", "--retries", "0")
    try:
        # The trickle goes on until the test ends: only the deadline ends the watch.
        rc = w.proc.wait(timeout=60)
    finally:
        w.stop()
    log = w.log()
    assert rc == 0, log
    assert "no complete answer within 2s" in log and "not delivered" in log, log
    # Both stops were tried (the first did not hold up the second), and neither counts as sent.
    assert receiver.paths() == ["/trickle"] * 2
    assert alerts(h) == [("f1", "failed", 1), ("f2", "failed", 1)]


def test_sigterm_ends_a_send_in_progress_and_the_next_watch_sends_it(tmp_path: Any, receiver: Receiver) -> None:
    """Finding 5: a watch in a send to a receiver that never answers ignored
    SIGTERM. Stopped mid-send, nothing is known to have arrived: the claim is
    let go, and the next watch sends the alert."""
    h = Harness(tmp_path)
    w = WatchProc(h, "--webhook", receiver.url("/hang"), "--timeout", "600", "--retries", "0")
    try:
        fail(h, "f1")
        until(lambda: receiver.paths() == ["/hang"], "the watch's request")
        assert w.stop() == 0, w.log()  # a bounded wait: 30 s, against a send that would take 600
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert alerts(h) == []
    p = h.cli("watch", "--once", "--webhook", receiver.url("/sink"), real=True)
    assert p.returncode == 0, p.stderr
    assert receiver.paths() == ["/hang", "/sink"]
    assert alerts(h) == [("f1", "sent", 1)]


def test_a_claim_is_renewed_while_its_send_goes_on_so_no_second_watch_sends_it(
    tmp_path: Any, receiver: Receiver
) -> None:
    """Finding 5: after 300 s a second watch took over the claim of a watch
    still sending, and the receiver got the event twice. Here the claim is
    aged in the store (as 300 s would), and the sending watch renews it."""
    h = Harness(tmp_path)
    w = WatchProc(h, "--webhook", receiver.url("/hold"), "--timeout", "120", "--retries", "0")
    try:
        fail(h, "f1")
        until(lambda: receiver.paths() == ["/hold"], "the watch's request")
        h.sql("UPDATE phasegate_alerts SET claimed_at = claimed_at - 1000")
        aged = h.sql("SELECT claimed_at FROM phasegate_alerts")[0][0]
        until(lambda: h.sql("SELECT claimed_at FROM phasegate_alerts")[0][0] > aged + 900, "the claim renewed")
        second = h.cli("-v", "watch", "--once", "--webhook", receiver.url("/sink"), real=True)
        assert second.returncode == 0, second.stderr
        assert "being announced by another watch" in second.stderr, second.stderr
        receiver.release.set()
        until(lambda: alerts(h) == [("f1", "sent", 1)], "the first watch to settle the alert")
        assert w.stop() == 0, w.log()
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert receiver.paths() == ["/hold"], "the alert went twice"
    assert "announced f1" in w.log()


def test_a_command_hook_that_hangs_is_ended_by_sigterm(tmp_path: Any) -> None:
    """SIGTERM ends a send in progress by `--exec` too: its process group is
    killed, the claim let go."""
    h = Harness(tmp_path)
    marker = tmp_path / "started"
    w = WatchProc(h, "--exec", f"touch {marker}; sleep 600", "--timeout", "600", "--retries", "0")
    try:
        fail(h, "f1")
        until(marker.exists, "the command to start")
        time.sleep(0.2)  # sleep: the hook's shell goes on from `touch` into its `sleep 600`; nothing marks that moment
        assert w.stop() == 0, w.log()
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert alerts(h) == []
