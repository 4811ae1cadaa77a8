"""One attempt at a hook, run in a thread of its own so that the watch can end
it: at its deadline, or when SIGTERM asks the watch to stop.

A socket timeout bounds each read, not the exchange: a receiver that sends
one byte a second keeps a blocking call alive forever. So the attempt runs
beside the watch, which waits for it against one deadline and, when that
passes (or the watch is stopped), shuts its sockets or kills its command.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.client
import os
import signal
import socket
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from . import signing


class Attempt:
    """A send in progress. `error` is None once it arrived, else why not."""

    def __init__(self, name: str) -> None:
        self.error: str | None = "not finished"
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._ended = False
        self._enders: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Attempt:
        """Begin the attempt in its thread.

        Returns:
            This attempt, running.
        """
        self._thread.start()
        return self

    def wait(self, seconds: float) -> bool:
        """Wait for the attempt to finish.

        Args:
            seconds: At most this long.

        Returns:
            Whether it finished (then `error` says how).
        """
        return self._done.wait(seconds)

    def end(self) -> None:
        """Stop the attempt where it is (its socket shut, its command killed).
        Its thread then finishes on its own; what it reports is ignored."""
        with self._lock:
            self._ended = True
            enders, self._enders = self._enders, []
        for ender in enders:
            with contextlib.suppress(OSError):
                ender()

    def on_end(self, ender: Callable[[], None]) -> None:
        """Register how to stop a resource the attempt just opened.

        Args:
            ender: Stops it (shuts a socket, kills a process group).

        Raises:
            OSError: The attempt was ended already: the resource is stopped
                at once, and the thread must not go on with it.
        """
        with self._lock:
            if not self._ended:
                self._enders.append(ender)
                return
        with contextlib.suppress(OSError):
            ender()
        raise OSError("the attempt was ended")

    def _run(self) -> None:
        try:
            self.error = self.send()
        except Exception as exc:  # noqa: BLE001 - an attempt reports, never raises
            self.error = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            self._done.set()

    def send(self) -> str | None:
        """The attempt itself, in its thread.

        Returns:
            None once the hook took the event, else why not (one line, no URL).
        """
        raise NotImplementedError


class CommandAttempt(Attempt):
    """`command` through the shell, the event on its standard input. It runs
    in a session of its own, so ending it kills what the shell started too."""

    def __init__(self, command: str, body: bytes) -> None:
        super().__init__("hook-exec")
        self.command = command
        self.body = body

    def send(self) -> str | None:
        try:
            p = subprocess.Popen(
                self.command,
                shell=True,  # noqa: S602 - the operator's own command line (--exec)
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return f"could not start: {exc.strerror or exc}"
        self.on_end(functools.partial(os.killpg, p.pid, signal.SIGKILL))
        _out, err = p.communicate(self.body)
        if p.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return f"exit {p.returncode}" + (f": {tail[0][:200]}" if tail[0] else "")
        return None


class PostAttempt(Attempt):
    """The event POSTed to `url`. A redirect is an answer, not followed: the
    alert would go elsewhere (urllib re-sends a 302 as a bodiless GET, with
    the Authorization header made from the first URL's credentials), so a
    3xx is a failure like any other status outside 2xx. The answer counts
    once its status line and headers arrived; its body is not read."""

    def __init__(
        self, url: str, body: bytes, timeout: float, secret: bytes | None = None, msg_id: str | None = None
    ) -> None:
        super().__init__("hook-webhook")
        self.url = url
        self.body = body
        self.timeout = timeout
        self._secret = secret
        """Signs the POST (signing.py) when given: the HMAC key."""
        self.msg_id = msg_id or signing.delivery_id(hashlib.sha256(body).hexdigest())
        """The delivery's `webhook-id`, the same on each retry."""

    def send(self) -> str | None:
        url, headers = _split_credentials(self.url)
        headers.update({"Content-Type": "application/json", "User-Agent": "phasegate-watch"})
        if self._secret is not None:
            # Signed at each attempt: a retry carries its own, fresh, timestamp, and the same id.
            headers.update(signing.sign(self._secret, self.body, self.msg_id))
        else:
            headers[signing.ID_HEADER] = self.msg_id
        req = urllib.request.Request(url, data=self.body, headers=headers, method="POST")
        opener = urllib.request.build_opener(_NoRedirect(), _HTTPHandler(self), _HTTPSHandler(self))
        try:
            with opener.open(req, timeout=self.timeout) as resp:
                status = int(resp.status)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                return f"HTTP {exc.code} (a redirect: not followed)"
            return f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            # Never the URL itself in the message: it may carry a token.
            reason = getattr(exc, "reason", exc)
            return f"{type(exc).__name__}: {str(reason)[:200]}"
        return None if 200 <= status < 300 else f"HTTP {status}"

    def connection(self, base: type[http.client.HTTPConnection], *args: Any, **kwargs: Any) -> Any:
        """An `http.client` connection whose every socket this attempt can shut.

        Args:
            base: `HTTPConnection` or `HTTPSConnection`.
            *args: What urllib gives the connection class.
            **kwargs: Likewise.

        Returns:
            The connection, its socket factory wrapped.
        """
        conn = base(*args, **kwargs)
        create = conn._create_connection  # type: ignore[attr-defined]

        def tracked(*a: Any, **kw: Any) -> socket.socket:
            sock: socket.socket = create(*a, **kw)
            self.on_end(functools.partial(_shut, sock))
            return sock

        conn._create_connection = tracked  # type: ignore[attr-defined]
        return conn


def _split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its user and password, and those as a Basic
    Authorization header (urllib would refuse a URL with them)."""
    parts = urllib.parse.urlsplit(url)
    if not (parts.username or parts.password):
        return url, {}
    user = urllib.parse.unquote(parts.username or "")
    pw = urllib.parse.unquote(parts.password or "")
    auth = "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")), {"Authorization": auth}


def _shut(sock: socket.socket) -> None:
    # shutdown wakes a thread blocked in recv on it; close alone may not.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Replaces urllib's redirect handler: a 3xx then reaches the default
    error handler and is raised as an HTTPError, like a 500."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, attempt: PostAttempt) -> None:
        super().__init__()
        self._attempt = attempt

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        conn = functools.partial(self._attempt.connection, http.client.HTTPConnection)
        return self.do_open(conn, req)  # type: ignore[arg-type]


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, attempt: PostAttempt) -> None:
        super().__init__()
        self._attempt = attempt

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        conn = functools.partial(self._attempt.connection, http.client.HTTPSConnection)
        return self.do_open(conn, req, context=self._context)  # type: ignore[arg-type, attr-defined]
