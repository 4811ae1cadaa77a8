"""The store's SQL is in one place: no module of `engine/` or `console/`
outside `engine/store/` imports a database driver or SQLAlchemy, or holds SQL
in a string.

Each module is parsed with `ast`, as the layer test parses them: an import
counts wherever it is written (under `if TYPE_CHECKING:`, inside a function).
SQL is looked for in every string literal that is not a docstring, by the
shape of a statement written the way this code writes SQL, in capitals:
SELECT ... FROM, INSERT INTO, UPDATE ... SET, DELETE FROM, PRAGMA. A
docstring may name a statement; code that means to run one asks the store.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.unit.test_import_graph import ROOT

#: Top-level modules only the store may import.
FORBIDDEN = ("sqlite3", "sqlalchemy", "sqlmodel", "psycopg", "psycopg2")

#: A statement's shape, in the capitals this code writes SQL in.
SQL = re.compile(r"\bSELECT\b[\s\S]*\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|\bPRAGMA\s+\w+")

#: Where raw SQL belongs (relative to the repository), and, for now, the one
#: use that stays outside it: an atomic effect hands the author's function a
#: SQLModel session on the run's own transaction (run/atomiceffect.py).
STORE = "engine/store"
ALLOWED = {("engine/run/atomiceffect.py", "sqlmodel")}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (or attribute docstrings)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                out.add(id(stmt.value))
    return out


def violations(root: Path, folders: tuple[str, ...] = ("engine", "console")) -> list[str]:
    """Each import of a driver or SQLAlchemy, and each string of SQL, in the
    modules under `folders` of `root` outside `engine/store/`, as
    "path:line: what"."""
    found: list[str] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(STORE + "/"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            docs = _docstrings(tree)
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top in FORBIDDEN and (rel, top) not in ALLOWED:
                        found.append(f"{rel}:{node.lineno}: imports {name}")
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docs
                    and SQL.search(node.value)
                ):
                    found.append(f"{rel}:{node.lineno}: SQL in a string: {node.value[:60]!r}")
    return found


def test_no_raw_sql_outside_the_store() -> None:
    found = violations(ROOT)
    assert not found, "raw SQL outside engine/store/ (make it a named method of the store):\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_violation(tmp_path: Path) -> None:
    (tmp_path / "engine" / "store").mkdir(parents=True)
    (tmp_path / "engine" / "views").mkdir()
    (tmp_path / "console").mkdir()
    # Inside the store, all of it is allowed.
    (tmp_path / "engine" / "store" / "_x.py").write_text('import sqlite3\nQ = "SELECT * FROM phasegate_runs"\n')
    (tmp_path / "engine" / "views" / "ok.py").write_text(
        '"""Reads SELECT run_id FROM phasegate_runs, as the store words it."""\n'
        'def f():\n    """UPDATE phasegate_runs SET nothing: a docstring."""\n    return "select a book from the shelf"\n'
    )
    assert violations(tmp_path) == []
    (tmp_path / "engine" / "views" / "bad.py").write_text(
        "import sqlite3\n"
        "from sqlalchemy import select\n"
        "def f():\n"
        "    import psycopg\n"
        '    a = "SELECT value FROM phasegate_meta"\n'
        '    b = "UPDATE phasegate_runs SET x = 1"\n'
        '    return a, b, "PRAGMA journal_mode", "INSERT INTO t VALUES (1)", "DELETE FROM t"\n'
    )
    (tmp_path / "console" / "svc.py").write_text("from sqlalchemy.engine import Connection\n")
    found = violations(tmp_path)
    assert sorted(f.split(": ", 1)[0] for f in found) == [
        "console/svc.py:1",
        "engine/views/bad.py:1",
        "engine/views/bad.py:2",
        "engine/views/bad.py:4",
        "engine/views/bad.py:5",
        "engine/views/bad.py:6",
        "engine/views/bad.py:7",
        "engine/views/bad.py:7",
        "engine/views/bad.py:7",
    ], found
