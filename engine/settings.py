"""The settings an `Engine` reads: each from its keyword argument, or else
from its environment variable, or else its default, and each validated
before any store is opened (a bad one is refused, not stored).

Layer: `engine`, beside `engine.py`, which alone reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import bounds
from .oversight import claims
from .run.completions import DEFAULT_DELAY
from .run.parking import DEFAULT_PARK_SECONDS


@dataclass(frozen=True)
class Settings:
    """What an `Engine` was configured with, checked."""

    lease_seconds: float
    """How long a run's lease lasts unrenewed (`PHASEGATE_LEASE_SECONDS`)."""
    effect_flush: float
    """Seconds an effect's completion may wait to commit with the run's next
    transaction (`PHASEGATE_EFFECT_FLUSH_MS`, in milliseconds; 0: committed
    before `ctx.effect` returns)."""
    retention_days: float
    """Days a completed run is kept whole before it becomes a prune candidate
    (`PHASEGATE_RETENTION_DAYS`)."""
    claim_seconds: float
    """How long an operator's claim on a run lasts (`PHASEGATE_CLAIM_SECONDS`)."""
    park_seconds: float
    """A wait at least this long parks the run instead of sleeping in the
    process (`PHASEGATE_PARK_SECONDS`)."""
    archive_dir: str | None
    """The archive folder as configured (`PHASEGATE_ARCHIVE_DIR`), or None for
    the one beside the store (`history.archive.archive_dir` resolves it)."""

    @classmethod
    def read(
        cls,
        *,
        lease_seconds: float | None = None,
        effect_flush: float | None = None,
        retention_days: float | None = None,
        claim_seconds: float | None = None,
        archive_dir: str | None = None,
        park_seconds: float | None = None,
    ) -> Settings:
        """The settings from these arguments, with the environment's for those not given.

        Args:
            lease_seconds: Seconds, or None for `PHASEGATE_LEASE_SECONDS` (30).
            effect_flush: Seconds, or None for `PHASEGATE_EFFECT_FLUSH_MS` / 1000.
            retention_days: Days, or None for `PHASEGATE_RETENTION_DAYS` (30).
            claim_seconds: Seconds, or None for `PHASEGATE_CLAIM_SECONDS`.
            archive_dir: A folder, or None (or "") for `PHASEGATE_ARCHIVE_DIR`.
            park_seconds: Seconds, or None for `PHASEGATE_PARK_SECONDS` (30).

        Returns:
            The settings, each checked.

        Raises:
            UsageError: A variable that is not a number, or a value out of its
                range; the first in the order of the arguments above.
        """
        # One parser for every number (bounds.py): nan, inf and values no
        # one means (a lease of a year, a claim of 1e12 s) are refused here,
        # before a store is opened, instead of stored and met later.
        flush_ms = None if effect_flush is None else effect_flush * 1000
        return cls(
            lease_seconds=_one(lease_seconds, bounds.LEASE_SECONDS, "PHASEGATE_LEASE_SECONDS", 30.0),
            effect_flush=_one(flush_ms, bounds.FLUSH_MS, "PHASEGATE_EFFECT_FLUSH_MS", DEFAULT_DELAY * 1000) / 1000,
            retention_days=_one(retention_days, bounds.RETENTION_DAYS, "PHASEGATE_RETENTION_DAYS", 30.0),
            claim_seconds=_one(
                claim_seconds, bounds.WAIT_SECONDS, "PHASEGATE_CLAIM_SECONDS", claims.DEFAULT_CLAIM_SECONDS
            ),
            park_seconds=_one(park_seconds, bounds.PARK_SECONDS, "PHASEGATE_PARK_SECONDS", DEFAULT_PARK_SECONDS),
            archive_dir=archive_dir or os.environ.get("PHASEGATE_ARCHIVE_DIR"),
        )


def _one(given: float | None, where: bounds.Range, env: str, default: float) -> float:
    # A value given in code is named by the variable it stands in for: the
    # one name the documentation gives that setting.
    return where.from_env(env, default) if given is None else where.check(given, env)
