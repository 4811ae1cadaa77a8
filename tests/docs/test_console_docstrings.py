"""The console's public classes say what they are for: read statically by
griffe, as tests/docs/test_docstrings.py reads the engine's public API.

In scope is every class of `console/` whose name is public (its messages
too, nested in the widget or screen that posts them), and each of its
public methods, properties and attributes (a dataclass field, a class
variable, an attribute set in `__init__`): each has a docstring of its own,
Textual-style (the string under an attribute, not a `#:` comment above it).

Left out are the names Textual calls by convention and documents itself:
message handlers (`on_...`), watchers, `compose`, `render`, and the class
variables Textual reads (`BINDINGS`, `DEFAULT_CSS`, ...), whose content
says what they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import pytest

from tests.support.cli import ROOT

griffe = pytest.importorskip("griffe", reason="griffe comes with mkdocstrings (pip install '.[test]')")

TEXTUAL_HOOKS: frozenset[str] = frozenset(
    {
        "compose",
        "render",
        "BINDINGS",
        "DEFAULT_CSS",
        "CSS_PATH",
        "COMPONENT_CLASSES",
        "AUTO_FOCUS",
        "TITLE",
        "ENABLE_COMMAND_PALETTE",
        "COMMANDS",
        "PALETTE",
    }
)
"""Members Textual reads by name, left out of the check."""


def _skipped(name: str) -> bool:
    return name.startswith(("_", "on_", "watch_")) or name in TEXTUAL_HOOKS


def _classes(module: griffe.Module) -> Iterator[griffe.Class]:
    for member in module.members.values():
        if member.is_alias:
            continue
        if isinstance(member, griffe.Module):
            yield from _classes(member)
        elif isinstance(member, griffe.Class) and not member.name.startswith("_"):
            yield member
            yield from (n for n in member.members.values() if isinstance(n, griffe.Class) and not _skipped(n.name))


@cache
def _load() -> griffe.Module:
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)], docstring_parser=griffe.Parser.google)
    return loader.load("console")  # type: ignore[return-value]


def _items() -> Iterator[tuple[str, bool]]:
    """(path, documented) for every class and member in scope."""
    for cls in _classes(_load()):
        yield cls.path, bool(cls.docstring)
        for name, member in cls.members.items():
            if member.is_alias or isinstance(member, griffe.Class) or _skipped(name):
                continue
            yield f"{cls.path}.{name}", bool(member.docstring)


def test_the_scope_is_read() -> None:
    """The check sees the console (a loader that found nothing would pass)."""
    paths = {p for p, _ok in _items()}
    assert {"console.app.ConsoleApp", "console.screens.runs.RunsScreen.PageLoaded.page"} <= paths
    assert len(paths) > 300


def test_the_console_public_classes_have_docstrings() -> None:
    missing = [p for p, ok in _items() if not ok]
    assert not missing, f"{len(missing)} of the console's public items have no docstring:\n" + "\n".join(missing)


def test_attribute_docstrings_not_comments() -> None:
    """A `#:` comment inside a class is not read by the reference: the string under the attribute is."""
    found = [
        f"{cls.path}: line {(cls.lineno or 0) + i}"
        for cls in _classes(_load())
        for i, line in enumerate(cls.lines)
        if line.strip().startswith("#:")
    ]
    assert not found, "\n".join(found)
