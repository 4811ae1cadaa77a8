"""Delivering one alert: a command given the event on its standard input,
and/or an HTTP POST, each tried again with exponential backoff. A hook that
keeps failing is reported to the caller, never raised: the watch goes on.
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

log = logging.getLogger("phasegate.watch")

#: The longest wait between two attempts, however many retries are asked for.
MAX_BACKOFF = 60.0


def mask_url(url: str) -> str:
    """A webhook URL fit for a log: user, password and query values hidden
    (tokens travel there), scheme, host and path kept so it can be recognised."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
    except ValueError:
        return "<unparsable URL>"
    netloc = ("***@" if parts.username or parts.password else "") + host
    query = urllib.parse.urlencode([(k, "***") for k, _v in urllib.parse.parse_qsl(parts.query, True)], safe="*")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def check_url(url: str) -> str:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise UsageError(f"--webhook {mask_url(url)} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--webhook must be an http:// or https:// URL, not {mask_url(url)}")
    return url


@dataclass(frozen=True)
class Hooks:
    """Where alerts go, and how hard to try."""

    command: str | None = None
    """Run through the shell, the event as JSON on standard input."""
    webhook: str | None = None
    """POSTed the event as JSON; credentials in the URL become Basic auth."""
    retries: int = 4
    """Attempts after the first, per hook."""
    backoff: float = 1.0
    """Seconds before the first retry; doubled each time, at most `MAX_BACKOFF`."""
    timeout: float = 10.0
    """Seconds a single attempt (the command, or the request) may take."""

    def __post_init__(self) -> None:
        if not self.command and not self.webhook:
            raise UsageError("watch needs --exec CMD and/or --webhook URL: where should alerts go?")
        if self.webhook:
            check_url(self.webhook)
        if self.retries < 0 or self.backoff < 0 or self.timeout <= 0:
            raise UsageError("--retries and --backoff must be >= 0, --timeout > 0")


@dataclass(frozen=True)
class Delivery:
    ok: bool
    attempts: int
    error: str | None = None
    interrupted: bool = False
    """The watch was asked to stop between attempts: nothing is known to have arrived."""


def deliver(hooks: Hooks, event: dict[str, Any], stop: threading.Event) -> Delivery:
    """Every configured hook, each with its retries. Ok only if all arrived."""
    body = json.dumps(event, ensure_ascii=False, sort_keys=True).encode("utf-8")
    attempts, errors = 0, []
    for name, send in (("exec", _exec if hooks.command else None), ("webhook", _post if hooks.webhook else None)):
        if send is None:
            continue
        for attempt in range(hooks.retries + 1):
            attempts += 1
            err = send(hooks, body)
            if err is None:
                break
            shown = mask_url(hooks.webhook or "") if name == "webhook" else "command"
            if attempt == hooks.retries:
                errors.append(f"{name}: {err}")
                log.error(
                    "alert for %s not delivered by %s %s after %d attempts: %s",
                    event.get("run_id"),
                    name,
                    shown,
                    attempt + 1,
                    err,
                )
                break
            wait = min(hooks.backoff * 2**attempt, MAX_BACKOFF)
            log.warning("%s %s failed (attempt %d): %s; retrying in %gs", name, shown, attempt + 1, err, wait)
            if stop.wait(wait):
                return Delivery(False, attempts, "stopped while retrying", interrupted=True)
    return Delivery(not errors, attempts, "; ".join(errors) or None)


def _exec(hooks: Hooks, body: bytes) -> str | None:
    assert hooks.command is not None
    try:
        p = subprocess.run(hooks.command, shell=True, input=body, capture_output=True, timeout=hooks.timeout)
    except subprocess.TimeoutExpired:
        return f"did not finish within {hooks.timeout:g}s"
    except OSError as exc:
        return f"could not start: {exc.strerror or exc}"
    if p.returncode != 0:
        tail = p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return f"exit {p.returncode}" + (f": {tail[0][:200]}" if tail[0] else "")
    return None


def _post(hooks: Hooks, body: bytes) -> str | None:
    assert hooks.webhook is not None
    parts = urllib.parse.urlsplit(hooks.webhook)
    headers = {"Content-Type": "application/json", "User-Agent": "phasegate-watch"}
    if parts.username or parts.password:
        user = urllib.parse.unquote(parts.username or "")
        pw = urllib.parse.unquote(parts.password or "")
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port:
            netloc += f":{parts.port}"
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    else:
        url = hooks.webhook
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=hooks.timeout) as resp:  # noqa: S310 - the operator's own URL
            status = int(resp.status)
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        # Never the URL itself in the message: it may carry a token.
        reason = getattr(exc, "reason", exc)
        return f"{type(exc).__name__}: {str(reason)[:200]}"
    return None if 200 <= status < 300 else f"HTTP {status}"
