"""A model and a tool on a real HTTP server on loopback, in a process of its
own, for the agent tests: every request it gets is appended to a log file
(fsynced) before it answers, so a test counts what reached it even when the
caller was SIGKILLed mid-call.

  POST /model  {"turn": N, ...}   -> {"text": "reply N"} after `delay` seconds
  POST /send   {"key": K, ...}    -> {"ok": true, "key": K}
  GET  /sent?key=K                -> {"sent": true|false}

`python -m tests.support.standin LOG [DELAY]` prints its port on stdout.
`Standin` starts and stops one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.support.cli import child_env


def _log(path: str, record: dict[str, Any]) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_log(path: Path) -> list[dict[str, Any]]:
    """What reached the server, in order (a torn last line is not a request)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def serve(log: str, delay: float) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _answer(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/model":
                _log(log, {"kind": "model", **body})
                time.sleep(float(body.get("delay", delay)))  # sleep: a slow model API
                self._answer({"text": f"reply {body.get('turn')}"})
            elif self.path == "/send":
                _log(log, {"kind": "send", **body})
                self._answer({"ok": True, "key": body.get("key")})
            else:
                self.send_error(404)

        def do_GET(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            if url.path == "/sent":
                key = parse_qs(url.query).get("key", [""])[0]
                sent = any(r.get("kind") == "send" and r.get("key") == key for r in read_log(Path(log)))
                self._answer({"sent": sent})
            else:
                self.send_error(404)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


class Standin:
    """A stand-in server in a child process; `url` once started."""

    def __init__(self, log: Path, delay: float = 0.05) -> None:
        self.log = log
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.standin", str(log), str(delay)],
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        assert self._proc.stdout is not None
        port = self._proc.stdout.readline().strip()
        if not port:
            raise RuntimeError("the stand-in server did not start")
        self.url = f"http://127.0.0.1:{port}"

    def requests(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in read_log(self.log) if r.get("kind") == kind]

    def close(self) -> None:
        self._proc.kill()
        self._proc.wait()

    def __enter__(self) -> Standin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    serve(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.05)
