"""How big the randomised tests are: CI size by default, soak size on request.

A torture or property test in `pytest` runs at CI size, enough for every kind
of kill, pause and damage to land at least once, so the whole suite stays
inside its budget on CI's two cores. `PHASEGATE_TEST_SOAK=1` runs the same
tests at their soak size (what `pytest` ran before the budget), and
`python -m tests.torture` is the long soak with sizes of its own.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

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


def _kind(point: str) -> str:
    """A kill point's kind: its prefix (`after-step`, `in-phase`, ...) and,
    for a step, its `@` marker (`@recv`, `@recvwait`), without the names."""
    prefix, _, rest = point.partition(":")
    marker = rest.partition("/@")[2].partition(":")[0]
    return f"{prefix}/@{marker}" if marker else prefix


def kill_points(points: Sequence[str], backend: str, every: int = 3) -> list[str]:
    """The kill points a sweep run on `backend` takes, in their order.

    SQLite takes every point. PostgreSQL, where each kill costs a few times
    more and runs the same engine code, takes a deterministic sample: every
    `every`-th point, the first and the last, and the first point of each
    kind (`_kind`), so every kind of kill still lands on both backends.
    `PHASEGATE_TEST_SOAK=1` takes every point on both.

    Args:
        points: every point an uninterrupted drive reached, in order.
        backend: "sqlite" or "postgres" (the harness's `backend`).
        every: PostgreSQL's stride.

    Returns:
        The points to kill at.
    """
    if backend == "sqlite" or soaking() or len(points) <= 2:
        return list(points)
    seen: set[str] = set()
    keep: list[str] = []
    for i, point in enumerate(points):
        kind = _kind(point)
        if i % every == 0 or i == len(points) - 1 or kind not in seen:
            keep.append(point)
        seen.add(kind)
    return keep
