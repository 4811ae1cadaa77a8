"""Every environment variable the code reads is in the configuration
reference (docs/reference/configuration.md), and every variable listed there
is one the code names.

"Reads" is any string literal `PHASEGATE_...` in the installed folders
(engine/, console/, sample_runs/): `os.environ.get("PHASEGATE_X")` and a
constant such as `WEB_USER_ENV = "PHASEGATE_WEB_USER"` alike. The test
suite's own variables (`PHASEGATE_TEST_...`) are listed under "For tests, the demo and the guides' examples".
A variable of another convention the code reads by name (`NO_COLOR`, through
`os.environ.get`, `os.getenv` or `os.environ[...]`) must be listed too.
"""

from __future__ import annotations

import ast
import re

from tests.docs.docs_support import DOCS
from tests.support.cli import ROOT

PAGE = DOCS / "reference" / "configuration.md"
NAME = re.compile(r"^PHASEGATE_[A-Z0-9_]+$")
#: String literals shaped like a variable that are not one: the text the demo
#: writes into the folder it builds, to recognise it later (sample_runs/_build.py).
NOT_VARIABLES = {"PHASEGATE_DEMO"}


def _in_code() -> set[str]:
    found = set()
    for folder in ("engine", "console", "sample_runs"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value):
                    found.add(node.value)
    return found - NOT_VARIABLES


def _documented() -> set[str]:
    return set(re.findall(r"^\| `(PHASEGATE_[A-Z0-9_]+)`", PAGE.read_text(), re.M))


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _others_read() -> set[str]:
    """Names, not `PHASEGATE_...`, the code reads from the environment by a literal."""
    found = set()
    for folder in ("engine", "console", "sample_runs"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                key: ast.expr | None = None
                if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute | ast.Name):
                    f = node.func
                    if (isinstance(f, ast.Attribute) and f.attr in ("get", "pop") and _is_environ(f.value)) or (
                        (f.attr if isinstance(f, ast.Attribute) else f.id) == "getenv"
                    ):
                        key = node.args[0]
                elif isinstance(node, ast.Subscript) and _is_environ(node.value):
                    key = node.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and not NAME.match(key.value):
                    found.add(key.value)
    return found


def test_every_variable_the_code_reads_is_documented() -> None:
    in_code = _in_code()
    assert {"PHASEGATE_DB", "PHASEGATE_LEASE_SECONDS"} <= in_code  # the scan works
    assert in_code - _documented() == set(), "variables missing from docs/reference/configuration.md"


def test_every_documented_variable_is_read() -> None:
    tests = {v for v in _documented() if v.startswith("PHASEGATE_TEST_")}
    assert _documented() - _in_code() - tests == set(), "docs/reference/configuration.md lists variables no code reads"
    suite = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
    assert {v for v in tests if v not in suite} == set(), "test variables the suite does not read"


def test_every_other_variable_the_code_reads_is_documented() -> None:
    others = _others_read()
    assert "NO_COLOR" in others  # the scan works
    listed = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)`", PAGE.read_text(), re.M))
    assert others - listed == set(), "variables missing from docs/reference/configuration.md"
