"""`watch --webhook-secret-file`: every POST signed as Standard Webhooks says;
a real loopback receiver checks it with `phasegate.ops.verify_webhook`, and
with svix's and `standardwebhooks`' own verifiers; a retry keeps its
`webhook-id`; a replay is refused."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from engine_harness import Harness
from test_watch import WatchProc, fail

from phasegate.alerts.signing import delivery_id, sign, standard_secret
from phasegate.ops import verify_webhook

SECRET = b"a-shared-secret-of-at-least-32-bytes!!"
#: The same key as a Standard Webhooks secret.
WHSEC = "whsec_" + base64.b64encode(SECRET).decode()


class Receiver:
    """A webhook receiver that checks each POST as the docs say to: 200 for a
    good signature on a fresh timestamp, 401 otherwise; the first `fail_first`
    POSTs are answered 500 whatever they carry (a receiver briefly down)."""

    def __init__(self, secret: bytes | str, fail_first: int = 0) -> None:
        self.got: list[tuple[int, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        self.fail_first = fail_first
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = dict(self.headers.items())
                with rec.lock:
                    if len(rec.got) < rec.fail_first:
                        code = 500
                    else:
                        code = 200 if verify_webhook(secret, body, headers) else 401
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


def _secret_file(tmp: Path, mode: int = 0o600, content: bytes = SECRET) -> Path:
    path = tmp / "webhook.secret"
    path.write_bytes(content + b"\n")
    os.chmod(path, mode)
    return path


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def test_signed_posts_verify_and_a_replay_is_refused(tmp_path: Path, receiver: Receiver) -> None:
    h = Harness(tmp_path)
    fail(h, "f1")
    w = WatchProc(h, "--webhook", receiver.url, "--webhook-secret-file", str(_secret_file(tmp_path)), "--once")
    assert w.proc.wait(timeout=60) == 0, w.log()
    assert [code for code, _h, _b in receiver.got] == [200], receiver.got
    _code, headers, body = receiver.got[0]
    lower = _lower(headers)
    assert json.loads(body)["run_id"] == "f1"
    assert lower["webhook-id"].startswith("msg_") and lower["webhook-timestamp"].isdigit()
    assert lower["webhook-signature"].startswith("v1,")
    base64.b64decode(lower["webhook-signature"].removeprefix("v1,"), validate=True)

    # The same request replayed: fine within five minutes, refused after.
    sent_at = int(lower["webhook-timestamp"])
    assert verify_webhook(SECRET, body, headers, now=sent_at + 299)
    assert verify_webhook(WHSEC, body, headers, now=sent_at + 299)
    assert not verify_webhook(SECRET, body, headers, now=sent_at + 301)
    # A changed body, another secret, another id, or a timestamp moved to look fresh: refused.
    assert not verify_webhook(SECRET, body.replace(b"f1", b"f2"), headers)
    assert not verify_webhook(b"another-secret-of-at-least-32-bytes!!!", body, headers)
    assert not verify_webhook(SECRET, body, {**lower, "webhook-id": "msg_other"}, now=sent_at)
    assert not verify_webhook(SECRET, body, {**lower, "webhook-timestamp": str(sent_at + 1)}, now=sent_at + 1)
    # Over HTTP: the captured request sent again is taken while fresh; one
    # whose timestamp is ten minutes old is refused (401).
    again = {k: v for k, v in headers.items() if k.lower().startswith("webhook-") or k == "Content-Type"}
    req = urllib.request.Request(receiver.url, data=body, headers=again, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200  # still within five minutes
    stale = {"Content-Type": "application/json", **sign(SECRET, body, "msg_x", now=time.time() - 600)}
    req = urllib.request.Request(receiver.url, data=body, headers=stale, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 401


def test_svix_and_standardwebhooks_verify_a_delivered_webhook(tmp_path: Path, receiver: Receiver) -> None:
    svix = pytest.importorskip("svix.webhooks")
    standardwebhooks = pytest.importorskip("standardwebhooks.webhooks")
    h = Harness(tmp_path)
    fail(h, "f1")
    # A whsec_ secret file (what those libraries generate), used as is by both ends.
    secret_file = _secret_file(tmp_path, content=WHSEC.encode())
    w = WatchProc(h, "--webhook", receiver.url, "--webhook-secret-file", str(secret_file), "--once")
    assert w.proc.wait(timeout=60) == 0, w.log()
    assert [code for code, _h, _b in receiver.got] == [200], receiver.got
    _code, headers, body = receiver.got[0]
    svix.Webhook(WHSEC).verify(body, headers)  # raises WebhookVerificationError when refused
    assert standardwebhooks.Webhook(WHSEC).verify(body, headers)["run_id"] == "f1"
    # Their refusals agree with ours.
    with pytest.raises(svix.WebhookVerificationError):
        svix.Webhook(WHSEC).verify(body.replace(b"f1", b"f2"), headers)
    other = "whsec_" + base64.b64encode(b"x" * 32).decode()
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(other).verify(body, headers)
    # And what they sign, ours verifies.
    ts = int(time.time())
    theirs = svix.Webhook(WHSEC).sign("msg_theirs", datetime.fromtimestamp(ts, tz=UTC), body.decode())
    assert verify_webhook(
        WHSEC, body, {"webhook-id": "msg_theirs", "webhook-timestamp": str(ts), "webhook-signature": theirs}
    )


def test_a_raw_secret_file_keeps_working_with_svix(tmp_path: Path, receiver: Receiver) -> None:
    svix = pytest.importorskip("svix.webhooks")
    h = Harness(tmp_path)
    fail(h, "f1")
    w = WatchProc(h, "--webhook", receiver.url, "--webhook-secret-file", str(_secret_file(tmp_path)), "--once")
    assert w.proc.wait(timeout=60) == 0, w.log()
    _code, headers, body = receiver.got[0]
    assert standard_secret(SECRET) == WHSEC
    svix.Webhook(standard_secret(SECRET)).verify(body, headers)  # raises WebhookVerificationError when refused


def test_a_retried_delivery_keeps_its_webhook_id(tmp_path: Path) -> None:
    svix = pytest.importorskip("svix.webhooks")
    h = Harness(tmp_path)
    fail(h, "f1")
    r = Receiver(SECRET, fail_first=2)
    try:
        w = WatchProc(
            h,
            "--webhook",
            r.url,
            "--webhook-secret-file",
            str(_secret_file(tmp_path)),
            "--backoff",
            "0.05",
            "--once",
        )
        assert w.proc.wait(timeout=60) == 0, w.log()
    finally:
        r.close()
    assert [code for code, _h, _b in r.got] == [500, 500, 200], r.got
    ids = {_lower(hd)["webhook-id"] for _c, hd, _b in r.got}
    assert len(ids) == 1, ids
    for _c, hd, b in r.got:
        svix.Webhook(WHSEC).verify(b, hd)  # raises WebhookVerificationError when refused
    # The id is the alert's: derived from the stop it announces, whoever sends it.
    keys = [row[0] for row in h.sql("SELECT stop_key FROM phasegate_alerts WHERE run_id = 'f1'")]
    assert ids == {delivery_id(keys[0])}, (ids, keys)


@pytest.mark.parametrize("stamp", ["\u00b2", "\u0661\u0662\u0663", "１２３", " 123", "+123", ""])
def test_a_timestamp_of_anything_but_ascii_digits_is_refused(stamp: str) -> None:
    now = time.time()
    good = sign(SECRET, b"{}", "msg_1", now=now)
    assert verify_webhook(SECRET, b"{}", good, now=now)
    assert verify_webhook(SECRET, b"{}", {**good, "webhook-timestamp": stamp}, now=now) is False


def test_a_bad_whsec_secret_file_is_one_line(tmp_path: Path, receiver: Receiver) -> None:
    h = Harness(tmp_path)
    assert h.run("r0").returncode == 0
    bad = _secret_file(tmp_path, content=b"whsec_" + b"!" * 40)
    p = h.cli("watch", "--webhook", receiver.url, "--webhook-secret-file", str(bad), "--once")
    assert p.returncode == 2 and "whsec_ but the rest is not base64" in p.stderr, p
    assert "Traceback" not in p.stderr


def test_a_secret_file_others_can_read_is_refused(tmp_path: Path, receiver: Receiver) -> None:
    h = Harness(tmp_path)
    p = h.cli("watch", "--webhook", receiver.url, "--webhook-secret-file", str(_secret_file(tmp_path, 0o644)), "--once")
    line = h.one_line_error(p)  # type: ignore[attr-defined]
    assert "--webhook-secret-file" in line and "0600" in line
    assert receiver.got == []


def test_a_signature_header_of_several_signatures_verifies_on_any_one() -> None:
    """Standard Webhooks lets a sender list several space-separated signatures
    (a key being rotated): one match is enough, and a version other than `v1`
    is never taken for one."""
    now = time.time()
    good = sign(SECRET, b"{}", "msg_1", now=now)
    other = sign(b"the-old-secret-of-at-least-32-bytes!!", b"{}", "msg_1", now=now)["webhook-signature"]
    both = {**good, "webhook-signature": f"{other} {good['webhook-signature']}"}
    assert verify_webhook(SECRET, b"{}", both, now=now)
    assert verify_webhook(WHSEC, b"{}", both, now=now)
    # What svix's own verifier takes, ours takes, and the other way round.
    svix = pytest.importorskip("svix.webhooks")
    svix.Webhook(WHSEC).verify(b"{}", both)  # raises WebhookVerificationError when refused
    assert not verify_webhook(SECRET, b"{}", {**good, "webhook-signature": other}, now=now)
    v2 = good["webhook-signature"].replace("v1,", "v2,", 1)
    assert not verify_webhook(SECRET, b"{}", {**good, "webhook-signature": v2}, now=now)
    assert not verify_webhook(SECRET, b"{}", {**good, "webhook-signature": ""}, now=now)
