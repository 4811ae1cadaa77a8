"""A refresh of the runs page is ONE read of the store: the page, the counts,
the workers, the page's claims and proposals, and the run under the cursor,
in one transaction (`Engine.runs_page`), counted by the database layer's own
events on a real store under a real app."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from phasegate import Engine
from phasegate.console.screens.runs import RunsScreen
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio


@dataclass
class Reads:
    """The transactions begun on the store and the statements run, as the
    database layer (SQLAlchemy's connection events) saw them."""

    begun: list[Any] = field(default_factory=list)
    """The connection of each transaction begun."""
    statements: list[tuple[Any, str]] = field(default_factory=list)
    """Each statement sent to the driver, with its connection."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.begun.clear()
            self.statements.clear()


@contextmanager
def counted(engine: Engine) -> Iterator[Reads]:
    reads = Reads()
    sa = engine.store.db.sa

    def on_begin(conn: Any) -> None:
        with reads.lock:
            reads.begun.append(conn)

    def on_statement(conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        with reads.lock:
            reads.statements.append((conn, statement))

    event.listen(sa, "begin", on_begin)
    event.listen(sa, "before_cursor_execute", on_statement)
    try:
        yield reads
    finally:
        event.remove(sa, "begin", on_begin)
        event.remove(sa, "before_cursor_execute", on_statement)


def _claim_and_propose(db: Path) -> None:
    """Something for every part of the page to read: a claim and a proposal
    on the run the cursor will be on."""
    with Engine(db, clock=fx.frozen(), lease_seconds=fx.LEASE, create=False) as eng:
        eng.oversight.set_policy(reason="two people approve", operator="ops-bob", require_second="approve")
        eng.oversight.claim(fx.ENV_MISMATCH, operator="ops-bob")
        eng.decide(fx.ENV_MISMATCH, "approve", reason="looks right", operator="ops-bob", override_claim=True)


async def test_a_refresh_of_the_runs_page_is_one_read(
    store: Path, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _claim_and_propose(store)
    # No timed looks during the count (each is a read of its own, not a refresh).
    monkeypatch.setattr(RunsScreen, "WORKERS_EVERY", 3600.0)
    monkeypatch.setattr(RunsScreen, "LIVENESS_EVERY", 3600.0)
    app = make_app(store)  # poll_interval=0: no change feed either
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one("#runs")
        table.move_cursor(row=table.get_row_index(fx.ENV_MISMATCH))
        await settle(pilot)
        assert runs.run_view is not None and runs.run_view.run_id == fx.ENV_MISMATCH
        with counted(app.engine) as reads:
            runs.refresh_data()
            await settle(pilot)
        page = runs._page
        assert page is not None
        # The refresh read everything the page shows...
        assert page.total == len(page.rows) > 3 and page.counts
        assert fx.ENV_MISMATCH in page.claims and fx.ENV_MISMATCH in page.proposals
        assert page.selected is not None and page.selected.run_id == fx.ENV_MISMATCH
        assert runs.run_view is page.selected  # the keys act on the run as the page read it
        # ...in one transaction, every statement on its connection.
        assert len(reads.begun) == 1, f"{len(reads.begun)} transactions for one refresh"
        (conn,) = reads.begun
        assert len(reads.statements) > 5  # the page, counts, workers, claims, proposals, the run's rows
        assert {id(c) for c, _s in reads.statements} == {id(conn)}


async def test_a_move_of_the_cursor_reads_the_run_alone(
    store: Path, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the keys act on after a move is one read of that run, not a page."""
    monkeypatch.setattr(RunsScreen, "WORKERS_EVERY", 3600.0)
    monkeypatch.setattr(RunsScreen, "LIVENESS_EVERY", 3600.0)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        table = runs.query_one("#runs")
        with counted(app.engine) as reads:
            table.move_cursor(row=table.get_row_index(fx.IN_DOUBT))
            await settle(pilot)
        assert runs.run_view is not None and runs.run_view.run_id == fx.IN_DOUBT
        assert len(reads.begun) == 1
