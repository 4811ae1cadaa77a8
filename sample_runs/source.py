"""A simulated remote file source with rate limits and transient errors, and
the retry helper the sample workflows call it through.

The "remote" is a folder (`MANIFEST` plus one file per entry). Its failures
are deterministic, so a demo or test run behaves the same every time: about a
third of the files fail their first fetch with a transient error, and more
than `burst` fetches in quick succession are refused with a retry-after.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class SourceError(Exception):
    """Base of what the source can answer instead of a file."""


class TransientError(SourceError):
    """A 503 or a reset connection: worth trying again."""


class RateLimited(TransientError):
    """A 429: try again after `retry_after` seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited; retry after {retry_after:.2f}s")
        self.retry_after = retry_after


class NotFound(SourceError):
    """A 404: the file is gone; trying again will not bring it back."""


class Source:
    """One client session against the source folder `root`."""

    def __init__(self, root: str | Path, *, burst: int = 4, window: float = 0.2, latency: float = 0.0) -> None:
        self.root = Path(root)
        self.burst = burst
        self.window = window
        self.latency = latency
        self._recent: list[float] = []
        self._attempts: dict[str, int] = {}

    def list(self) -> list[str]:
        return [n.strip() for n in (self.root / "MANIFEST").read_text().splitlines() if n.strip()]

    def fetch(self, name: str) -> str:
        now = time.monotonic()
        self._recent = [t for t in self._recent if now - t < self.window]
        if len(self._recent) >= self.burst:
            raise RateLimited(self.window - (now - self._recent[0]))
        self._recent.append(now)
        attempt = self._attempts.get(name, 0) + 1
        self._attempts[name] = attempt
        if self.latency:
            time.sleep(self.latency)
        if attempt == 1 and int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 == 0:
            raise TransientError(f"503 from source for {name} (attempt {attempt})")
        path = self.root / name
        if not path.is_file():
            raise NotFound(f"404: {name} is not on the source")
        return path.read_text()


def retry(
    fn: Callable[[], T],
    *,
    attempts: int = 6,
    base_delay: float = 0.01,
    on: tuple[type[BaseException], ...] = (TransientError,),
    log: list[str] | None = None,
) -> T:
    """Call `fn` until it succeeds, backing off exponentially (or as long as a
    rate limit asks). Anything not in `on` is raised at once: a 404 will not
    go away by asking again."""
    for i in range(attempts):
        try:
            return fn()
        except on as exc:
            if i == attempts - 1:
                raise
            delay = getattr(exc, "retry_after", None) or base_delay * (2**i)
            if log is not None:
                log.append(f"attempt {i + 1}: {exc}; retrying in {delay:.2f}s")
            time.sleep(max(delay, 0.0))
    raise AssertionError("unreachable")
