"""The collection hook marks the real suite (tests/conftest.py, through
tests/support/markers.py): a collection in a child reports each test's
markers, `-m unit` collects tests/unit alone, and a misspelt mark is an error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT, child_env

COLLECT = ["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider"]
REPORT = """
import json, sys
import pytest

class Report:
    def pytest_collection_finish(self, session):
        marks = {i.nodeid: sorted({m.name for m in i.iter_markers()}) for i in session.items}
        print("MARKS " + json.dumps(marks))

code = pytest.main(sys.argv[1:], plugins=[Report()])
sys.exit(0 if code == 5 else code)
"""


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", REPORT, *COLLECT, *args],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _marks(*args: str) -> dict[str, set[str]]:
    p = _child(*args)
    assert p.returncode == 0, p.stdout + p.stderr
    (line,) = [ln for ln in p.stdout.splitlines() if ln.startswith("MARKS ")]
    return {k: set(v) for k, v in json.loads(line[len("MARKS ") :]).items()}


def test_each_test_is_marked_by_where_it_lives_and_what_it_uses() -> None:
    got = _marks("tests/unit/test_layers.py", "tests/engine/test_waits.py", "tests/web/test_serve_processes.py")
    kinds = {"unit", "integration", "browser", "postgres", "soak"}
    for nodeid, marks in got.items():
        mine = marks & kinds
        if nodeid.startswith("tests/unit/"):
            assert mine == {"unit"}, (nodeid, marks)
            continue
        assert "integration" in mine and "unit" not in mine and "soak" not in mine, (nodeid, marks)
        if nodeid.startswith("tests/web/"):
            assert "browser" in mine, (nodeid, marks)
        else:
            assert "browser" not in mine, (nodeid, marks)
            # the h fixture's postgres side, and only it
            assert ("postgres" in mine) == ("[postgres" in nodeid), (nodeid, marks)
    assert any(n.startswith("tests/unit/") for n in got) and any("[postgres" in n for n in got)
    assert any("postgres" in got[n] for n in got if n.startswith("tests/web/"))  # the pg_store fixture


def test_the_inner_loop_collects_tests_unit_alone() -> None:
    got = _marks("-m", "unit")
    assert got and all(n.startswith("tests/unit/") and "unit" in m for n, m in got.items())


def test_an_unregistered_mark_is_an_error(tmp_path: Path) -> None:
    test = tmp_path / "test_typo.py"
    test.write_text("import pytest\n\n\n@pytest.mark.uint\ndef test_x():\n    pass\n")
    p = _child("--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(test))
    assert p.returncode != 0 and "'uint' not found in `markers`" in p.stdout + p.stderr, p.stdout + p.stderr
