"""`watch --webhook-secret-file`: every POST signed; a real loopback receiver
checks it with `phasegate.ops.verify_webhook`, and refuses a replay."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from engine_harness import Harness
from test_watch import WatchProc, fail

from phasegate.ops import verify_webhook

SECRET = b"a-shared-secret-of-at-least-32-bytes!!"


class Receiver:
    """A webhook receiver that checks each POST as the docs say to: 200 for a
    good signature on a fresh timestamp, 401 otherwise."""

    def __init__(self, secret: bytes) -> None:
        self.got: list[tuple[int, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = dict(self.headers.items())
                code = 200 if verify_webhook(secret, body, headers) else 401
                with rec.lock:
                    rec.got.append((code, headers, body))
                self.send_response(code)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(SECRET)
    yield r
    r.close()


def _secret_file(tmp: Path, mode: int = 0o600) -> Path:
    path = tmp / "webhook.secret"
    path.write_bytes(SECRET + b"\n")
    os.chmod(path, mode)
    return path


def test_signed_posts_verify_and_a_replay_is_refused(tmp_path: Path, receiver: Receiver) -> None:
    h = Harness(tmp_path)
    fail(h, "f1")
    w = WatchProc(h, "--webhook", receiver.url, "--webhook-secret-file", str(_secret_file(tmp_path)), "--once")
    assert w.proc.wait(timeout=60) == 0, w.log()
    assert [code for code, _h, _b in receiver.got] == [200], receiver.got
    _code, headers, body = receiver.got[0]
    assert json.loads(body)["run_id"] == "f1"
    assert headers["X-Phasegate-Signature"].startswith("v1=") and headers["X-Phasegate-Timestamp"].isdigit()

    # The same request replayed: fine within five minutes, refused after.
    sent_at = int(headers["X-Phasegate-Timestamp"])
    assert verify_webhook(SECRET, body, headers, now=sent_at + 299)
    assert not verify_webhook(SECRET, body, headers, now=sent_at + 301)
    # A changed body, another secret, or a timestamp moved to look fresh: refused.
    assert not verify_webhook(SECRET, body.replace(b"f1", b"f2"), headers)
    assert not verify_webhook(b"another-secret-of-at-least-32-bytes!!!", body, headers)
    moved = {**headers, "X-Phasegate-Timestamp": str(sent_at + 1)}
    assert not verify_webhook(SECRET, body, moved, now=sent_at + 1)
    # Over HTTP: the captured request sent again is taken while fresh; one
    # whose timestamp is ten minutes old is refused (401).
    import urllib.error
    import urllib.request

    old = {k: v for k, v in headers.items() if k.lower().startswith("x-phasegate") or k == "Content-Type"}
    req = urllib.request.Request(receiver.url, data=body, headers=old, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200  # still within five minutes
    from phasegate.alerts.signing import sign

    stale = {"Content-Type": "application/json", **sign(SECRET, body, now=time.time() - 600)}
    req = urllib.request.Request(receiver.url, data=body, headers=stale, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 401


def test_a_secret_file_others_can_read_is_refused(tmp_path: Path, receiver: Receiver) -> None:
    h = Harness(tmp_path)
    p = h.cli("watch", "--webhook", receiver.url, "--webhook-secret-file", str(_secret_file(tmp_path, 0o644)), "--once")
    line = h.one_line_error(p)  # type: ignore[attr-defined]
    assert "--webhook-secret-file" in line and "0600" in line
    assert receiver.got == []
