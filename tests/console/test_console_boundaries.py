"""The console reaches the store only through the engine's public API
(`phasegate` and, for a tool's plumbing, `phasegate.ops`), and starts (or
refuses to) the way the command line promises."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import phasegate
import phasegate.console
import phasegate.ops
from phasegate.cli.main import build_parser
from phasegate.console.__main__ import main as console_main

CONSOLE = Path(phasegate.console.__file__).parent
FORBIDDEN = ("sqlalchemy", "sqlite3", "sqlmodel", "psycopg")
#: The engine's public modules, each with what it exports: all the console may
#: import of the engine.
PUBLIC: dict[str, frozenset[str]] = {
    "phasegate": frozenset(phasegate.__all__),
    "phasegate.ops": frozenset(phasegate.ops.__all__),
}


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
            assert name in PUBLIC, f"{path.name} imports {name}; use what `phasegate` or `phasegate.ops` exports"
    if path.name == "command.py":
        return
    text = path.read_text()
    for word in ("SELECT ", "UPDATE ", "INSERT ", "PRAGMA "):
        assert word not in text, f"{path.name} holds SQL ({word.strip()})"


#: What the console may touch on an `Engine`: what its class declares publicly
#: (methods and properties). Instance attributes such as `store` are not API.
ENGINE_API = frozenset(n for n in vars(phasegate.Engine) if not n.startswith("_"))


def _is_own(node: ast.expr) -> bool:
    """`self`, `cls` or `super()`: a class's own private names are its business."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _names_engine(node: ast.expr) -> bool:
    """`engine`, `eng` or `<anything>.engine`: an expression holding the Engine."""
    if isinstance(node, ast.Name):
        return node.id in ("engine", "eng")
    return isinstance(node, ast.Attribute) and node.attr == "engine"


def private_uses(source: str) -> list[str]:
    """Every place `source` reaches past a public API: a name imported from
    `phasegate` or `phasegate.ops` that the module does not export,
    `phasegate.X` or `phasegate.ops.X` for such an X, a private attribute
    (`x._name`) of anything but self/cls/super(), and any attribute of an
    engine that `Engine` does not declare publicly."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in PUBLIC:
            exported = PUBLIC[node.module]
            found += [f"{where}: from {node.module} import {a.name}" for a in node.names if a.name not in exported]
        elif isinstance(node, ast.ImportFrom) and node.level:
            found += [f"{where}: import of private {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute):
            module = _dotted(node.value)
            if module in PUBLIC:
                if node.attr not in PUBLIC[module] and f"{module}.{node.attr}" not in PUBLIC:
                    found.append(f"{where}: {module}.{node.attr}")
            elif _private(node.attr) and not _is_own(node.value):
                found.append(f"{where}: .{node.attr}")
            elif _names_engine(node.value) and node.attr not in ENGINE_API:
                found.append(f"{where}: engine.{node.attr}")
    return sorted(found, key=lambda f: int(f.split()[1].rstrip(":")))


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` as "a.b.c"; None for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_the_private_name_check_can_fail() -> None:
    bad = (
        "from phasegate import Engine, _json\n"
        "import phasegate\n"
        "def f(engine, app, self):\n"
        "    engine.store.path\n"
        "    app.engine._view(1)\n"
        "    app._bindings\n"
        "    phasegate.Store\n"
        "    self._mine, super()._hook, engine.status('x')\n"
        "from phasegate.ops import safe, Store\n"
        "from phasegate import safe\n"
        "phasegate.ops.safe, phasegate.ops.Store, phasegate.safe, phasegate.Engine\n"
    )
    assert private_uses(bad) == [
        "line 1: from phasegate import _json",
        "line 4: engine.store",
        "line 5: ._view",
        "line 6: ._bindings",
        "line 7: phasegate.Store",
        "line 9: from phasegate.ops import Store",
        "line 10: from phasegate import safe",
        "line 11: phasegate.ops.Store",
        "line 11: phasegate.safe",
    ]


@pytest.mark.parametrize("path", sorted(CONSOLE.rglob("*.py")), ids=lambda p: str(p.relative_to(CONSOLE)))
def test_console_uses_no_private_name(path: Path) -> None:
    """#10: the console reaches the store only through the public API (and
    Textual only through its public one: a private name changes without notice)."""
    assert not private_uses(path.read_text()), f"{path.relative_to(CONSOLE)}: {private_uses(path.read_text())}"


def test_engine_public_names_used_by_console_exist() -> None:
    for name in ("Engine", "PhasegateError", "Preview", "RunStatus", "RunSummary", "RunView"):
        assert name in phasegate.__all__
    for name in ("default_db", "safe", "watch_store"):
        assert name in phasegate.ops.__all__


def test_phasegate_console_is_registered() -> None:
    args = build_parser().parse_args(["console", "--db", "x.db", "--read-only", "--no-mouse"])
    assert (args.db, args.read_only, args.no_mouse) == ("x.db", True, True)


def test_missing_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = console_main(["--db", str(tmp_path / "nothing-here.db")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("phasegate: ")
    assert not (tmp_path / "nothing-here.db").exists()  # opening to look creates nothing
