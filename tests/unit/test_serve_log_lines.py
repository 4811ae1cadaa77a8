"""`phasegate serve`'s own log keeps one event to one line, as the engine's does (#29 finding 10)."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from phasegate.console.web import command


def test_a_forged_line_in_a_serve_log_message_stays_on_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    log = logging.getLogger("phasegate.serve")
    before = list(log.handlers)
    try:
        command._log_to_stderr()
        log.info("session refused for %s", "mallory\n2026-12-02 06:00:00,000 serve session opened for alice\x1b[2J")
    finally:
        for h in log.handlers[len(before) :]:
            log.removeHandler(h)
    text = out.getvalue()
    assert text.count("\n") == 1, text
    assert "\x1b" not in text and "session opened for alice" in text
