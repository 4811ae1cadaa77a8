"""Issue #29, finding 13 (the engine's part): what the command line promises
a script. `-v` and `--debug` go anywhere on the line, `--debug` on a line
argparse refuses is still one line, and `watch --once` says with its exit
code that it could not read the store."""

from __future__ import annotations

import sqlite3

import pytest
from engine_harness import Harness, one_line_error


def _blocked(h: Harness) -> None:
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3


def test_v_and_debug_go_anywhere(h):
    _blocked(h)
    for args in (
        ("status", "-v"),
        ("status", "r1", "--debug"),
        ("status", "--debug"),
        ("status", "--json", "--verbose"),
        ("worker", "--once", "-v"),
        ("verify", "--debug", "-v"),
    ):
        p = h.cli(*args)
        assert p.returncode in (0, 3) and not p.traceback, (args, p)
    # -v after the command is -v: the engine's lines are logged.
    assert h.run("r2", kill="start:charge").killed
    p = h.cli("resume", "r2", "-v", real=True)
    assert p.returncode == 0 and "phasegate.run INFO run r2: phase charge starts" in p.stderr, p


def test_debug_on_a_refused_line_is_one_line_not_a_traceback(h):
    _blocked(h)
    for args in (("status", "--nope", "--debug"), ("--debug", "decide"), ("--debug", "worker", "--poll", "nan")):
        one_line_error(h.cli(*args))


@pytest.mark.sqlite_only
def test_watch_once_exits_2_when_it_cannot_read_the_store(h):
    _blocked(h)
    # Another process holds the write lock for longer than a writer waits
    # (a third of the lease): the watch cannot claim the stop it must announce.
    con = sqlite3.connect(h.db, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    try:
        p = h.cli("watch", "--once", "--exec", "true", env={"PHASEGATE_LEASE_SECONDS": "0.3"}, real=True)
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert "cannot read the store now" in p.stderr, p
    assert p.returncode == 2 and not p.traceback, p
    # Readable again: the stop is announced and the watch exits 0.
    p = h.cli("watch", "--once", "--exec", "true", real=True)
    assert p.returncode == 0 and "announced r1" in p.stderr, p
