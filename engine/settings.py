"""The settings an `Engine` reads: each from its keyword argument, or else
from its environment variable, or else its default, and each validated
before any store is opened (a bad one is refused, not stored).

Layer: `engine`, beside `engine.py`, which alone reads them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from .errors import UsageError
from .oversight import claims
from .run.completions import DEFAULT_DELAY


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
    ) -> Settings:
        """The settings from these arguments, with the environment's for those not given.

        Args:
            lease_seconds: Seconds, or None for `PHASEGATE_LEASE_SECONDS` (30).
            effect_flush: Seconds, or None for `PHASEGATE_EFFECT_FLUSH_MS` / 1000.
            retention_days: Days, or None for `PHASEGATE_RETENTION_DAYS` (30).
            claim_seconds: Seconds, or None for `PHASEGATE_CLAIM_SECONDS`.
            archive_dir: A folder, or None (or "") for `PHASEGATE_ARCHIVE_DIR`.

        Returns:
            The settings, each checked.

        Raises:
            UsageError: A variable that is not a number, or a value out of its
                range; the first in the order of the arguments above.
        """
        return cls(
            lease_seconds=_checked_lease(
                lease_seconds if lease_seconds is not None else _env_float("PHASEGATE_LEASE_SECONDS", 30.0)
            ),
            effect_flush=_checked_flush(
                effect_flush
                if effect_flush is not None
                else _env_float("PHASEGATE_EFFECT_FLUSH_MS", DEFAULT_DELAY * 1000) / 1000
            ),
            retention_days=_checked_retention(
                retention_days if retention_days is not None else _env_float("PHASEGATE_RETENTION_DAYS", 30.0)
            ),
            claim_seconds=_checked_claim(
                claim_seconds
                if claim_seconds is not None
                else _env_float("PHASEGATE_CLAIM_SECONDS", claims.DEFAULT_CLAIM_SECONDS)
            ),
            archive_dir=archive_dir or os.environ.get("PHASEGATE_ARCHIVE_DIR"),
        )


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise UsageError(f"{name} must be a number, not {raw!r}") from None


def _checked_lease(value: float) -> float:
    # nan would store a NULL expiry (a run held for ever), a negative one a
    # lease already lapsed (a second process takes a live run).
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"the lease (PHASEGATE_LEASE_SECONDS) must be a finite number of seconds > 0, not {value}")
    return value


def _checked_claim(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise UsageError(
            f"the claim expiry (PHASEGATE_CLAIM_SECONDS) must be a finite number of seconds > 0, not {value}"
        )
    return value


def _checked_flush(value: float) -> float:
    # How long an effect's completion may wait to commit with the run's next
    # write (completions.py): a negative or endless wait would strand it.
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"PHASEGATE_EFFECT_FLUSH_MS must be a finite number of milliseconds >= 0, not {value * 1000}")
    return value


def _checked_retention(value: float) -> float:
    if math.isnan(value) or value < 0:
        raise UsageError(f"the retention (PHASEGATE_RETENTION_DAYS) must be a number of days >= 0, not {value}")
    return value
