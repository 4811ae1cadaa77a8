"""Delivering one alert: a command given the event on its standard input,
and/or an HTTP POST, each tried again with exponential backoff. A hook that
keeps failing is reported to the caller, never raised: the watch goes on.

Each attempt has one deadline (`Hooks.timeout`) over the whole exchange,
and the watch's stop (SIGTERM) ends an attempt where it is: neither a slow
receiver nor a hung command holds a stop's alert, or the watch, for longer.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from . import _attempt

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
    """POSTed the event as JSON; credentials in the URL become Basic auth.
    Only a 2xx answer counts; a redirect is not followed (a failure)."""
    retries: int = 4
    """Attempts after the first, per hook."""
    backoff: float = 1.0
    """Seconds before the first retry; doubled each time, at most `MAX_BACKOFF`."""
    timeout: float = 10.0
    """Seconds a single attempt may take in all: the command to its exit, or
    the request from connecting to the last header of the answer."""
    secret: bytes | None = field(default=None, repr=False)
    """Signs each POST (signing.py): `--webhook-secret-file`'s content. Never shown."""

    def __post_init__(self) -> None:
        if not self.command and not self.webhook:
            raise UsageError("watch needs --exec CMD and/or --webhook URL: where should alerts go?")
        if self.webhook:
            check_url(self.webhook)
        if self.secret is not None and not self.webhook:
            raise UsageError("--webhook-secret-file signs webhooks: give --webhook URL too")
        if self.retries < 0 or self.backoff < 0 or self.timeout <= 0:
            raise UsageError("--retries and --backoff must be >= 0, --timeout > 0")


@dataclass(frozen=True)
class Delivery:
    """How the delivery of one alert ended."""

    ok: bool
    """Every configured hook took it (a command exited 0, a webhook answered 2xx)."""
    attempts: int
    """Attempts made, over all hooks."""
    error: str | None = None
    """Why not, per hook, when not ok."""
    interrupted: bool = False
    """The watch was asked to stop during an attempt or between two: nothing is known to have arrived."""


#: Seconds between two renewals of an alert's claim while its delivery goes on.
KEEPALIVE_EVERY = 5.0
#: How often a wait looks at the watch's stop and its deadline.
_TICK = 0.1


class _Stopped(Exception):
    """The watch's stop was set while waiting."""


def deliver(
    hooks: Hooks,
    event: dict[str, Any],
    stop: threading.Event,
    keepalive: Callable[[], None] | None = None,
    msg_id: str | None = None,
) -> Delivery:
    """Send `event` through every configured hook, each with its retries.

    Args:
        hooks: Where to send it, and how hard to try.
        event: The alert's event, sent as JSON.
        stop: Set by SIGTERM: the attempt in progress is ended and nothing more is tried.
        keepalive: Called every `KEEPALIVE_EVERY` seconds while the delivery
            goes on (the watch renews its claim on the alert with it).
        msg_id: The webhook's `webhook-id`, the same on each retry (default:
            one derived from the body).

    Returns:
        Ok only if every hook took the event; `interrupted` when `stop` ended it.
    """
    body = json.dumps(event, ensure_ascii=False, sort_keys=True).encode("utf-8")
    attempts, errors = 0, []
    clock = _Clock(stop, keepalive)
    for name in ("exec", "webhook"):
        if (hooks.command if name == "exec" else hooks.webhook) is None:
            continue
        shown = mask_url(hooks.webhook or "") if name == "webhook" else "command"
        for attempt in range(hooks.retries + 1):
            attempts += 1
            try:
                err = clock.attempt(_start(hooks, name, body, msg_id), hooks.timeout)
                if err is None:
                    break
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
                clock.pause(wait)
            except _Stopped:
                return Delivery(False, attempts, "stopped while sending", interrupted=True)
    return Delivery(not errors, attempts, "; ".join(errors) or None)


def _start(hooks: Hooks, name: str, body: bytes, msg_id: str | None) -> _attempt.Attempt:
    if name == "exec":
        assert hooks.command is not None
        return _attempt.CommandAttempt(hooks.command, body).start()
    assert hooks.webhook is not None
    return _attempt.PostAttempt(hooks.webhook, body, hooks.timeout, hooks.secret, msg_id).start()


class _Clock:
    """The waits of one delivery: each watches the stop and calls the keepalive on time."""

    def __init__(self, stop: threading.Event, keepalive: Callable[[], None] | None) -> None:
        self.stop = stop
        self.keepalive = keepalive
        self.next_keepalive = time.monotonic() + KEEPALIVE_EVERY

    def attempt(self, running: _attempt.Attempt, timeout: float) -> str | None:
        """Wait for `running` until `timeout` seconds passed; then end it.

        Raises:
            _Stopped: the stop was set (the attempt is ended first).
        """
        deadline = time.monotonic() + timeout
        while not running.wait(_TICK):
            if self.stop.is_set():
                running.end()
                raise _Stopped
            if time.monotonic() >= deadline:
                running.end()
                return f"no complete answer within {timeout:g}s"
            self._tick()
        return running.error

    def pause(self, seconds: float) -> None:
        """Wait `seconds` between two attempts.

        Raises:
            _Stopped: the stop was set.
        """
        end = time.monotonic() + seconds
        while not self.stop.wait(max(0.0, min(_TICK, end - time.monotonic()))):
            if time.monotonic() >= end:
                return
            self._tick()
        raise _Stopped

    def _tick(self) -> None:
        if self.keepalive is not None and time.monotonic() >= self.next_keepalive:
            self.next_keepalive = time.monotonic() + KEEPALIVE_EVERY
            self.keepalive()
