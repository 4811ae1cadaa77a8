"""How big the randomised tests are: CI size by default, soak size on request.

A torture or property test in `pytest` runs at CI size, enough for every kind
of kill, pause and damage to land at least once, so the whole suite stays
inside its budget on CI's two cores. `PHASEGATE_TEST_SOAK=1` runs the same
tests at their soak size (what `pytest` ran before the budget), and
`python -m tests.torture` is the long soak with sizes of its own.
"""

from __future__ import annotations

import os

ENV = "PHASEGATE_TEST_SOAK"


def soaking() -> bool:
    """True when `PHASEGATE_TEST_SOAK` asks for the soak sizes (1, yes, true, on)."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "yes", "true", "on")


def size(ci: int, soak: int) -> int:
    """`soak` under `PHASEGATE_TEST_SOAK=1`, else `ci`.

    Args:
        ci: the size a default run uses.
        soak: the size a soak run uses.

    Returns:
        The size for this run.
    """
    return soak if soaking() else ci
