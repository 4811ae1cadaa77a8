"""#17: the console an on-call operator trusts at 3 a.m. Each test is one
finding, driven with keys through Pilot on a real store."""

from __future__ import annotations

import asyncio
import html
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style

from phasegate import Engine
from phasegate.console.app import ConsoleApp
from phasegate.console.screens.action_modal import ActionModal
from phasegate.console.screens.detail import DetailScreen
from phasegate.console.widgets import KeyBar, RunsTable
from phasegate.console.widgets.runs_table import frontier
from tests.console import fixtures as fx
from tests.console import wf as fixture_wf
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio

#: Run ids that differ only at their end, as dated runs do.
LOOKALIKES = ("pipeline-orders-2026-11-27", "pipeline-orders-2026-11-28", "pipeline-orders-2026-11-29")


def add_lookalikes(db: Path) -> None:
    with fx.quiet_engine(), Engine(db, clock=fx.frozen(fx.NOW - 600), lease_seconds=fx.LEASE) as eng:
        for run_id in LOOKALIKES:
            eng.run(fixture_wf.wf, run_id, {"invoices": 1})


def column(table: RunsTable, key: str) -> dict[str, str]:
    """What the table shows in one column, by run id (a cell wider than its
    column would be cut at its end: the test fails on that too)."""
    width = table.columns[key].width  # type: ignore[index]
    cells = {str(row.key.value): table.get_cell(row.key, key).plain for row in table.ordered_rows}
    assert all(len(c) <= width for c in cells.values()), (width, cells)
    return cells


