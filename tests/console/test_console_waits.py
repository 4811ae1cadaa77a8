"""Runs that wait, in the console (issue 27): their marks and words in the
list and the detail, the answer form built from a question's JSON Schema
(a wrong value refused with nothing recorded, a right one recorded), a
question cause answered for all its runs, pause and unpause with `p`, and
cancel with `x` and the run id typed out. The store is made by real engine
runs (tests/console/waits_store.py); what landed is read back through
`phasegate status --json`, another process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Checkbox, Select

from phasegate import Engine, RunStatus
from phasegate.console.screens.action_modal import ActionModal
from phasegate.console.screens.answer_modal import AnswerModal
from phasegate.console.screens.causes import CausesScreen
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.screens.runs import RunsScreen
from tests.conftest import status_json
from tests.console import asking
from tests.console import fixtures as fx
from tests.console import waits_store as ws
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC here, so "waiting until 21:46" is the same on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def wstore(tmp_path: Path, _fixture_cache: Path) -> Path:
    return ws.waits_db(tmp_path, _fixture_cache)


async def open_detail(pilot: Any, run_id: str) -> DetailScreen:
    await settle(pilot)
    screen = DetailScreen(pilot.app, run_id)
    await pilot.app.push_screen(screen)
    await settle(pilot)
    return screen


async def open_form(pilot: Any, run_id: str) -> AnswerModal:
    await open_detail(pilot, run_id)
    await pilot.press("i")
    await settle(pilot)
    modal = pilot.app.screen
    assert isinstance(modal, AnswerModal)
    return modal


async def submit(pilot: Any, reason: str) -> None:
    """Type the reason into its field (focused by clicking nothing: tab to it) and press Enter."""
    modal = pilot.app.screen
    modal.query_one("#reason").focus()
    await pilot.press(*reason, "enter")
    await settle(pilot)


def answers(db: Path, run_id: str) -> list[dict[str, Any]]:
    return [d for d in status_json(db, run_id)["decisions"] if d["action"] == "answer"]


def problem(modal: AnswerModal) -> str:
    return str(modal.query_one("#problem").render())


def cell(screen: RunsScreen, run_id: str, column: str) -> str:
    table = screen.query_one("#runs")
    return table.get_cell(run_id, column).plain


async def test_waiting_paused_and_cancelled_runs_in_the_list(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        assert cell(screen, ws.ASKS["bool"], "status") == "?? waiting"
        assert cell(screen, ws.ASKS["bool"], "reason") == "answer needed: Which bool for print job J-bool?"
        assert cell(screen, ws.TIMER, "status") == ".. waiting"
        # The wake time in local time (UTC here), the stored reason beside it.
        assert cell(screen, ws.LIMITED, "reason") == "waiting until 21:46 (rate limited: 429 from the model API)"
        assert cell(screen, ws.PAUSED, "status") == "== paused"
        assert cell(screen, ws.CANCELLED, "status") == "-- cancelled"
        counts = str(screen.query_one("#counts").render())
        assert ".. 8 waiting" in counts and "== 1 paused" in counts and "-- 1 cancelled" in counts
        # Needs attention: the runs asking a person, not those on a timer or held.
        await pilot.press("f")
        await settle(pilot)
        table = screen.query_one("#runs")
        shown = {table.run_id_at(i) for i in range(table.row_count)}
        assert shown == {*ws.ASKS.values(), *ws.REFUNDS}


async def test_a_waiting_runs_detail_shows_its_question_with_the_payload_escaped(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(100, 40)) as pilot:
        detail = await open_detail(pilot, ws.ASKS["object"])
        summary = str(detail.query_one("#summary").render())
        assert "waiting for an answer to pick_object: Which object for print job J-object?" in summary
        panel = detail.query_one("#panel-question")
        text = "".join(s.text for s in panel.render_lines(panel.region.reset_offset))
        assert "i answers it" in text and '"printer": "lp-2\\u001b[31m"' in text
        assert "\x1b" not in text
        assert "i" in {ab.binding.key for ab in app.screen.active_bindings.values() if ab.binding.show}


async def test_a_boolean_answer(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_form(pilot, ws.ASKS["bool"])
        box = modal.query_one("#field-0", Checkbox)
        assert app.focused is box  # focus starts in the first field
        await pilot.press("space")
        assert box.value is True and "true" in str(box.label)
        await submit(pilot, "yes it is")
        assert isinstance(app.screen, DetailScreen)
    (d,) = answers(wstore, ws.ASKS["bool"])
    assert (d["reason"], d["operator"]) == ("yes it is", "ops-ana")
    q = status_json(wstore, ws.ASKS["bool"])["questions"][0]
    assert (q["state"], q["answer"]) == ("answered", True)


async def test_an_enum_answer_is_chosen_from_its_values(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_form(pilot, ws.ASKS["enum"])
        select = modal.query_one("#field-0", Select)
        assert app.focused is select
        await submit(pilot, "nothing chosen")
        assert isinstance(app.screen, AnswerModal) and "required" in problem(modal)
        select.focus()
        await pilot.press("enter")  # opens the list
        await settle(pilot)
        await pilot.press("down", "down", "enter")  # low, normal
        await settle(pilot)
        assert str(select.value) == "1"
        await submit(pilot, "normal will do")
        assert isinstance(app.screen, DetailScreen)
    q = status_json(wstore, ws.ASKS["enum"])["questions"][0]
    assert q["answer"] == "normal"


async def test_a_number_out_of_range_is_refused_and_nothing_is_recorded(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_form(pilot, ws.ASKS["number"])
        await pilot.press("-", "1")
        await submit(pilot, "minus one")
        assert isinstance(app.screen, AnswerModal)
        said = problem(modal)
        assert "refused, nothing recorded" in said and "-1 is less than the minimum of 0" in said, said
        assert answers(wstore, ws.ASKS["number"]) == []
        field = modal.query_one("#field-0")
        assert app.focused is field
        field.value = ""
        await pilot.press(*"2.5")
        await submit(pilot, "two and a half")
        assert isinstance(app.screen, DetailScreen)
    assert status_json(wstore, ws.ASKS["number"])["questions"][0]["answer"] == 2.5


async def test_an_object_with_a_nested_field_in_json(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_form(pilot, ws.ASKS["object"])
        labels = [str(w.render()) for w in modal.query(".answer-label")]
        assert labels == ["approved:", "copies:", "note (optional):", "priority:", "size:", "reason:"]
        await pilot.press("space", "tab", "3", "tab", "tab")  # approved, copies 3, no note
        assert isinstance(app.focused, Select)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("down", "down", "down", "enter")  # high
        await settle(pilot)
        await pilot.press("tab", *'{"width": "wide", "height": 2}')
        await submit(pilot, "print it")
        assert isinstance(app.screen, AnswerModal)
        said = problem(modal)
        assert "at size.width" in said and "'wide' is not of type 'integer'" in said, said
        assert app.focused is modal.query_one("#field-4")  # the field the refusal names
        assert answers(wstore, ws.ASKS["object"]) == []
        modal.query_one("#field-4").value = ""
        await pilot.press(*'{"width": 210, "height": 297}')
        await submit(pilot, "print it")
        assert isinstance(app.screen, DetailScreen)
    answer = status_json(wstore, ws.ASKS["object"])["questions"][0]["answer"]
    assert answer == {"approved": True, "copies": 3, "priority": "high", "size": {"width": 210, "height": 297}}


async def test_a_question_cause_is_answered_for_all_its_runs(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(CausesScreen(app))
        await settle(pilot)
        table = app.screen.query_one("#causes")
        row = next(i for i in range(table.row_count) if "2" in table.get_row_at(i)[0].plain)
        table.move_cursor(row=row)
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, AnswerModal) and modal.request.cause is not None
        payloads = str(modal.query_one("#payload").render())
        # Each run with its own payload.
        assert 'refund-a17: {"args": {"amount": 200, "order": "A17"}' in payloads
        assert 'refund-b22: {"args": {"amount": 200, "order": "B22"}' in payloads
        await pilot.press(*"150", "tab", "space")  # amount, approved (the stored schema's order)
        await submit(pilot, "both checked")
        assert isinstance(app.screen, CausesScreen)
    for run_id in ws.REFUNDS:
        (d,) = answers(wstore, run_id)
        assert d["batch_id"] and d["reason"] == "both checked"
        assert status_json(wstore, run_id)["questions"][0]["answer"] == {"approved": True, "amount": 150}


async def test_pause_and_unpause_with_p(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    run_id = ws.REFUNDS[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_detail(pilot, run_id)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal) and app.screen.request.spec.name == "pause"
        await pilot.press(*"look first", "enter")
        await settle(pilot)
        assert status_json(wstore, run_id)["status"] == RunStatus.PAUSED
        assert "== paused" in str(app.screen.query_one("#header").render())
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal) and app.screen.request.spec.name == "unpause"
        await pilot.press(*"looked; fine", "enter")
        await settle(pilot)
    doc = status_json(wstore, run_id)
    assert doc["status"] == "waiting" and doc["waiting"]["kind"] == "answer"
    assert [(d["action"], d["reason"]) for d in doc["decisions"]] == [
        ("pause", "look first"),
        ("unpause", "looked; fine"),
    ]


async def test_cancel_with_x_needs_the_run_id_typed(wstore: Path, make_app: Any) -> None:
    app = make_app(wstore)
    run_id = ws.TIMER
    async with app.run_test(size=(80, 24)) as pilot:
        await open_detail(pilot, run_id)
        await pilot.press("x")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ActionModal) and modal.request.type_run_id
        await pilot.press(*"not needed any more", "enter")
        await settle(pilot)
        assert app.focused is modal.query_one("#typed")
        await pilot.press(*"timer-cool", "enter")  # not the whole id: refused
        await settle(pilot)
        assert isinstance(app.screen, ActionModal)
        assert status_json(wstore, run_id)["status"] == "waiting"
        await pilot.press(*"-down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        # Final: nothing is offered on it any more (p and x say why instead).
        keys = {ab.binding.key for ab in app.screen.active_bindings.values() if ab.binding.show}
        assert not {"p", "x", "i"} & keys
    doc = status_json(wstore, run_id)
    assert doc["status"] == "cancelled"
    assert [(d["action"], d["reason"]) for d in doc["decisions"]] == [("cancel", "not needed any more")]


async def test_a_questions_stored_text_is_shown_never_obeyed(wstore: Path, make_app: Any) -> None:
    """Markup in a property's name and in a choice, an escape sequence in the
    prompt, a bidi override: shown as text, escaped, never parsed or sent."""
    with fx.quiet_engine(), Engine(wstore, clock=fx.frozen(ws.PARKED), lease_seconds=fx.LEASE) as eng:
        eng.run(asking.asks, "ask-hostile", {"kind": "hostile", "job": "[bold]J[/bold]\x1b[2J"})
    app = make_app(wstore)
    async with app.run_test(size=(100, 30)) as pilot:
        modal = await open_form(pilot, "ask-hostile")
        prompt = modal.query_one("#prompt").render()
        assert prompt.plain == "Which hostile for print job [bold]J[/bold]\\x1b[2J?"
        labels = [w.render().plain for w in modal.query(".answer-label")]
        assert labels[0] == "[red]pick[/red]:"
        select = modal.query_one("#field-0", Select)
        shown = [str(prompt) for prompt, _value in select._options]
        assert "[bold]loud[/bold]" in shown and "<U+202E>evil" in shown, shown
        select.focus()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("down", "enter")  # the first choice
        await settle(pilot)
        await submit(pilot, "the loud one")
        assert isinstance(app.screen, DetailScreen)
    assert status_json(wstore, "ask-hostile")["questions"][0]["answer"] == {"[red]pick[/red]": "[bold]loud[/bold]"}


async def test_under_a_policy_listing_answer_the_form_says_it_is_a_proposal(wstore: Path, make_app: Any) -> None:
    with fx.quiet_engine(), Engine(wstore) as eng:
        eng.oversight.set_policy(require_second="answer", reason="four eyes on refunds")
    app = make_app(wstore)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_form(pilot, ws.ASKS["bool"])
        assert "recorded as a proposal" in modal.query_one("#policy").render().plain
        await pilot.press("space")
        await submit(pilot, "yes")
        assert isinstance(app.screen, DetailScreen)
    # Read at the console's clock (the store's times are frozen ones; the CLI's clock would expire it).
    with Engine(wstore, clock=fx.frozen(), create=False) as eng:
        view = eng.status(ws.ASKS["bool"])
    assert [(d.action, d.state) for d in view.decisions] == [("answer", "proposed")]
    assert view.questions[0].state == "open"


async def test_p_on_a_running_run_asks_its_process_to_stop(store: Path, make_app: Any) -> None:
    """A live run (its holder alive) is paused at its next step: the hold is asked of it."""
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_detail(pilot, fx.RUNNING)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, ActionModal) and app.screen.request.spec.name == "pause"
        await pilot.press(*"look at its tool calls", "enter")
        await settle(pilot)
    with Engine(store, clock=fx.frozen(), create=False) as eng:
        view = eng.status(fx.RUNNING)  # at the console's clock: its holder's lease is alive
    assert view.status is RunStatus.RUNNING
    assert [(d.action, d.reason) for d in view.decisions] == [("pause", "look at its tool calls")]
    assert view.held is not None and (view.held["action"], view.held["state"]) == ("pause", "asked")
