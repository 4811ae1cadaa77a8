"""Retrying what fails for a passing reason: a step (`ctx.step(...,
retries=)`) or a whole phase (`@wf.phase(..., retries=)`).

A retry waits `backoff * 2**(n-1)` seconds before attempt n+1, times a random
factor between 0.5 and 1.5 (jitter, so runs that failed together do not all
come back at once). Failures of phasegate itself (a lost lease, a store
error, a stop for an operator) are never retried: they are not the work's.
Every failed attempt is recorded (`Attempt`) and shown with the run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .._stop import Stop
from ..errors import PhasegateError, WorkflowError
from ..safetext import sanitised

#: Failures that are phasegate's, not the work's: never retried.
NEVER: tuple[type[BaseException], ...] = (Stop, PhasegateError)


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 0
    """Attempts after the first."""
    backoff: float = 1.0
    """Seconds before the first retry; doubled before each next one."""
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    """Only these exceptions are retried; any other fails at once."""

    @classmethod
    def of(cls, what: str, retries: Any, backoff: Any, retry_on: Any = (Exception,)) -> RetryPolicy:
        """A policy from an author's arguments, refused with one clear line
        when they cannot mean anything."""
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise WorkflowError(f"{what}: retries must be a whole number >= 0, not {retries!r}")
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or not 0 <= backoff < float("inf"):
            raise WorkflowError(f"{what}: backoff must be a number of seconds >= 0, not {backoff!r}")
        if isinstance(retry_on, type):
            retry_on = (retry_on,)
        if not isinstance(retry_on, tuple) or not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in retry_on
        ):
            raise WorkflowError(f"{what}: retry_on must be an exception class or a tuple of them, not {retry_on!r}")
        return cls(retries, float(backoff), retry_on)

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def retryable(self, exc: BaseException, attempt: int) -> bool:
        """Whether failing attempt `attempt` (from 1) with `exc` is tried again."""
        return attempt <= self.retries and isinstance(exc, self.retry_on) and not isinstance(exc, NEVER)

    def delay(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait after failed attempt `attempt` (from 1)."""
        return float(self.backoff * 2 ** (attempt - 1) * (0.5 + rng()))


NO_RETRY = RetryPolicy()


@dataclass(frozen=True)
class Attempt:
    """One failed attempt of a step or a phase."""

    phase: str
    step: str | None
    """The step's name; None for an attempt of the whole phase."""
    attempt: int
    of: int
    error: str
    """`Type: message` of what it raised."""
    retried: bool
    """False for the last attempt, whose error is the phase's."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def note(self) -> str:
        """The line `phasegate status` shows among the run's notes."""
        what = f"step {self.step} in {self.phase}" if self.step is not None else f"phase {self.phase}"
        then = "" if not self.retried else ("; retried" if self.step is not None else "; re-run from its start")
        return f"{what}: attempt {self.attempt} of {self.of} failed: {self.error}{then}"


def describe(exc: BaseException) -> str:
    """`Type: message`, storable on either backend (see `safetext.sanitised`)."""
    return sanitised(f"{type(exc).__name__}: {exc}")


def wait(seconds: float) -> None:
    time.sleep(seconds)
