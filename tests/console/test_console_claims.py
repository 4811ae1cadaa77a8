"""Claims and seconds in the console (#13 parts 3-4), driven with keys
through Pilot on a real store; what landed is read back from the store."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from phasegate import Engine
from phasegate.console import panels
from phasegate.console.screens.action_modal import ActionModal
from phasegate.console.widgets import RunsTable
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.console.test_console_actions import decide, offered, open_detail
from tests.support import cli

pytestmark = pytest.mark.anyio


def claim_as(db: Path, run_id: str, operator: str, *, ago: float = 0.0) -> None:
    """`operator` claims the run `ago` seconds before the console's frozen now."""
    with fx.quiet_engine(), Engine(db, clock=fx.frozen(fx.NOW - ago)) as eng:
        eng.oversight.claim(run_id, operator=operator)


def status(db: Path, run_id: str) -> Any:
    with Engine(db, clock=fx.frozen()) as eng:
        return eng.status(run_id)


async def test_m_claims_and_releases_the_run(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        detail = await open_detail(pilot, fx.ENV_MISMATCH)
        await pilot.press("m")
        await settle(pilot)
        held = status(store, fx.ENV_MISMATCH).claim
        assert held is not None and held.operator == fx.OPERATOR
        await settle(pilot)
        assert "claimed by ops-ana, just now" in str(detail.query_one("#summary").render())
        await pilot.press("m")
        await settle(pilot)
        st = status(store, fx.ENV_MISMATCH)
        assert st.claim is None
        assert [(e.kind, e.operator) for e in st.claims] == [("claim", fx.OPERATOR), ("release", fx.OPERATOR)]
        # The detail's audit (decision log) lists the claim and its release.
        audit, _empty = panels.decisions(st)
        out = Console(width=120, record=True, file=io.StringIO())
        out.print(audit)
        lines = [line for line in out.export_text().splitlines() if fx.OPERATOR in line]
        assert [line.split()[3] for line in lines] == ["claim", "release"], lines


async def test_the_list_says_who_claimed_and_m_does_not_take_it_over(store: Path, make_app: Any) -> None:
    claim_as(store, fx.ENV_MISMATCH, "ada", ago=180)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        reasons = {str(r.key.value): table.get_cell(r.key, "reason").plain for r in table.ordered_rows}
        assert reasons[fx.ENV_MISMATCH].startswith("claimed by ada, 3 min ago; ")
        assert not any("claimed" in text for rid, text in reasons.items() if rid != fx.ENV_MISMATCH)
        await open_detail(pilot, fx.ENV_MISMATCH)
        await pilot.press("m")
        await settle(pilot)
        assert status(store, fx.ENV_MISMATCH).claim.operator == "ada"  # type: ignore[union-attr]


async def test_a_decision_on_someone_elses_claim_asks_for_the_run_id(store: Path, make_app: Any) -> None:
    claim_as(store, fx.ENV_MISMATCH, "ada", ago=180)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot, fx.ENV_MISMATCH)
        await pilot.press("a")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ActionModal) and modal.request.override_claim
        assert "claimed by ada, 3 min ago" in modal.request.typed_why
        await pilot.press("escape")
        await settle(pilot)
        assert status(store, fx.ENV_MISMATCH).pending_decisions == ()
        await decide(pilot, "a", "rate file checked", typed=fx.ENV_MISMATCH)
        decs = status(store, fx.ENV_MISMATCH).pending_decisions
        assert [(d.action, d.operator) for d in decs] == [("approve", fx.OPERATOR)]


@pytest.fixture
def shared_store(store: Path) -> Iterator[Path]:
    """The fixture store in a folder the `nobody` account can write too."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to propose as another account (nobody)")
    folder = Path(tempfile.mkdtemp(prefix="phasegate-console-second-"))
    try:
        os.chmod(folder, 0o777)
        db = folder / "console.db"
        shutil.copy(store, db)
        os.chmod(db, 0o666)
        yield db
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def propose_as_nobody(db: Path, run_id: str, action: str) -> None:
    for f in db.parent.iterdir():
        os.chmod(f, 0o666)
    setpriv = shutil.which("setpriv")
    assert setpriv is not None
    p = cli.run(
        ["decide", run_id, action, "--reason", "the new rate is right", "--db", str(db)],
        env={"PHASEGATE_OPERATOR": "nina"},
        mode="exec",
        wrapper=[setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"],
    )
    if "Permission denied" in p.stderr and "phasegate:" not in p.stderr:
        pytest.skip(f"nobody cannot run this interpreter: {p.stderr.strip()[:200]}")
    assert p.returncode == 0 and "proposed" in p.stdout, p


async def test_a_proposal_waits_and_2_seconds_it(shared_store: Path, make_app: Any) -> None:
    with Engine(shared_store) as eng:
        eng.oversight.set_policy(require_second="approve,reset", reason="four eyes")
    propose_as_nobody(shared_store, fx.ENV_MISMATCH, "approve")
    app = make_app(shared_store)
    async with app.run_test(size=(120, 40)) as pilot:
        detail = await open_detail(pilot, fx.ENV_MISMATCH)
        said = str(detail.query_one("#summary").render())
        assert "waiting for a second operator: approve proposed by nina, decision" in said
        assert "2" in offered(app)
        await decide(pilot, "2", "checked the rate file too")
        decs = status(shared_store, fx.ENV_MISMATCH).decisions
        assert [(d.action, d.operator, d.state) for d in decs] == [
            ("approve", "nina", "pending"),
            ("second", fx.OPERATOR, "applied"),
        ]


async def test_ones_own_proposal_is_not_offered_to_second(store: Path, make_app: Any) -> None:
    with Engine(store, clock=fx.frozen()) as eng:
        eng.oversight.set_policy(require_second="approve", reason="four eyes")
        eng.decide(fx.ENV_MISMATCH, "approve", reason="fine", operator="ada")
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        reason = table.get_cell(fx.ENV_MISMATCH, "reason").plain
        assert reason.startswith("waiting for a second operator: approve by ada; "), reason
        detail = await open_detail(pilot, fx.ENV_MISMATCH)
        assert "waiting for a second operator: approve proposed by ada" in str(detail.query_one("#summary").render())
        assert "2" not in offered(app)
        await pilot.press("2")
        await settle(pilot)
        assert not isinstance(app.screen, ActionModal)
        assert any("your own account" in str(n.message) for n in app._notifications)
        assert [d.state for d in status(store, fx.ENV_MISMATCH).decisions] == ["proposed"]
