"""The console reaches the store only through the engine's public API, and
starts (or refuses to) the way the command line promises."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import phasegate
import phasegate.console
from phasegate.cli import build_parser
from phasegate.console.__main__ import main as console_main

CONSOLE = Path(phasegate.console.__file__).parent
FORBIDDEN = ("sqlalchemy", "sqlite3", "sqlmodel", "psycopg")


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted(CONSOLE.rglob("*.py")), ids=lambda p: str(p.relative_to(CONSOLE)))
def test_console_uses_only_the_public_engine_api(path: Path) -> None:
    for name in _imports(path):
        assert not name.startswith(FORBIDDEN), f"{path.name} imports {name}: no SQL in the console"
        if name.startswith("phasegate") and not name.startswith("phasegate.console"):
            assert name == "phasegate", f"{path.name} imports {name}; use what `phasegate` exports"
    if path.name == "cli.py":
        return
    text = path.read_text()
    for word in ("SELECT ", "UPDATE ", "INSERT ", "PRAGMA "):
        assert word not in text, f"{path.name} holds SQL ({word.strip()})"


def test_engine_public_names_used_by_console_exist() -> None:
    for name in ("Engine", "PhasegateError", "Preview", "RunStatus", "RunSummary", "RunView", "default_db"):
        assert name in phasegate.__all__


def test_phasegate_console_is_registered() -> None:
    args = build_parser().parse_args(["console", "--db", "x.db", "--read-only", "--no-mouse"])
    assert (args.db, args.read_only, args.no_mouse) == ("x.db", True, True)


def test_missing_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = console_main(["--db", str(tmp_path / "nothing-here.db")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("phasegate: ")
    assert not (tmp_path / "nothing-here.db").exists()  # opening to look creates nothing