async def test_the_list_shows_the_frontier_the_detail_shows(store: Path, make_app: Any) -> None:
    """Finding 1: the integrity-blocked run's frontier is the trusted one in both views."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        listed = column(table, "frontier")
        for run_id in fx.STOPPED.values():
            detail = DetailScreen(app, run_id)
            await app.push_screen(detail)
            await settle(pilot)
            assert detail.run_view is not None
            fr = detail.run_view.frontier
            expected = f"{fr.index}/{fr.of}"
            assert listed[run_id].startswith(expected), (run_id, listed[run_id], fr)
            if fr.index < fr.of:
                assert str(fr.phase) in listed[run_id], (run_id, listed[run_id], fr)
            await pilot.press("escape")
            await settle(pilot)
        summary = next(r for r in app.engine.runs() if r.run_id == fx.INTEGRITY)
        assert listed[fx.INTEGRITY] == frontier(summary)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_run_ids_can_be_told_apart_at_80_and_100_columns(
    store: Path, make_app: Any, size: tuple[int, int]
) -> None:
    """Finding 2: ids that differ at their end keep their end; none is cut to the same text."""
    add_lookalikes(store)
    app = make_app(store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        ids = column(app.screen.query_one(RunsTable), "run_id")
        assert len(set(ids.values())) == len(ids), ids
        for run_id in LOOKALIKES:
            assert ids[run_id].endswith("2026-11-" + run_id[-2:]), ids[run_id]
            assert ids[run_id].startswith("pipeline"), ids[run_id]


def order(table: RunsTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


async def refresh(pilot: Any) -> None:
    """What the live feed does when another process commits ("decision":
    at once, not folded into the next second's refresh)."""
    pilot.app.post_message(ConsoleApp.DataChanged("decision"))
    await settle(pilot)


async def test_a_live_refresh_never_moves_the_row_under_the_cursor(store: Path, make_app: Any) -> None:
    """Finding 3: decisions made elsewhere reorder the store's sort, not the
    rows in front of the operator; `o` re-sorts, decided runs below those
    still needing a person, marked as decided."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        before = order(table)
        target = before[4]
        await pilot.press("g", *["j"] * 4)
        await settle(pilot)
        assert table.run_id_at(table.cursor_row) == target
        # Another operator answers two runs above the cursor.
        above = [r for r in before[:4] if r in (fx.ENV_MISMATCH, fx.INTEGRITY, fx.BELOW_FLOOR, fx.IN_DOUBT)]
        with Engine(store, clock=fx.frozen()) as eng:
            for run_id in above[:2]:
                action = {fx.ENV_MISMATCH: "approve", fx.IN_DOUBT: "confirm_effect"}.get(run_id, "degrade")
                eng.decide(run_id, action, reason="from the shell", effect=_in_doubt_key(eng, run_id))
        await refresh(pilot)
        assert order(table) == before
        assert table.run_id_at(table.cursor_row) == target
        assert table.cursor_row == 4
        for run_id in above[:2]:
            assert table.get_cell(run_id, "status").plain == "=> decided"
        assert "out of order: o re-sorts" in _header(app)

        await pilot.press("o")
        await settle(pilot)
        now = order(table)
        assert table.run_id_at(table.cursor_row) == target  # the same run, wherever it went
        assert "out of order" not in _header(app)
        needing = [
            r for r in now if table.get_cell(r, "status").plain.split()[-1] in ("blocked", "failed", "interrupted")
        ]
        decided = [r for r in now if table.get_cell(r, "status").plain == "=> decided"]
        assert set(decided) == set(above[:2])
        assert max(now.index(r) for r in needing) < min(now.index(r) for r in decided), now
        assert now.index(fx.RUNNING) > max(now.index(r) for r in decided)
        assert now[-1] == fx.COMPLETED


def _in_doubt_key(eng: Engine, run_id: str) -> str | None:
    keys = [e.key for e in eng.status(run_id).effects if e.state == "in_doubt"]
    return keys[0] if keys else None


def _header(app: Any) -> str:
    return str(app.screen.query_one("#counts").render())


async def test_a_dead_holder_on_this_host_is_interrupted_from_the_first_frame(store: Path, make_app: Any) -> None:
    """Finding 3: a run whose process died on this host is placed with the
    runs that need a person at once, not when its lease lapses."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that was a process of this host and is no more
    con = sqlite3.connect(store)
    with con:
        con.execute("UPDATE phasegate_runs SET lease_pid = ? WHERE run_id = ?", (child.pid, fx.RUNNING))
    con.close()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        rows = order(table)
        assert table.get_cell(fx.RUNNING, "status").plain == "~~ interrupted"
        needing = [r for r in rows if table.get_cell(r, "status").plain.split()[-1] in ("blocked", "failed")]
        # Among them (the newest change first), not after them as a live run would be.
        assert rows.index(fx.RUNNING) < max(rows.index(r) for r in needing), rows


async def test_a_retry_against_a_target_that_does_not_deduplicate_is_typed_out(store: Path, make_app: Any) -> None:
    """Finding 4: the one action that can charge a card twice asks what reset
    asks, and says how to check the outside system first."""
    key = f"{fx.IN_DOUBT}/charge/charge:inv-1"
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.IN_DOUBT))
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ActionModal)
        preview = str(modal.query_one("#preview").render())
        assert f"check first: look key {key} up in the target system" in preview
        assert "does not deduplicate" in preview
        await pilot.press(*"not in the gateway", "enter")
        await settle(pilot)
        assert app.screen is modal  # Enter alone did not confirm
        assert app.focused.id == "typed"
        assert "type the run id exactly" in str(modal.query_one("#problem").render())
        with Engine(store) as eng:
            assert not eng.status(fx.IN_DOUBT).pending_decisions
        await pilot.press(*fx.IN_DOUBT, "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
    with Engine(store) as eng:
        (d,) = eng.status(fx.IN_DOUBT).pending_decisions
    assert (d.action, d.effect, d.reason) == ("retry_effect", key, "not in the gateway")


async def test_a_decision_on_top_of_a_pending_one_names_it_and_is_typed_out(store: Path, make_app: Any) -> None:
    """Finding 4: a rewind offered after a pending confirm_effect names it, and
    does not list the confirmed charge as one that may be called again."""
    key = f"{fx.IN_DOUBT}/charge/charge:inv-1"
    with Engine(store, clock=fx.frozen()) as eng:
        eng.decide(
            fx.IN_DOUBT, "confirm_effect", reason="seen in the gateway", effect=key, result={"charge_id": "ch-1"}
        )
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.IN_DOUBT))
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ActionModal), "rewind is not offered on top of a pending confirmation"
        preview = str(modal.query_one("#preview").render())
        assert "already decided, pending: confirm_effect" in preview and "seen in the gateway" in preview
        assert preview.count(key) == 1, preview  # named as pending, not under "may call again"
        assert modal.request.type_run_id


def notices(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]  # noqa: SLF001 - what the operator saw, by text


@pytest.mark.parametrize(
    ("run_id", "key", "said"),
    [
        (fx.FAILED, "a", "approve resume does not fit: this run is failed"),
        (fx.ENV_MISMATCH, "t", "retry effect does not fit: this run is blocked"),
        (fx.COMPLETED, "e", "resume does not fit: it is completed"),
    ],
)
async def test_a_key_that_does_not_apply_says_why(store: Path, make_app: Any, run_id: str, key: str, said: str) -> None:
    """Finding 5: an unfit key answers in one line, and nothing lands."""
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, run_id))
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)  # no modal opened
        assert any(n.startswith(said) for n in notices(app)), notices(app)
    with Engine(store) as eng:
        assert not eng.status(run_id).pending_decisions


