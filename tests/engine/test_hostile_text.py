"""Stored text never acts on the terminal that shows it: every control
character (C0, DEL, C1), escape sequence (OSC 52, OSC 0, CSI) and bidi
control that a phase error, a probe value or a decision's reason carries is
shown as a visible escape by every command that prints it; run ids refuse them.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from engine_harness import WORKFLOWS, Harness, one_line_error

TARGET = f"{WORKFLOWS / 'hostile.py'}:wf"

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
SEQUENCES = (
    "\x1b]52;c;cm0gLXJmIH4=\x07",  # OSC 52: writes the operator's clipboard
    "\x1b]0;pwned\x07",  # OSC 0: retitles the window
    "\x1b[2J\x1b[31m",  # CSI: clears the screen, turns red
    "\x9b31m",  # CSI as one C1 character
)
#: Every C0 control but NUL (which PostgreSQL cannot store), DEL, every C1
#: control, every bidi control, then whole escape sequences.
EVERY = (
    "".join(chr(c) for c in range(1, 32))
    + "\x7f"
    + "".join(chr(c) for c in range(0x80, 0xA0))
    + BIDI
    + "".join(SEQUENCES)
)


def raw_controls(text: str) -> list[str]:
    """What in a command's output would act on a terminal: anything but a line
    break that is a control (Cc) or format (Cf) character. Checked here on its
    own terms, not with the function under test."""
    return sorted(
        {f"U+{ord(c):04X}" for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf") or c in BIDI}
    )


def inert(p, *, code: int | None = None) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    if code is not None:
        assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    out = p.stdout + p.stderr
    assert raw_controls(out) == [], (raw_controls(out), out)
    return out


def _files(h: Harness, world: str, fail: str | None) -> str:
    (h.tmp / "world.txt").write_text(world)
    fail_file = h.tmp / "fail.txt"
    if fail is None:
        fail_file.unlink(missing_ok=True)
    else:
        fail_file.write_text(fail)
    return json.dumps({"world": str(h.tmp / "world.txt"), "fail": str(fail_file)})


def test_every_command_shows_stored_escapes_visibly(h: Harness) -> None:
    inputs = _files(h, "old" + EVERY, "boom" + EVERY)
    out = inert(h.cli("run", TARGET, "--run-id", "r1", "--input", inputs), code=1)
    assert "\\x1b]52;c;" in out and "<U+202E>" in out and "\\x9b31m" in out
    for args in (["status"], ["status", "r1"], ["status", "--json"], ["status", "r1", "--json"], ["verify"]):
        inert(h.cli(*args), code=0)
    # The JSON still carries the text exactly (escaped as JSON, not lost).
    st = json.loads(h.cli("status", "r1", "--json").stdout)
    assert st["error"]["message"] == (h.tmp / "fail.txt").read_text()  # as the phase read it

    # The world moves: the probe's saved and current values are hostile too.
    _files(h, "new" + EVERY, None)
    out = inert(h.cli("resume", "r1"), code=3)
    assert "env_mismatch" in out and "\\x1b" in out
    inert(h.cli("status", "r1"), code=0)
    inert(h.cli("decide", "r1", "approve", "--reason", "ok" + EVERY, "--dry-run"), code=0)
    inert(h.cli("decide", "r1", "approve", "--reason", "ok" + EVERY, "--operator", "op" + BIDI), code=0)
    out = inert(h.cli("status", "r1"), code=0)
    assert "decision" in out and "<U+202E>" in out

    # The worker's log and the watch's log carry the error of the next failure.
    _files(h, "new" + EVERY, "again" + EVERY)
    out = inert(h.cli("worker", "--once", real=True))
    assert "again" in out
    hook = h.tmp / "events.jsonl"
    out = inert(h.cli("-v", "watch", "--once", "--no-events", "--exec", f"cat >> {hook}", real=True), code=0)
    assert "announced r1" in out
    # The event a hook receives: its text fields are safe for whoever reads them.
    event = json.loads(hook.read_text().splitlines()[0])
    assert event["runbook"] and raw_controls(event["runbook"] + event["summary"]) == [], event
    inert(h.cli("status", "r1"), code=0)


@pytest.mark.parametrize(
    "run_id",
    ["a\x9bb", "a\x85b", "a\u202eb", "a\u2066b", "a\u200fb", "a\u200bb", "a\x1bb", "a\nb", "a\u2028b"],
    ids=["csi-c1", "nel-c1", "rlo", "lri", "rlm", "zwsp", "esc", "newline", "line-sep"],
)
def test_run_ids_refuse_control_and_bidi_characters(h: Harness, run_id: str) -> None:
    inputs = _files(h, "w", None)
    p = h.cli("run", TARGET, "--run-id", run_id, "--input", inputs)
    line = one_line_error(p)
    assert "run id" in line
    inert(p)
    if h.backend == "sqlite":
        assert not Path(h.db).exists()
