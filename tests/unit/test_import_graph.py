"""No import circles inside `engine/` (installed as `phasegate`) or `console/`
(`phasegate.console`).

Every module is parsed with `ast`, not imported: an import counts wherever it
is written, under `if TYPE_CHECKING:` and inside a function too (a deferred
import hides a circle from the interpreter, not from the reader). Relative
imports are resolved against the module's own package. `from PKG import name`
is an edge to the module `PKG.name` when there is one, else to `PKG` itself.
Only edges inside the package under test make the graph: the console's
imports of the engine are a one-way street checked elsewhere.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Folder -> the dotted name it is installed as (pyproject's package-dir).
PACKAGES = {"engine": "phasegate", "console": "phasegate.console"}


def modules(folder: Path, dotted: str) -> dict[str, Path]:
    """Every module under `folder`, by its installed dotted name (a package
    by its own name, for its __init__.py)."""
    out: dict[str, Path] = {}
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([dotted, *parts])] = path
    return out


def _package_of(name: str, path: Path) -> str:
    """The package a relative import in module `name` starts from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` (at `path`) imports."""
    found: set[str] = set()

    def add(target: str) -> None:
        # `import a.b.c` runs a.b.c; the closest known module stands for it.
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name, path)
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                add(sub if sub in known else source)
    return found


def graph(folder: Path, dotted: str) -> dict[str, set[str]]:
    mods = modules(folder, dotted)
    known = set(mods)
    return {name: imports(name, path, known) & known for name, path in mods.items()}


def tangles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan):
    each is a set of modules that all import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return components


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle per tangle, written as a path that returns to where it
    started; sorted, so a failure reads the same every time."""
    return sorted(_one_circle(edges, comp) for comp in tangles(edges))


def _one_circle(edges: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest circle through the component's first module (breadth first)."""
    start = min(comp)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & comp):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{sorted(comp)} is not strongly connected")  # cannot happen


def describe(found: Iterable[list[str]]) -> str:
    return "\n".join(" -> ".join(c) for c in found)


def report(edges: dict[str, set[str]]) -> str:
    """Each tangle's modules, and one circle through it."""
    return "\n".join(
        f"{len(comp)} modules ({', '.join(sorted(comp))}), e.g. {' -> '.join(_one_circle(edges, comp))}"
        for comp in sorted(tangles(edges), key=min)
    )


# -- the checker itself can fail -------------------------------------------------


def test_the_checker_finds_a_circle_through_type_checking_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("from ..c import thing\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\nthing = 1\n"
    )
    (pkg / "d.py").write_text("def f():\n    from . import a\n")  # into the circle, not part of it
    found = cycles(graph(pkg, "pkg"))
    assert found == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]], describe(found)

    (pkg / "c.py").write_text("thing = 1\n")
    assert cycles(graph(pkg, "pkg")) == []


def test_the_checker_sees_the_modules_it_should() -> None:
    edges = graph(ROOT / "engine", "phasegate")
    assert {"phasegate", "phasegate.store", "phasegate.store.schema", "phasegate.cli"} <= set(edges)
    assert "phasegate.store.schema" in edges["phasegate.store.store"] or any(
        "phasegate.store.schema" in targets for targets in edges.values()
    )
    console = graph(ROOT / "console", "phasegate.console")
    assert "phasegate.console.actions" in console["phasegate.console.app"]
    assert not any(t == "phasegate" or t.startswith("phasegate.store") for ts in console.values() for t in ts)


# -- the packages ---------------------------------------------------------------------


def test_no_import_circle_in_the_engine() -> None:
    edges = graph(ROOT / "engine", "phasegate")
    assert not cycles(edges), "import circles in engine/:\n" + report(edges)


def test_no_import_circle_in_the_console() -> None:
    edges = graph(ROOT / "console", "phasegate.console")
    assert not cycles(edges), "import circles in console/:\n" + report(edges)