async def test_read_only_says_so_for_an_action_key(store: Path, make_app: Any) -> None:
    app = make_app(store, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.INTERRUPTED))
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert any(n.startswith("reset: read-only") for n in notices(app)), notices(app)


async def test_resume_now_starts_the_run_and_it_completes_in_the_store(store: Path, make_app: Any) -> None:
    """Finding 5: `e` starts `phasegate resume RUN` detached, says where it
    logs, and the run is carried on (checked in the store afterwards)."""
    run_id = "inv-0009-resumable"
    clock = fx.Clock(fx.T0 + 100)
    target = "tests.console.wf:wf"  # as imported here: the same code, so no drift on resume
    fixture_wf.HOOKS.update(interrupt="charge")
    try:
        with fx.quiet_engine(), Engine(store, clock=clock, lease_seconds=fx.LEASE) as eng:
            with pytest.raises(KeyboardInterrupt):
                eng.run(fixture_wf.wf, run_id, {"invoices": 2}, target=target)
    finally:
        fixture_wf.HOOKS.update(interrupt=None)
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, run_id))
        await settle(pilot)
        assert app.screen.run_view.status == "interrupted"
        await pilot.press("e")
        await settle(pilot)
        said = [n for n in notices(app) if n.startswith(f"phasegate resume {run_id} started")]
        assert said, notices(app)
        log = Path(said[0].split("its log: ")[1])
        assert log.parent == store.parent / f"{store.name}.logs"
    for _ in range(600):
        with Engine(store, create=False, readonly=True) as eng:
            status = eng.status(run_id).status
        if status == "completed":
            break
        await asyncio.sleep(0.1)
    assert status == "completed", log.read_text()
    assert f"{run_id}: completed" in log.read_text()


@pytest.mark.parametrize("key", ["ctrl+p", "colon"])
async def test_the_palette_opens_with_ctrl_p_and_lists_the_operations_first(
    store: Path, make_app: Any, key: str
) -> None:
    """Finding 5: ctrl+p opens the palette; its first entries act on the run."""
    from textual.command import CommandList, CommandPalette

    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.ENV_MISMATCH))
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.pause(0.3)
        options = app.screen.query_one(CommandList)
        titles = [str(options.get_option_at_index(i).prompt).split("\n")[0] for i in range(options.option_count)]
        assert titles and titles[0].startswith("run: "), titles
        assert not {"Theme", "Screenshot", "Maximize"} & {t.split()[0] for t in titles}, titles


def burst(app: Any, key: str, n: int) -> None:
    """Keys typed ahead: over SSH they arrive in one read and are queued
    together, with no repaint between them."""
    from textual import events

    for _ in range(n):
        app.post_message(events.Key(key, key))


async def test_a_burst_of_keys_is_all_applied(store: Path, make_app: Any) -> None:
    """Finding 6: five `j` at once scroll the detail five lines; twenty move the list twenty rows."""
    with fx.quiet_engine(), Engine(store, clock=fx.frozen(fx.NOW - 600), lease_seconds=fx.LEASE) as eng:
        for i in range(24):
            eng.run(fixture_wf.wf, f"extra-{i:02d}", {"invoices": 1})
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        burst(app, "j", 20)
        await settle(pilot)
        assert table.cursor_row == 20
        await app.push_screen(DetailScreen(app, fx.IN_DOUBT))
        await settle(pilot)
        box = app.screen.query_one("#detail")
        assert box.max_scroll_y >= 5
        burst(app, "j", 5)
        await settle(pilot)
        assert box.scroll_y == 5
        burst(app, "k", 2)
        await settle(pilot)
        assert box.scroll_y == 3


async def test_a_refresh_repaints_only_what_changed(store: Path, make_app: Any) -> None:
    """Finding 6: a live refresh with nothing new keeps every row as it is
    (no table rebuilt, nothing resent); a change updates that run's cells."""
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RunsTable)
        rows = list(table.ordered_rows)
        await refresh(pilot)
        assert all(a is b for a, b in zip(table.ordered_rows, rows, strict=True))
        with Engine(store, clock=fx.frozen()) as eng:
            eng.decide(fx.ENV_MISMATCH, "approve", reason="from the shell")
        await refresh(pilot)
        assert all(a is b for a, b in zip(table.ordered_rows, rows, strict=True))
        assert table.get_cell(fx.ENV_MISMATCH, "status").plain == "=> decided"


