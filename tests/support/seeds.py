"""The seed every randomised test starts from: fixed by default, so a run of
the suite is repeatable, and overridable to explore or to replay a failure.

Precedence: pytest's `--seed N`, then `PHASEGATE_TEST_SEED`, then `DEFAULT`.
(`PHASEGATE_TORTURE_SEED`, the older name, is still read after the new one.)
"""

from __future__ import annotations

import os

DEFAULT = 20261201
"""Any fixed number will do; this one is the day the default stopped being random."""

ENV = "PHASEGATE_TEST_SEED"
_OLD_ENV = "PHASEGATE_TORTURE_SEED"

_option: int | None = None
"""What `--seed` said; set by tests/conftest.py when pytest starts."""


def set_option(value: int | None) -> None:
    global _option
    _option = value


def test_seed() -> int:
    """The seed for this run of the tests (or of `python -m tests.torture`)."""
    if _option is not None:
        return _option
    for name in (ENV, _OLD_ENV):
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{name} must be an integer, not {raw!r}") from None
    return DEFAULT


def replay_hint(seed: int) -> str:
    """How to run the same case again, for a failure message."""
    return f"seed {seed}: replay with --seed {seed} or {ENV}={seed}"
