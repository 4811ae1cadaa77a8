"""No test sleeps a fixed time hoping that something has happened: it waits
for it with tests/support/waiting.py's `until`. Where time itself must pass
(a claim the test made must lapse, a workflow's pace, a process that hangs
until it is killed), the `time.sleep(...)` says why in a `# sleep:` comment,
on its line or the line before.

tests/torture (the soak's code) is left to its own owners this round; see
EXEMPT."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.cli import ROOT

TESTS = ROOT / "tests"
EXEMPT = ("tests/torture/",)
"""Folders not checked yet: the torture's random paces and kill delays."""
MARK = "# sleep:"


def _blind_sleeps(path: Path, name: str) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if not (isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name)):
            continue
        if f.value.id != "time":
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        near = lines[max(first - 2, 0) : last]
        if not any(MARK in line for line in near):
            found.append(f"{name}:{first}: {lines[first - 1].strip()}")
    return found


def test_every_time_sleep_in_the_tests_says_why() -> None:
    blind = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(EXEMPT):
            blind += _blind_sleeps(path, rel)
    assert not blind, (
        "wait with tests.support.waiting.until instead, or say why time must pass (`# sleep: why`):\n"
        + "\n".join(blind)
    )


def test_the_check_sees_a_blind_sleep_and_accepts_a_reasoned_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import time\n\ntime.sleep(1)\n"
        "time.sleep(2)  # sleep: a lease must lapse\n"
        "# sleep: the pace\ntime.sleep(\n    3\n)\n"
        "x = 'time.sleep(4)'\n"
        "time.sleep(5)\n"
    )
    assert [line.split(":")[1] for line in _blind_sleeps(probe, "probe.py")] == ["3", "10"]
