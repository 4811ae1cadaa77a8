"""The public API is two modules: `phasegate` for authors, `phasegate.ops` for
tools. What moved to `phasegate.ops` still loads from `phasegate`, with a
DeprecationWarning that names the caller's line; nothing of ours uses that
spelling any more."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

import phasegate
import phasegate.ops

ROOT = Path(__file__).resolve().parents[2]
MOVED = tuple(phasegate.ops.__all__)


def test_the_author_api_and_the_ops_namespace_do_not_overlap() -> None:
    assert not set(MOVED) & set(phasegate.__all__)
    for name in MOVED:
        assert name not in dir(phasegate), name
        assert name in dir(phasegate.ops), name
    assert "ops" in dir(phasegate)


def test_holder_stalled_is_public() -> None:
    from phasegate.errors import HolderStalled

    assert "HolderStalled" in phasegate.__all__
    assert phasegate.HolderStalled is HolderStalled


@pytest.mark.parametrize("module", [phasegate, phasegate.ops], ids=lambda m: m.__name__)
def test_every_public_name_loads_without_a_warning(module: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in module.__all__:
            assert getattr(module, name) is not None, name


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_name_warns_at_the_callers_line_and_still_works(name: str) -> None:
    message = rf"^phasegate\.{name} is deprecated; import it from phasegate\.ops$"
    with pytest.warns(DeprecationWarning, match=message) as w:
        value = getattr(phasegate, name)
    assert value is getattr(phasegate.ops, name)
    assert {r.filename for r in w} == {__file__}
    # Not cached: the next use warns again, and the name stays out of dir().
    with pytest.warns(DeprecationWarning):
        getattr(phasegate, name)
    assert name not in dir(phasegate)


def test_from_phasegate_import_a_moved_name_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match=r"^phasegate\.safe is deprecated") as w:
        from phasegate import safe
    assert safe is phasegate.ops.safe
    assert {r.filename for r in w} == {__file__}


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    for module in (phasegate, phasegate.ops):
        with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
            module.nothing_here  # noqa: B018


def _moved_uses(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "phasegate" and node.level == 0:
            found += [f"{node.lineno}: from phasegate import {a.name}" for a in node.names if a.name in MOVED]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "phasegate":
            if node.attr in MOVED:
                found.append(f"{node.lineno}: phasegate.{node.attr}")
    return found


def test_our_own_code_imports_moved_names_from_ops() -> None:
    """Including code that runs in a subprocess or outside the suite, which
    pyproject's `filterwarnings` (an error for this warning) does not see."""
    offenders = []
    for folder in ("console", "sample_runs", "bench", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__):
                continue
            offenders += [f"{path.relative_to(ROOT)}:{use}" for use in _moved_uses(path)]
    assert offenders == []
