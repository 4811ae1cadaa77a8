"""Numbers a person configures (a flag, an environment variable, the policy),
checked against the range in which they make sense: the one parser every
duration and count goes through.

A number outside its range is not only a typo to refuse early: a proposal
that lapses in 3e11 seconds is a time no calendar can show (year 11533), nan
compares false with everything (a claim that never lapses and never holds),
inf overflows a sleep, 1e-300 lapses before anyone could read it. Each range
below is where the setting means what its name says; a value outside it is
refused with one line (`UsageError`, exit 2) before anything is stored.

Layer: base.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import UsageError

YEAR = 365 * 86400.0
"""Seconds in a (365-day) year: the longest wait a person configures."""
DAY = 86400.0
"""Seconds in a day."""
_N = TypeVar("_N", int, float)


def _g(value: float) -> str:
    return f"{value:.15g}"  # 31536000, not 3.1536e+07


@dataclass(frozen=True)
class Range:
    """A closed range of numbers of one unit, and how to say it."""

    low: float
    """The smallest value that makes sense."""
    high: float
    """The largest value that makes sense."""
    unit: str = "seconds"
    """What the number counts, for the message (`seconds`, `days`...)."""

    def describe(self) -> str:
        """The range as the refusal says it: `a number of seconds from 1 to 31536000`."""
        return f"a number of {self.unit} from {_g(self.low)} to {_g(self.high)}"

    def check(self, value: float, what: str) -> float:
        """`value` if it lies in the range.

        Args:
            value: The number given.
            what: Where it came from (a flag or a variable), for the message.

        Returns:
            `value`, as a float.

        Raises:
            UsageError: It is nan, infinite, or outside the range.
        """
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise UsageError(f"{what} must be {self.describe()}, not {value:g}")
        return float(value)

    def parse(self, text: str, what: str) -> float:
        """The number `text` spells, checked.

        Args:
            text: The text given (a flag's value, a variable's).
            what: Where it came from, for the message.

        Returns:
            The number.

        Raises:
            UsageError: `text` is not a number, or the number is out of range.
        """
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"{what} must be {self.describe()}, not {text!r}") from None
        return self.check(value, what)

    def from_env(self, name: str, default: float) -> float:
        """The variable `name` as a number in this range, or `default` when unset or empty.

        Args:
            name: The environment variable.
            default: Its value when it is not set (not checked: the caller's constant).

        Returns:
            The number.

        Raises:
            UsageError: The variable is set to something out of range or not a number.
        """
        raw = os.environ.get(name)
        return default if not raw else self.parse(raw, name)

    def argtype(self) -> Callable[[str], float]:
        """An argparse `type=` for a flag in this range (argparse names the flag)."""
        return _argtype(self.parse)


@dataclass(frozen=True)
class Count:
    """A closed range of whole numbers (attempts, jobs, sessions, ids)."""

    low: int
    high: int

    def parse(self, text: str, what: str) -> int:
        """The whole number `text` spells, checked.

        Args:
            text: The text given.
            what: Where it came from, for the message.

        Returns:
            The number.

        Raises:
            UsageError: Not a whole number, or outside the range.
        """
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"{what} must be a whole number from {self.low} to {self.high}, not {text!r}") from None
        if not self.low <= value <= self.high:
            raise UsageError(f"{what} must be a whole number from {self.low} to {self.high}, not {value}")
        return value

    def argtype(self) -> Callable[[str], int]:
        """An argparse `type=` for a flag in this range."""
        return _argtype(self.parse)


def _argtype(parse: Callable[[str, str], _N]) -> Callable[[str], _N]:
    # argparse calls a `type=` with the text alone and names the flag itself
    # when the call raises ArgumentTypeError: the message is the range's,
    # without a name of its own.
    def checked(text: str) -> _N:
        try:
            return parse(text, "it")
        except UsageError as exc:
            raise argparse.ArgumentTypeError(exc.message.removeprefix("it ")) from None

    return checked


WAIT_SECONDS = Range(1.0, YEAR)
"""How long something waits for a person: a proposal for its second, a claim,
an idle browser session. Under a second no person can act; over a year the
time is no longer one anybody means (and 3e11 is past year 9999)."""
INTERVAL_SECONDS = Range(0.001, DAY)
"""How often a process looks or beats, and how long one attempt may take:
polls, heartbeats, retry backoffs, hook timeouts."""
LEASE_SECONDS = Range(0.05, DAY)
"""A run's lease (`PHASEGATE_LEASE_SECONDS`): renewed every third of it, so
under 50 ms the heartbeat is all a process does; over a day a dead holder
keeps its run that long."""
FLUSH_MS = Range(0.0, 3_600_000.0, "milliseconds")
"""How long an effect's completion may wait for the run's next commit
(`PHASEGATE_EFFECT_FLUSH_MS`): 0 commits it at once; the tests hold it for
minutes to see a completion ride with the next commit; past an hour it is an
in-doubt window nobody means."""
PARK_SECONDS = Range(0.0, DAY)
"""A wait at least this long parks the run (`PHASEGATE_PARK_SECONDS`): it
gives up its lease and process, and a worker resumes it when due. A shorter
one sleeps in the process, holding the lease. 0 parks every wait."""
RETENTION_DAYS = Range(0.0, 36_500.0, "days")
"""Days a completed run is kept whole before pruning may take it."""
RETRIES = Count(0, 100)
"""Attempts after the first (a hook's)."""
JOBS = Count(1, 256)
"""Runs one worker resumes at once."""
ROW_ID = Count(1, 2**63 - 1)
"""A stored row's id (a decision's, a policy change's): what a 64-bit column holds."""
PAGE = Count(1, 10_000)
"""How many rows a page shows (`policy --limit`)."""


__all__ = [
    "DAY",
    "FLUSH_MS",
    "INTERVAL_SECONDS",
    "JOBS",
    "LEASE_SECONDS",
    "PARK_SECONDS",
    "RETENTION_DAYS",
    "RETRIES",
    "ROW_ID",
    "WAIT_SECONDS",
    "YEAR",
    "Count",
    "Range",
]
