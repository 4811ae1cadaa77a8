"""Issue #29, finding 6: a stored time no calendar can write (a proposal made
under an older store's `--proposal-seconds 3e11` lapses in the year 11533)
is shown in the console, and hides no run from its list."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from phasegate.console.widgets import RunsTable
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.console.test_console_actions import open_detail
from tests.support import cli
from tests.support.older import policy_as_an_older_store_had

pytestmark = pytest.mark.anyio


def _propose_under_an_old_policy(store: Path) -> None:
    env = cli.child_env({"PHASEGATE_OPERATOR": "ada"})
    p = cli.run(["policy", "--require-second", "approve", "--reason", "four eyes", "--db", str(store)], env=env)
    assert p.returncode == 0, p
    policy_as_an_older_store_had(store, proposal_seconds=3e11)  # what an older store accepted
    p = cli.run(
        ["decide", fx.ENV_MISMATCH, "approve", "--reason", "the new values are right", "--db", str(store)], env=env
    )
    assert p.returncode == 0 and "proposed" in p.stdout, p


async def test_a_proposal_past_year_9999_is_listed_and_shown(store: Path, make_app: Any) -> None:
    with sqlite3.connect(store) as con:
        every = {r[0] for r in con.execute("SELECT run_id FROM phasegate_runs")}
    _propose_under_an_old_policy(store)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        assert {str(r.key.value) for r in table.ordered_rows} == every
        detail = await open_detail(pilot, fx.ENV_MISMATCH)
        await settle(pilot)
        shown = " ".join(str(w.render()) for w in detail.query("Static"))
        assert "out of range (3" in shown, shown
