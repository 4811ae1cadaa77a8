"""Every stored console snapshot belongs to a test that still exists.

syrupy reports (and fails on) snapshot files that no test used, but not when
the suite runs in xdist workers, as `pytest` does here (tests/README.md): this
keeps that check. A file is `__snapshots__/MODULE/TEST[PARAMS].svg`; MODULE
must be a test module beside the folder and TEST one of its functions."""

from __future__ import annotations

import ast
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parents[1] / "console" / "__snapshots__"


def _functions(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_snapshot_file_has_its_test() -> None:
    files = sorted(SNAPSHOTS.glob("*/*"))
    assert files, f"no snapshots under {SNAPSHOTS}"
    orphans = []
    for f in files:
        module = SNAPSHOTS.parent / f"{f.parent.name}.py"
        test = f.name.split("[", 1)[0].removesuffix(".svg")
        if f.suffix != ".svg" or not module.is_file() or test not in _functions(module):
            orphans.append(str(f.relative_to(SNAPSHOTS)))
    assert orphans == [], "snapshot files no test uses (remove them, or run pytest -n 0 --snapshot-update)"
