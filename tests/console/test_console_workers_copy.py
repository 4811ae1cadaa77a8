"""#17: the console sees the workers (a real `phasegate worker` counted in
the header, and a decision's notice says when none is alive), and `y`
copies a run id or a whole hash (OSC 52, with the value shown)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.copy_modal import CopyModal
from phasegate.console.screens.detail import DetailScreen
from tests.console import fixtures as fx
from tests.console.pilot_helpers import settle
from tests.support import cli
from tests.support.waiting import until_async

pytestmark = pytest.mark.anyio


def header(app: Any) -> str:
    return str(app.screen.query_one("#counts").render())


def notices(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]  # noqa: SLF001 - what the operator saw, by text


async def _until_header(app: Any, pilot: Any, text: str) -> None:
    """Re-read with `o` (the header is also re-read on a timer) until it says `text`."""

    async def says() -> bool:
        await pilot.press("o")
        await settle(pilot)
        return text in header(app)

    await until_async(says, f"the header to say {text!r}", timeout=60, every=0.1)


async def test_the_header_counts_a_real_worker_alive_and_not_once_killed(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "no worker alive" in header(app)
        worker = cli.start(["worker", "--db", str(store), "--heartbeat", "0.2", "--poll", "0.5"])
        try:
            await _until_header(app, pilot, "1 worker alive")
        finally:
            worker.kill()  # SIGKILL: no clean exit
        await _until_header(app, pilot, "no worker alive")


async def test_with_no_worker_alive_a_decision_says_it_waits_and_names_the_resume_key(
    store: Path, make_app: Any
) -> None:
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.ENV_MISMATCH))
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press(*"new rates are right", "enter")
        await settle(pilot)
        said = await until_async(
            lambda: [n for n in notices(app) if n.startswith("approve on ")], "the approval's notification"
        )
        assert said and "NO WORKER IS ALIVE, so it waits: press e to resume the run now" in said[0], notices(app)
    with Engine(store) as eng:
        assert [d.action for d in eng.status(fx.ENV_MISMATCH).pending_decisions] == ["approve"]


async def test_y_copies_the_run_id_by_osc_52_and_says_what(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        run_id = app.screen.run_view.run_id
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, CopyModal)
        assert app.screen.choices[0] == ("run id", run_id)
        await pilot.press("enter")
        await settle(pilot)
        assert app.clipboard == run_id
        # Said as sent (nobody knows whether the terminal kept it), with the value (#28).
        assert f"run id sent to the terminal's clipboard (OSC 52); if it did not arrive, it is: {run_id}" in notices(
            app
        ), notices(app)


async def test_y_copies_a_whole_hash_that_the_screen_shows_cut_to_12(store: Path, make_app: Any) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.push_screen(DetailScreen(app, fx.INTEGRITY))
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, CopyModal)
        hashes = [(what, v) for what, v in modal.choices if what != "run id" and not what.startswith("effect key")]
        assert hashes and all(re.fullmatch(r"(sha256:)?[0-9a-f]{64}", v) for _w, v in hashes), hashes
        index = next(i for i, (what, _v) in enumerate(modal.choices) if what.endswith("expected"))
        for _ in range(index):
            await pilot.press("j")
        await pilot.press("enter")
        await settle(pilot)
        value = modal.choices[index][1]
        assert app.clipboard == value
        # said whole: the notice is where it can be selected by hand when OSC 52 did not arrive
        assert any(n.endswith(f"it is: {value}") for n in notices(app)), notices(app)


async def test_with_osc_52_off_y_shows_the_value_instead(
    store: Path, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHASEGATE_CONSOLE_OSC52", "off")
    app = make_app(store, read_only=True)  # copying writes nothing: read-only allows it
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        run_id = app.screen.run_view.run_id
        await pilot.press("y", "enter")
        await settle(pilot)
        assert app.clipboard == ""
        assert f"run id: {run_id}" in notices(app), notices(app)
        assert isinstance(app.screen, CopyModal)  # still open: the value is shown whole, to select by hand
        assert str(app.screen.query_one("#copy-note").render()).endswith(f"\n{run_id}")
