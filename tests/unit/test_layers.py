"""The engine's subpackages are layers: a module imports only from its own
layer or the layers below it.

The graph is `test_import_graph`'s: every module parsed with `ast`, so an
import counts wherever it is written, under `if TYPE_CHECKING:` and inside a
function too. A type-only import upward is still a dependency upward: the
reader has to know the higher layer to read the lower one. Where a lower
layer needs a shape from a higher one, it declares a Protocol of its own.

The layers, lowest first, as the package docstring of each describes them.
A new module must be placed: one that matches no layer fails the test.
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_import_graph import ROOT, graph

#: Lowest first: (layer, the modules or subpackages of `phasegate` in it).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            "errors",
            "bounds",
            "states",
            "outcome",
            "_json",
            "safetext",
            "_host",
            "_dbpath",
            "_stop",
            "_pause",
            "ids",
            "timefmt",
            "shapes",
            "safefiles",
            "waits",
        ),
    ),
    # The engine's hooks: called by the run layer, they import nothing above the base.
    ("observe", ("observe",)),
    ("history", ("history",)),
    ("store", ("store",)),
    ("authoring", ("authoring",)),
    ("run", ("run",)),
    ("views", ("views",)),
    ("oversight", ("oversight",)),
    ("decide", ("decide",)),
    ("upkeep", ("upkeep",)),
    ("engine", ("engine", "settings", "viewing")),
    # What authors test their own workflows with: it runs them through `Engine`.
    ("testing", ("testing",)),
    # Adapters of agent frameworks (each behind its extra): over the run layer's phase context.
    ("integrations", ("integrations",)),
    ("alerts", ("alerts",)),
    ("cli", ("cli", "__main__")),
    # The package itself, whose lazy public API names every layer (and whose
    # `ops` namespace is for tools, as the console is).
    ("api", ("", "ops")),
]


def layer_of(module: str, package: str = "phasegate") -> int | None:
    """The index in LAYERS of `module`, or None when no layer holds it."""
    rest = module[len(package) :].lstrip(".")
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            if rest == m or (m and rest.startswith(m + ".")):
                return i
    return None


def upward(edges: dict[str, set[str]], package: str = "phasegate") -> tuple[list[str], list[str]]:
    """The imports that run up the layers, and the modules in no layer."""
    ups: list[str] = []
    unplaced: list[str] = []
    for mod, targets in sorted(edges.items()):
        low = layer_of(mod, package)
        if low is None:
            unplaced.append(mod)
            continue
        for t in sorted(targets):
            high = layer_of(t, package)
            if high is not None and high > low:
                ups.append(f"{mod} ({LAYERS[low][0]}) imports {t} ({LAYERS[high][0]})")
    return ups, unplaced


def test_the_checker_counts_a_type_only_import_upward(tmp_path: Path) -> None:
    pkg = tmp_path / "phasegate"
    for sub in ("store", "run"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "run" / "runner.py").write_text("from ..store import rows\nfrom ..errors import E\n")
    (pkg / "store" / "rows.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..run.runner import Runner\n"
    )
    ups, unplaced = upward(graph(pkg, "phasegate"))
    assert ups == ["phasegate.store.rows (store) imports phasegate.run.runner (run)"]
    assert unplaced == []

    (pkg / "store" / "rows.py").write_text("")
    (pkg / "stray.py").write_text("")
    ups, unplaced = upward(graph(pkg, "phasegate"))
    assert ups == [] and unplaced == ["phasegate.stray"]


def test_no_import_runs_up_the_engines_layers() -> None:
    ups, unplaced = upward(graph(ROOT / "engine", "phasegate"))
    assert not unplaced, "modules in no layer (place them in tests/unit/test_layers.py's LAYERS):\n" + "\n".join(
        unplaced
    )
    assert not ups, "imports up the layers:\n" + "\n".join(ups)


def test_every_layer_is_there() -> None:
    """A layer renamed away would make the test above pass vacuously for it."""
    placed = {layer_of(m) for m in graph(ROOT / "engine", "phasegate")}
    names = [LAYERS[i][0] for i in sorted(i for i in placed if i is not None)]
    assert names == [name for name, _ in LAYERS if name != "api"] + ["api"]
