"""The runs screen's page: ONE read of the store a refresh (`Engine.runs_page`:
the page, the counts, the workers alive, the page's claims and proposals, and
the run under the cursor, all in one snapshot), with the console's status
filter applied to what it read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from phasegate import ClaimView, DecisionView, Engine, RunsPage, RunStatus, RunSummary, RunView

from .offered import allowed

STATUS_FILTERS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("all", None),
    # "waiting" for the runs waiting for an answer (a timer's are dropped below).
    ("needs attention", ("blocked", "failed", "running", "waiting")),
    ("blocked", ("blocked",)),
    ("running", ("running",)),
    ("failed", ("failed",)),
    ("completed", ("completed",)),
)
"""The status filter cycle: label -> stored statuses to ask for (None = all)."""

Where = Literal["first", "next", "previous", "reload", "last"]
"""Which page to read: the first; the one after `anchor`; the one before it;
the same page again (from `anchor`, inclusive); the last."""


@dataclass(frozen=True)
class ListedPage:
    """A page of the runs list as the screen shows it: the engine's one read
    (`RunsPage`), its rows through the console's status filter, and the keys
    that fit the run under the cursor, read with it."""

    read: RunsPage
    """What the store held, in one snapshot."""
    rows: tuple[RunSummary, ...]
    """The rows shown: `read.rows` the status filter keeps (a stored "running"
    row whose holder is dead is interrupted, and is dropped from "running")."""
    allowed: list[str] = field(default_factory=list)
    """The actions that fit `selected` (empty when no run was read in full)."""

    @property
    def offset(self) -> int:
        """Where the page starts in the list."""
        return self.read.offset

    @property
    def fetched(self) -> int:
        """Rows the store returned, before the filter dropped any."""
        return len(self.read.rows)

    @property
    def total(self) -> int:
        """How many runs match the stored statuses and the text."""
        return self.read.total

    @property
    def counts(self) -> dict[str, int]:
        """Runs by status, over the whole store."""
        return self.read.counts

    @property
    def workers(self) -> int:
        """Workers alive when the page was read."""
        return self.read.workers

    @property
    def has_previous(self) -> bool:
        """Whether a page comes before this one."""
        return self.read.has_previous

    @property
    def has_next(self) -> bool:
        """Whether a page comes after this one."""
        return self.read.has_next

    @property
    def first_key(self) -> tuple[Any, ...] | None:
        """The sort key of the first row read: a reload starts there."""
        return self.read.first_key

    @property
    def last_key(self) -> tuple[Any, ...] | None:
        """The sort key of the last row read: the next page starts after it."""
        return self.read.last_key

    @property
    def claims(self) -> dict[str, ClaimView]:
        """Who is looking at the page's runs."""
        return self.read.claims

    @property
    def proposals(self) -> dict[str, tuple[DecisionView, ...]]:
        """The page's runs' decisions waiting for a second operator."""
        return self.read.proposals

    @property
    def selected(self) -> RunView | None:
        """The run read in full with the page (the cursor's), or None."""
        return self.read.selected


def read_page(
    engine: Engine,
    *,
    limit: int,
    filter_index: int,
    text: str,
    order: str,
    where: Where = "first",
    anchor: tuple[Any, ...] | None = None,
    offset: int = 0,
    selected: str | None = None,
) -> ListedPage:
    """One page of the runs list, by keyset, in one read of the store.

    Args:
        engine: The engine.
        limit: Rows per page.
        filter_index: The status filter (an index into `STATUS_FILTERS`).
        text: Only runs whose id, workflow or reason contains it ("": all).
        order: The sort order (`Engine.runs`'s).
        where: Which page, from the one shown.
        anchor: The shown page's first or last key (`ListedPage.first_key`, `last_key`).
        offset: Where the shown page starts.
        selected: The run under the cursor, read in full with the page.

    Returns:
        The page, with the keys that fit `selected`.

    Raises:
        PhasegateError: The store cannot be read.
    """
    label, statuses = STATUS_FILTERS[filter_index]
    read = engine.runs_page(
        limit=limit,
        statuses=statuses,
        text=text or None,
        order=order,
        where=where,
        anchor=anchor,
        offset=offset,
        selected=selected,
    )
    rows = read.rows
    # Stored "running" covers both live runs and interrupted ones (a dead
    # holder); the engine tells them apart with the clock, so this filter does.
    if label == "needs attention":
        rows = tuple(r for r in rows if r.needs_attention)
    elif label == "running":
        rows = tuple(r for r in rows if r.status is RunStatus.RUNNING)
    view = read.selected
    return ListedPage(read, rows, allowed(engine, view, read.secondable) if view is not None else [])


def workers_alive(engine: Engine) -> int:
    """How many `phasegate worker` processes are alive (`phasegate workers`).

    Args:
        engine: The engine.

    Returns:
        The count, by the workers' heartbeats.
    """
    return sum(1 for w in engine.workers() if w.alive)


def waiting_words(proposals: Sequence[DecisionView]) -> str:
    """The runs list's words for a run's proposals: "waiting for a second operator: reset by ada".

    Args:
        proposals: The run's open proposals.

    Returns:
        The words, or "" when there are none.
    """
    said = ", ".join(f"{d.action} by {d.operator}" + (" (AI assistant)" if d.assistant else "") for d in proposals)
    return f"waiting for a second operator: {said}" if said else ""