def screen_text(app: Any) -> str:
    """What the terminal shows, as text (from the screenshot Textual exports)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


@pytest.mark.parametrize("kind", sorted(fx.STOPPED))
async def test_at_80_columns_no_hash_wraps_and_help_stays_in_the_footer(store: Path, make_app: Any, kind: str) -> None:
    """Finding 7: hashes are 12 hex characters on screen, effect keys keep
    their end, and `? Help` is in the footer whatever else is offered."""
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.STOPPED[kind]))
        await settle(pilot)
        bar = app.screen.query_one(KeyBar)
        keys = bar.render()
        assert keys.plain.startswith("? Help "), keys.plain
        assert keys.cell_len <= bar.region.width == 80 and bar.region.y == 23
        for _ in range(12):
            text = screen_text(app)
            assert not re.search(r"[0-9a-f]{16}", text), text
            await pilot.press("pagedown")
            await settle(pilot)


async def test_help_scrolls_with_the_list_keys_and_lists_every_screens_keys(store: Path, make_app: Any) -> None:
    """Finding 8: j/G scroll help; no binding-id column; the detail's keys
    and paging are listed even when help is opened from the list."""
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        box = app.screen.query_one("#help")
        text = screen_text(app)
        assert "binding id" not in text and "runs.open" not in text
        await pilot.press("j", "j")
        await settle(pilot)
        assert box.scroll_y == 2
        await pilot.press("G")
        await settle(pilot)
        assert box.scroll_y == box.max_scroll_y > 2
        await pilot.press("g")
        await settle(pilot)
        seen = []
        for _ in range(15):
            seen.append(screen_text(app))
            await pilot.press("pagedown")
            await settle(pilot)
        listed = "\n".join(seen)
        for needed in ("one run's detail", "Back", "pageup/pagedown", "Re-sort", "Resume", "in a confirmation"):
            assert needed in listed, needed


async def test_f_shows_blocked_runs_and_an_empty_filter_says_so(store: Path, make_app: Any) -> None:
    """Finding 8."""
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        runs_screen = app.screen
        table = app.screen.query_one(RunsTable)
        await pilot.press("f", "f")
        await settle(pilot)
        assert "show: blocked" in _header(app)
        assert set(order(table)) == {fx.INTEGRITY, fx.ENV_MISMATCH, fx.BELOW_FLOOR, fx.IN_DOUBT}
        await pilot.press("slash", *"no-such-run")
        await settle(pilot)
        assert table.row_count == 0
        assert "no runs match: f or Esc changes the filter" in _header(app)
        # Said in the table too, under its header: a line of its own, not a
        # row, so the cursor has nothing to open (#17).
        note = app.screen.query_one("#nomatch")
        assert note.display and "no runs match: f or Esc changes the filter" in str(note.render())
        assert table.region.height < note.region.height and note.region.y == table.region.bottom
        await pilot.press("enter", "enter")  # the filter kept, then Enter on the empty table
        await settle(pilot)
        assert app.screen is runs_screen and app.focused is table and table.row_count == 0
        await pilot.press("escape")
        await settle(pilot)
        assert table.row_count > 0 and not note.display


async def test_the_read_only_notice_is_not_dim(store: Path, make_app: Any) -> None:
    """Finding 9: read-only is said in reverse video, never dim."""
    app = make_app(store, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = app.screen.query_one("#counts").render()
        spans = [s for s in shown.spans if "READ-ONLY" in shown.plain[s.start : s.end]]
        styles = [Style.parse(s.style) if isinstance(s.style, str) else s.style for s in spans]
        assert styles and all(st.reverse and not st.dim for st in styles), spans


async def test_the_detail_header_stays_fixed(store: Path, make_app: Any) -> None:
    """Finding 9: deep in a long run, the operator still sees which run it is."""
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.IN_DOUBT))
        await settle(pilot)
        await pilot.press("G")
        await settle(pilot)
        assert app.screen.query_one("#detail").scroll_y > 0
        header = app.screen.query_one("#header")
        assert header.region.y == 0 and fx.IN_DOUBT in str(header.render())
        assert screen_text(app).splitlines()[0].strip().startswith(fx.IN_DOUBT) or fx.IN_DOUBT in screen_text(app)


async def test_a_failed_run_shows_its_last_frames(store: Path, make_app: Any) -> None:
    """Finding 10: the exception and where it was raised, escaped."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.FAILED))
        await settle(pilot)
        from rich.console import Group

        content = app.screen.query_one("#panel-error").content
        assert isinstance(content, Group)
        lines = [str(part) for part in content.renderables]
        assert "last frames:" in lines
        assert any("wf.py" in line for line in lines), lines  # the frame in the workflow that raised
        assert any("payment required" in line for line in lines)
