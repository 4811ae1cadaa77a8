"""A page of the runs list and everything a screen shows with it, read in one
snapshot of the store: the page's rows, how many runs match, the counts by
status, the workers alive, the claims and proposals on the page's runs, and
the run under the cursor in full.

One read, not six: what the page shows is one consistent state (the counts
never include a run the page does not, a claim never names a run the page
lists otherwise), and a busy store costs a screen one transaction a refresh.
`Engine.runs_page` is the front door; the paging by keyset is `Engine.runs`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from ..errors import PhasegateError
from ..store._snapshot import snapshot
from ..store.store import Store
from .build import decision_view
from .listing import counts_on, page_on
from .models import ClaimView, DecisionView, RunSummary, RunView
from .workers import workers_on

Where = Literal["first", "next", "previous", "reload", "last"]
"""Which page to read: the first; the one after `anchor`; the one before it;
the same page again (from `anchor`, inclusive); the last."""


@dataclass(frozen=True)
class RunsPage:
    """One page of the runs list, with what is shown beside it, as one
    snapshot of the store saw it (`Engine.runs_page`)."""

    rows: tuple[RunSummary, ...]
    """The page's lines, in the list's order."""
    offset: int
    """Where the page starts in the list (as the caller counted it: a change
    before it since the caller's last read is not counted)."""
    total: int
    """How many runs match the filters, on every page."""
    counts: dict[str, int]
    """Runs by status as an operator sees it (`Engine.counts`), over the whole store."""
    workers: int
    """Workers alive now, by their heartbeats (`Engine.workers`)."""
    has_previous: bool
    """Whether a page comes before this one."""
    has_next: bool
    """Whether a page comes after this one."""
    claims: dict[str, ClaimView] = field(default_factory=dict)
    """The claims in force on the page's runs, by run id."""
    proposals: dict[str, tuple[DecisionView, ...]] = field(default_factory=dict)
    """The page's runs' decisions waiting for a second operator, by run id."""
    selected: RunView | None = None
    """The run asked for in full (the one under a screen's cursor); None when
    none was asked for or it is gone."""
    secondable: tuple[DecisionView, ...] = ()
    """The selected run's proposals the reading operator may second."""

    @property
    def first_key(self) -> tuple[Any, ...] | None:
        """The sort key of the page's first line: a reload of the page starts there."""
        return self.rows[0].sort_key if self.rows else None

    @property
    def last_key(self) -> tuple[Any, ...] | None:
        """The sort key of its last line: the next page starts after it."""
        return self.rows[-1].sort_key if self.rows else None


class ViewOf(Protocol):
    """The engine's one way to build a run's view from its row (`viewing.Viewer`)."""

    def __call__(self, conn: Any, run: Any, now: float) -> RunView: ...


SecondableOf = Callable[[Any, RunView], Sequence[DecisionView]]
"""The proposals on a run its reader may second, judged on the caller's
transaction (`Oversight.secondable`, whose policy is read on it)."""


def read(
    store: Store,
    now: float,
    *,
    limit: int,
    statuses: Sequence[str] | None,
    text: str | None,
    order: str,
    where: Where,
    anchor: Sequence[Any] | None,
    offset: int,
    selected: str | None,
    view_of: ViewOf,
    secondable_of: SecondableOf,
) -> RunsPage:
    """A `RunsPage`, in one snapshot transaction (`Engine.runs_page`).

    Args:
        store: The store.
        now: The time statuses, claims and proposals are judged at.
        limit: Lines per page (at least 1).
        statuses: Only runs whose stored status is one of these.
        text: Only runs whose id, workflow or reason contains it.
        order: "attention", or a column; a "-" prefix descends.
        where: Which page (`Where`).
        anchor: The sort key the page is read from.
        offset: Where the caller's page starts in the list.
        selected: A run to read in full besides, or None (also None in the
            page when it is gone or cannot be read).
        view_of: Builds a run's view on the snapshot.
        secondable_of: The selected run's proposals its reader may second.

    Returns:
        The page, as one state of the store.

    Raises:
        StoreError: The store cannot be read.
    """
    with snapshot(store.db) as conn:
        page = read_on(
            store,
            conn,
            now,
            limit=limit,
            statuses=statuses,
            text=text,
            order=order,
            where=where,
            anchor=anchor,
            offset=offset,
        )
        if selected is None:
            return page
        run = store.runs.get(conn, selected)
        if run is None:
            return page
        try:
            view = view_of(conn, run, now)
            second = tuple(secondable_of(conn, view))
        except PhasegateError:
            # A selected run that cannot be shown does not cost the page: the
            # screen's own read of that run says what is wrong with it.
            return page
        return replace(page, selected=view, secondable=second)


def read_on(
    store: Store,
    conn: Any,
    now: float,
    *,
    limit: int,
    statuses: Sequence[str] | None,
    text: str | None,
    order: str,
    where: Where,
    anchor: Sequence[Any] | None,
    offset: int,
) -> RunsPage:
    """The runs list's page and what is shown beside it, on the caller's
    snapshot (`store/_snapshot.py`).

    Args:
        store: The store.
        conn: The caller's snapshot transaction.
        now: The time statuses, claims and proposals are judged at.
        limit: Lines per page (at least 1).
        statuses: Only runs whose stored status is one of these.
        text: Only runs whose id, workflow or reason contains it.
        order: "attention", or a column; a "-" prefix descends.
        where: Which page (`Where`); "next", "previous" and "reload" without
            an anchor read the first.
        anchor: The sort key the page is read from (`RunsPage.first_key` or `last_key`).
        offset: Where the caller's page starts in the list.

    Returns:
        The page and the rest (no selected run), read on `conn`.
    """
    limit = max(1, limit)
    total = store.runs.count_matching(conn, statuses=statuses, text=text)
    if anchor is None and where in ("next", "previous", "reload"):
        where = "first"
    page: dict[str, Any] = {"statuses": statuses, "text": text, "order": order, "offset": 0}
    if where == "last":
        # The last page holds what is left after whole pages, as an offset would.
        size = total - (total - 1) // limit * limit if total else limit
        rows = page_on(store, conn, now, limit=size, after=None, inclusive=False, backward=True, **page)
        has_previous, has_next, start = len(rows) < total, False, max(0, total - len(rows))
    elif where == "previous":
        rows = page_on(store, conn, now, limit=limit + 1, after=anchor, inclusive=False, backward=True, **page)
        has_previous = len(rows) > limit
        rows = rows[-limit:] if has_previous else rows
        has_next, start = True, max(0, offset - len(rows)) if has_previous else 0
    else:
        after = anchor if where != "first" else None
        rows = page_on(
            store, conn, now, limit=limit + 1, after=after, inclusive=where == "reload", backward=False, **page
        )
        has_next = len(rows) > limit
        rows = rows[:limit]
        start = 0 if where == "first" else offset
        has_previous = start > 0
    ids = [r.run_id for r in rows]
    held = store.claims.current(conn, ids, now)
    proposals: dict[str, list[DecisionView]] = {}
    for r in store.decisions.open_proposals(conn, ids, now):
        proposals.setdefault(str(r.run_id), []).append(decision_view(r, now))
    return RunsPage(
        tuple(rows),
        start,
        total,
        counts_on(store, conn, now),
        sum(1 for w in workers_on(store, conn, now) if w.alive),
        has_previous,
        has_next,
        {rid: ClaimView.from_row(r) for rid, r in held.items()},
        {rid: tuple(ds) for rid, ds in proposals.items()},
    )
