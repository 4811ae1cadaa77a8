"""Messages in the console (issue 42): a run parked on `ctx.recv` shows what it
waits for and how to send it, and the messages sent into it (queued first,
then delivered), their stored text escaped, in the run's detail at 80x24. The
store is made by real engine runs and `Engine.send`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from tests.console.pilot_helpers import settle
from tests.workflows import messages as mw

pytestmark = pytest.mark.anyio


def _store(tmp_path: Path) -> Path:
    db = tmp_path / "messages.db"
    with Engine(db) as eng:
        assert eng.run(mw.payment, "m1", {}).status == "waiting"  # on "go"
        eng.send("m1", "paid", {"ref": "A\x1b[31m", "amount": 1}, reason="webhook evt_1", operator="hooks")
        eng.send("m1", "go", True, reason="ops", operator="ada")
        assert eng.run(mw.payment, "m1", {}).status == "waiting"  # took A, waits for a second payment
        eng.send("m1", "other", 7, reason="not asked for yet", operator="hooks")
    return db


def _text(detail: DetailScreen, panel_id: str) -> str:
    panel = detail.query_one(panel_id)
    return "\n".join(s.text for s in panel.render_lines(panel.region.reset_offset))


async def test_the_detail_lists_pending_messages_first_and_says_how_to_send_the_awaited_one(
    tmp_path: Path, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHASEGATE_PARK_SECONDS", "0")
    app = make_app(_store(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        detail = DetailScreen(pilot.app, "m1")
        await pilot.app.push_screen(detail)
        await settle(pilot)
        summary = str(detail.query_one("#summary").render())
        assert "waiting for a message on paid" in summary
        text = _text(detail, "#panel-messages")
        assert "?? waits for a message on paid (pay)" in text
        assert "phasegate send m1 paid --value JSON --reason" in text
        # Queued before delivered; each with a word, not a colour alone.
        assert text.index("> queued #3 other from hooks") < text.index("ok delivered #1 paid from hooks")
        assert "ok delivered #2 go from ada" in text
        assert "\\u001b[31m" in text and "\x1b" not in text
        assert "why: webhook evt_1" in text


async def test_a_run_that_neither_waits_on_a_topic_nor_was_sent_anything_has_no_messages_panel(
    tmp_path: Path, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "plain.db"
    monkeypatch.setenv("PHASEGATE_PARK_SECONDS", "0")
    with Engine(db) as eng:
        assert eng.run(mw.timeout, "t1", {"timeout": 0}).status == "completed"  # NoAnswer at once
    app = make_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        detail = DetailScreen(pilot.app, "t1")
        await pilot.app.push_screen(detail)
        await settle(pilot)
        assert detail.query_one("#panel-messages").has_class("-empty")
