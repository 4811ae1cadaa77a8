"""The runs list and its counts, read from the runs table alone: what
`Engine.runs`, `Engine.counts` and the console's header show.

A run whose holder on this host is dead is interrupted at once, not when its
lease lapses: both the list's order and the counts place it there from the
first look. A damaged row is a line that says so, never an error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from .._host import HOST
from ..errors import StoreError
from ..run.lease import holder_alive
from ..states import RunStatus
from ..store import _rowcheck
from ..store.store import Store
from .models import RunSummary
from .status import effective_status


def page(
    store: Store,
    now: float,
    *,
    limit: int | None,
    offset: int,
    statuses: Sequence[str] | None,
    text: str | None,
    order: str,
    after: Sequence[Any] | None,
    inclusive: bool,
    backward: bool,
) -> list[RunSummary]:
    """A page of the runs list (the arguments are `Engine.runs`'s).

    Args:
        store: The store.
        now: The time the statuses are judged at.
        limit: At most this many lines; None: all.
        offset: Lines to skip after those read.
        statuses: Only runs whose stored status is one of these.
        text: Only runs whose id, workflow or reason contains it.
        order: "attention", or a column; a "-" prefix descends.
        after: A line's `sort_key` from a page read in the same order.
        inclusive: With `after`: the page starts at that line.
        backward: The page before `after`.

    Returns:
        The page's lines, in order.
    """
    with store.read() as conn:
        return page_on(
            store,
            conn,
            now,
            limit=limit,
            offset=offset,
            statuses=statuses,
            text=text,
            order=order,
            after=after,
            inclusive=inclusive,
            backward=backward,
        )


def page_on(
    store: Store,
    conn: Any,
    now: float,
    *,
    limit: int | None,
    offset: int,
    statuses: Sequence[str] | None,
    text: str | None,
    order: str,
    after: Sequence[Any] | None,
    inclusive: bool,
    backward: bool,
) -> list[RunSummary]:
    """`page`, read inside a transaction the caller holds (a screen's one
    read: `views/runspage.py`).

    Args:
        store: The store.
        conn: The caller's read transaction.
        now: The time the statuses are judged at.
        limit: At most this many lines; None: all.
        offset: Lines to skip after those read.
        statuses: Only runs whose stored status is one of these.
        text: Only runs whose id, workflow or reason contains it.
        order: "attention", or a column; a "-" prefix descends.
        after: A line's `sort_key` from a page read in the same order.
        inclusive: With `after`: the page starts at that line.
        backward: The page before `after`.

    Returns:
        The page's lines, in order.
    """
    dead: list[str] = []
    if order.lstrip("-") == "attention":
        dead = [
            r.run_id
            for r in store.runs.running_candidates(conn, now, HOST)
            if r.lease_host == HOST and not _alive(r, now)
        ]
    keyed = store.runs.page(
        conn,
        limit=None if limit is None else limit + offset,
        order=order,
        statuses=statuses,
        text=text,
        now=now,
        dead=dead,
        after=after,
        inclusive=inclusive,
        backward=backward,
    )
    if offset:
        keyed = keyed[:-offset] if backward else keyed[offset:]
    # A running run's steps since its last checkpoint: its row counts
    # them only at the next one, and a live run must not look stuck.
    running = [(r.run_id, r.frontier_phase) for r, _k in keyed if r.status == "running" and r.frontier_phase]
    live_steps = store.steps.counts(conn, running) if running else {}
    out = []
    for r, key in keyed:
        try:
            line = RunSummary.from_row(_rowcheck.check(r), now, key)
            if live_steps.get(line.run_id, 0) > line.steps_done:
                line = replace(line, steps_done=live_steps[line.run_id])
            out.append(line)
        except StoreError as exc:
            out.append(RunSummary.damaged(r, exc.message, key))
    return out


def ids(store: Store) -> Iterator[str]:
    """Every run's id, in order, read a page at a time (a short read transaction each).

    Args:
        store: The store.

    Yields:
        Each run id.
    """
    after = ""
    while True:
        with store.read() as conn:
            page = store.runs.ids(conn, after=after)
        if not page:
            return
        yield from page
        after = page[-1]


def counts(store: Store, now: float) -> dict[str, int]:
    """Runs by status as an operator sees it (see `Engine.counts`).

    Args:
        store: The store.
        now: The time the statuses are judged at.

    Returns:
        Status name -> how many runs are in it (statuses with none left out).
    """
    with store.read() as conn:
        return counts_on(store, conn, now)


def counts_on(store: Store, conn: Any, now: float) -> dict[str, int]:
    """`counts`, read inside a transaction the caller holds.

    Args:
        store: The store.
        conn: The caller's read transaction.
        now: The time the statuses are judged at.

    Returns:
        Status name -> how many runs are in it (statuses with none left out).
    """
    found = store.runs.count_by_status(conn)
    running = store.runs.running_candidates(conn, now, HOST) if found.get("running") else []
    for r in running:
        try:
            seen = effective_status(_rowcheck.check(r), now)
        except StoreError:
            continue  # a damaged row is counted as stored; the list shows the damage
        if seen is not RunStatus.RUNNING:  # interrupted or stalled
            found["running"] -= 1
            found[seen.value] = found.get(seen.value, 0) + 1
    return {k: v for k, v in found.items() if v}


def _alive(row: Any, now: float) -> bool:
    """`holder_alive`, with a damaged row counted alive (it is listed as damaged, not moved)."""
    try:
        return holder_alive(_rowcheck.check(row), now)
    except (StoreError, TypeError, ValueError):
        return True
