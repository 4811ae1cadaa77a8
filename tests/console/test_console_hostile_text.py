"""Stored text never reaches the terminal raw from the console: a phase
error, probe values, decision reasons and an operator's name holding every
control character, escape sequence and bidi control are rendered as visible
escapes on every screen, in both modes (also `--read-only`)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest

from phasegate import Engine
from phasegate.console.screens.detail import DetailScreen
from tests.console import fixtures as fx
from tests.console import wf as fixture_wf
from tests.console.pilot_helpers import settle

pytestmark = pytest.mark.anyio

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
EVERY = (
    "".join(chr(c) for c in range(1, 32))
    + "\x7f"
    + "".join(chr(c) for c in range(0x80, 0xA0))
    + BIDI
    + "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2J\x1b[31m\x9b31m"
)
ENV, FAILED = "hostile-env", "hostile-failed"


@pytest.fixture
def hostile_store(tmp_path: Path) -> Path:
    db = tmp_path / "hostile.db"
    clock = fx.Clock(fx.T0)
    with fx.quiet_engine(), Engine(db, clock=clock, lease_seconds=fx.LEASE) as eng:
        try:
            # The probe's saved and current values are hostile: a blocked env_mismatch.
            fixture_wf.HOOKS.update(interrupt="charge", tax="old" + EVERY)
            try:
                eng.run(fixture_wf.wf, ENV, {"invoices": 1})
            except KeyboardInterrupt:
                pass
            clock.advance(60)
            fixture_wf.HOOKS.update(interrupt=None, tax="new" + EVERY)
            eng.run(fixture_wf.wf, ENV)
            # A failed run whose error is hostile, with a decision whose reason
            # and operator are too (waiting for its next start).
            fixture_wf.HOOKS.update(fail="boom" + EVERY)
            eng.run(fixture_wf.wf, FAILED, {"invoices": 1})
            eng.decide(FAILED, "rewind", phase="fetch", reason="why" + EVERY, operator="op" + BIDI)
        finally:
            fixture_wf.HOOKS.update(interrupt=None, fail=None, tax="tax-2026-01")
    return db


def raw_controls(text: str) -> list[str]:
    """Characters that would act on a terminal (controls and format characters
    but the SVG's own line breaks), checked on their own terms."""
    return sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\r\t" and unicodedata.category(c) in ("Cc", "Cf")})


def assert_inert(app: Any, where: str) -> str:
    rendered = app.export_screenshot()
    assert raw_controls(rendered) == [], (where, raw_controls(rendered))
    return rendered


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
async def test_no_screen_shows_stored_escapes_raw(hostile_store: Path, make_app: Any, read_only: bool) -> None:
    app = make_app(hostile_store, read_only=read_only)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#runs")
        seen = ""
        for row in range(table.row_count):
            table.move_cursor(row=row)
            await settle(pilot)
            seen += assert_inert(app, f"runs screen, row {row}")
        assert "\\x1b" in seen and "U+202E" in seen  # shown, as visible escapes
        for run_id in (ENV, FAILED):
            app.push_screen(DetailScreen(app, run_id))
            await settle(pilot)
            assert_inert(app, f"detail of {run_id}")
            if not read_only:
                for key in ("a", "w", "r"):
                    await pilot.press(key)
                    await settle(pilot)
                    assert_inert(app, f"modal {key} on {run_id}")
                    await pilot.press("escape")
                    await settle(pilot)
            app.pop_screen()
            await settle(pilot)
        if not read_only:
            # A refusal quoting stored text (another operator's name) is a notification: escaped too.
            app.push_screen(DetailScreen(app, ENV))
            await settle(pilot)
            # The keys pressed above on runs where they do not fit left their
            # own notices (4 s each): only the refusal below is looked at.
            app.clear_notifications()
            await pilot.press("a")
            await settle(pilot)
            with Engine(hostile_store, clock=fx.frozen()) as other:
                other.decide(ENV, "approve", reason="first" + EVERY, operator="bob" + BIDI)
            await pilot.press(*"second", "enter")
            await settle(pilot)
            notes = list(app._notifications)
            assert all(raw_controls(n.message) == [] for n in notes), [n.message for n in notes]
            (note,) = [n for n in notes if n.title == "already decided"]
            assert "bob<U+061C>" in note.message
            assert_inert(app, "refusal notification")
