"""Bad input gets one clear line on stderr and exit 2: no traceback, and the
store (if there is one) is left exactly as it was."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest
from engine_harness import BILLING_FILE, one_line_error

TARGET = f"{BILLING_FILE}:wf"


@pytest.mark.sqlite_only
def test_status_of_a_missing_database_does_not_create_it(h):
    p = h.cli("status")
    assert "no phasegate database" in one_line_error(p)
    assert not h.db.exists()
    p = h.cli("status", "--db", str(h.tmp / "no" / "such" / "folder.db"), db=False)
    one_line_error(p)
    p = h.cli("resume", "r1")
    one_line_error(p)
    assert not h.db.exists()


def test_a_folder_is_not_a_database(h):
    p = h.cli("status", "--db", str(h.tmp), db=False)
    assert "is a folder" in one_line_error(p)


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    "content",
    [b"hello, this is a text file\n" * 10, b"SQLite format 3\x00" + b"\xff" * 4000],
    ids=["text-file", "damaged-sqlite"],
)
def test_not_a_database(h, content):
    h.db.write_bytes(content)
    for args in (
        ["status"],
        ["status", "r1", "--json"],
        ["verify"],
        ["prune", "--apply"],
        ["run", TARGET, "--run-id", "r1", "--input", h.inputs()],
        ["decide", "r1", "reset", "--reason", "x"],
    ):
        p = h.cli(*args)
        one_line_error(p)
        assert h.db.read_bytes() == content


@pytest.mark.sqlite_only
def test_an_unrelated_sqlite_database_is_left_alone(h):
    con = sqlite3.connect(h.db)
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO customers (name) VALUES ('ana')")
    con.commit()
    con.close()
    before = h.dump()
    for args in (["status"], ["run", TARGET, "--run-id", "r1", "--input", h.inputs()], ["verify"]):
        p = h.cli(*args)
        assert "not a phasegate store" in one_line_error(p)
    assert h.dump() == before


def _existing_store(h):
    assert h.run("r1").returncode == 0
    return h.dump()


@pytest.mark.parametrize(
    "args,words",
    [
        (["run", TARGET, "--run-id", "r2", "--input", "{not json"], "inputs are not JSON"),
        (["run", TARGET, "--run-id", "r2", "--input-file", "/nonexistent/inputs.json"], "cannot read"),
        (["run", TARGET, "--run-id", "r2", "--input", "{}", "--input-file", "x"], "not both"),
        (["run", "/nonexistent/flow.py:wf", "--run-id", "r2"], "does not exist"),
        (["run", f"{BILLING_FILE}:nope", "--run-id", "r2"], "has no 'nope'"),
        (["run", f"{BILLING_FILE}:json", "--run-id", "r2"], "not a phasegate Workflow"),
        (["run", "no_colon_here", "--run-id", "r2"], "must look like"),
        (["run", "no_such_module_xyz:wf", "--run-id", "r2"], "cannot import module"),
        (["run", TARGET, "--run-id", ""], "run id"),
        (["run", TARGET, "--run-id", "r1", "--input", '{"ledger": "elsewhere"}'], "other inputs"),
        (["run", TARGET], "--run-id"),
        (["resume", "nope"], "no run 'nope'"),
        (["status", "nope"], "no run 'nope'"),
        (["frobnicate"], "invalid choice"),
    ],
    ids=[
        "bad-json",
        "missing-input-file",
        "both-inputs",
        "missing-file",
        "missing-name",
        "not-a-workflow",
        "no-colon",
        "no-module",
        "empty-run-id",
        "other-inputs",
        "no-run-id",
        "resume-unknown",
        "status-unknown",
        "unknown-command",
    ],
)
def test_bad_usage_is_one_line_and_changes_nothing(h, args, words):
    before = _existing_store(h)
    p = h.cli(*args)
    assert words in one_line_error(p)
    assert h.dump() == before


def test_no_command_is_one_line(h):
    assert "required" in one_line_error(h.cli(db=False))


def test_a_target_that_fails_to_import_is_one_line(h, tmp_path):
    before = _existing_store(h)
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('boom at import')\n")
    p = h.cli("run", f"{bad}:wf", "--run-id", "r2")
    assert "RuntimeError: boom at import" in one_line_error(p)
    assert h.dump() == before


def test_bad_inputs_do_not_create_a_database(h):
    p = h.cli("run", TARGET, "--run-id", "r1", "--input", "[1,")
    one_line_error(p)
    assert not h.db.exists()


@pytest.mark.sqlite_only
def test_the_real_entry_point_keeps_the_same_contract(h):
    h.db.write_text("not a database")
    p = h.cli("status", real=True)
    assert "not an SQLite database" in one_line_error(p)
    p = h.cli("run", TARGET, "--run-id", "r1", "--input", "{oops", real=True)
    assert "inputs are not JSON" in one_line_error(p)
    assert h.db.read_text() == "not a database"


def test_db_defaults_to_the_environment(h):
    p = h.cli("run", TARGET, "--run-id", "r1", "--input", h.inputs(), db=False, env={"PHASEGATE_DB": str(h.db)})
    assert p.returncode == 0, p
    p = h.cli("status", "--json", db=False, env={"PHASEGATE_DB": str(h.db)})
    assert [r["run_id"] for r in json.loads(p.stdout)] == ["r1"]


def test_status_json_has_the_documented_fields(h):
    assert h.run("r1", kill="after:charge:inv-0", idempotent=True).killed
    st = h.status("r1")
    for key in (
        "run_id",
        "workflow",
        "status",
        "frontier",
        "phases",
        "blocked",
        "env",
        "effects",
        "decisions",
        "prune_candidates",
    ):
        assert key in st, key
    assert {"phase", "index", "steps_done"} <= set(st["frontier"])
    assert all({"name", "state"} <= set(p) for p in st["phases"])
    assert all({"name", "key", "state"} <= set(e) for e in st["effects"])
    assert h.resume("r1").returncode == 0
    h.tax.write_text("moved")
    assert h.decide("r1", "rewind", "--phase", "charge", reason="again").returncode == 0
    st = h.status("r1")
    assert all({"action", "operator", "reason", "at"} <= set(d) for d in st["decisions"])
    assert all({"probe", "saved", "current", "changed"} <= set(e) for e in st["env"])
    assert all({"what", "bytes", "why_safe"} <= set(c) for c in st["prune_candidates"])
    assert st["prune_candidates"] and st["env"]


# -- issue #16, finding 10: input that gave a traceback or a hang ----------------

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "args,words",
    [
        (["run", TARGET, "--run-id", "r2", "--input-file", "{deep}"], "nested too deeply"),
        (["decide", "r1", "confirm_effect", "--reason", "x", "--result", DEEP[:20_000] + DEEP[-20_000:]], "deeply"),
        (["run", TARGET, "--run-id", "r2", "--input", '{"a": "\\ud800"}'], "lone surrogate"),
        (["run", TARGET, "--run-id", "r2", "--input", '{"a": "\udc80"}'], "not valid UTF-8"),
        (["run", TARGET, "--run-id", "r\udcff2", "--input", "{}"], "not valid UTF-8"),
        (["decide", "r1", "reset", "--reason", "why \udcff"], "--reason is not valid UTF-8"),
        (["run", TARGET, "--run-id", "r2", "--input-file", "{latin1}"], "is not UTF-8 text"),
        (["worker", "--poll", "inf"], "must be a number of seconds from"),
        (["worker", "--poll", "-1"], "must be a number of seconds from"),
        (["worker", "--poll", "nan"], "must be a number of seconds from"),
        (["worker", "--jobs", "0"], "whole number from 1"),
        (["watch", "--exec", "true", "--backoff", "nan"], "must be a number of seconds from"),
        (["run", TARGET, "--run-id", "r2\u202e", "--input", "{}"], "run id"),
    ],
    ids=[
        "deep-input-file",
        "deep-result",
        "json-surrogate",
        "argv-surrogate-input",
        "argv-bytes-run-id",
        "argv-bytes-reason",
        "latin1-input-file",
        "poll-inf",
        "poll-negative",
        "poll-nan",
        "jobs-zero",
        "backoff-nan",
        "bidi-run-id",
    ],
)
def test_input_that_used_to_traceback_or_hang_is_one_line(h, tmp_path, args, words):
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "latin1.json").write_bytes(b'{"a": "caf\xe9"}')
    files = {"{deep}": str(tmp_path / "deep.json"), "{latin1}": str(tmp_path / "latin1.json")}
    args = [files.get(a, a) for a in args]
    before = _existing_store(h)
    p = h.cli(*args)
    assert words in one_line_error(p)
    assert h.dump() == before


@pytest.mark.parametrize(
    "env,args",
    [
        ({"PHASEGATE_LEASE_SECONDS": "nan"}, ["run", TARGET, "--run-id", "r1", "--input", "{}"]),
        ({"PHASEGATE_LEASE_SECONDS": "-5"}, ["run", TARGET, "--run-id", "r1", "--input", "{}"]),
        ({"PHASEGATE_LEASE_SECONDS": "inf"}, ["worker", "--once"]),
        ({"PHASEGATE_RETENTION_DAYS": "nan"}, ["prune"]),
        ({}, ["run", TARGET, "--run-id", ""]),
        ({}, ["run", TARGET, "--run-id", "a\x9bb", "--input", "{}"]),
    ],
    ids=["lease-nan", "lease-negative", "lease-inf", "retention-nan", "empty-run-id", "c1-run-id"],
)
def test_bad_settings_create_no_store(h, env, args):
    p = h.cli(*args, env=env)
    one_line_error(p)
    if h.backend == "sqlite":
        assert not h.db.exists()
    else:
        assert h.sql("SELECT to_regclass('phasegate_runs')") == [(None,)]


@pytest.mark.sqlite_only
def test_a_fifo_as_the_database_is_refused_not_waited_on(h):
    os.mkfifo(h.db)
    for args in (["status"], ["run", TARGET, "--run-id", "r1", "--input", h.inputs()], ["verify"]):
        p = h.cli(*args)  # a hang here is the bug; the harness's timeout ends it
        assert "not a regular file" in one_line_error(p)
    assert stat.S_ISFIFO(os.stat(h.db).st_mode)


@pytest.mark.parametrize("char", ["\udcff", "\x00"], ids=["surrogate", "nul"])
def test_a_phase_error_no_backend_can_store_is_recorded_escaped(h, tmp_path, char):
    flow = tmp_path / "odd_error.py"
    flow.write_text(
        "from phasegate import Workflow\n"
        "wf = Workflow('odd-error')\n"
        "@wf.phase()\n"
        "def only(ctx):\n"
        f"    raise ValueError('bad' + {char!r} + 'text')\n"
    )
    p = h.cli("run", f"{flow}:wf", "--run-id", "r1", "--input", "{}")
    assert p.returncode == 1, p
    assert "Traceback" not in p.stderr
    st = h.status("r1")
    assert st["status"] == "failed"
    assert st["error"]["message"] == "bad" + ("<U+DCFF>" if char != "\x00" else "\\x00") + "text"
