"""docs/troubleshooting.md has an entry for every error a user can meet: a
section per error title (each `PhasegateError` subclass's, and the titles
given where one is raised), a row per exit code, and every message it quotes
in a heading is one the code still says."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re

from phasegate import ExitCode
from phasegate.errors import PhasegateError
from tests.docs.docs_support import DOCS
from tests.support.cli import ROOT

PAGE = DOCS / "troubleshooting.md"
TEXT = PAGE.read_text()
FOLDERS = ("engine", "console", "sample_runs")
#: Where each folder is imported from, to find the error classes they declare.
PACKAGES = ("phasegate", "phasegate.console", "phasegate.sample_runs")


def _sections() -> set[str]:
    return set(re.findall(r"^## (.+)$", TEXT, re.M))


def _error_classes() -> set[type[PhasegateError]]:
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
            if ".web" in info.name or info.name.endswith("__main__"):
                continue  # the web extra's modules import textual-serve; its errors are found below
            importlib.import_module(info.name)
    found: set[type[PhasegateError]] = set()
    todo = [PhasegateError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def _source_strings() -> list[str]:
    """Every string literal of the installed folders, f-strings' literal parts included."""
    out = []
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    out.append(node.value)
    return out


def test_every_error_title_has_a_section() -> None:
    titles = {cls.title for cls in _error_classes() if not inspect.isabstract(cls)}
    assert {"unusable database", "decision refused", "run held"} <= titles  # the scan works
    # Titles given where an error is raised (`StoreError(..., title="damaged record")`).
    given = set()
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            given |= set(re.findall(r'raise \w+\((?:[^()]|\([^()]*\))*?title="([^"]+)"\)', text, re.S))
    missing = (titles | given | {"cannot serve"}) - _sections() - {"phasegate error"}
    assert not missing, f"error titles without a section in docs/troubleshooting.md: {sorted(missing)}"


def test_every_exit_code_has_a_row() -> None:
    section = TEXT.split("## By exit code", 1)[1].split("\n## ", 1)[0]
    listed = [int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)]
    assert listed == sorted(int(c) for c in ExitCode)


def test_every_quoted_message_is_still_said() -> None:
    quoted = re.findall(r'^### "(.+)"$', TEXT, re.M)
    assert len(quoted) >= 20, quoted
    strings = _source_strings()
    gone = [q for q in quoted if not any(q in s for s in strings)]
    assert not gone, f"docs/troubleshooting.md quotes messages the code no longer says: {gone}"
