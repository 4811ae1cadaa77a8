"""states.py's words: each `...Name` Literal alias (and causes.py's) spells
exactly its enum's values (code typed against the alias accepts what the
engine writes, and nothing else), and each member says what it means."""

from __future__ import annotations

import ast
import enum
import inspect
import typing
from types import ModuleType

import pytest

from phasegate import states
from phasegate.decide import causes

#: The modules whose `...Name` aliases are checked: the states, and the
#: kinds of cause (public as `phasegate.CauseKind`).
_MODULES = (states, causes)


def _aliases() -> dict[str, tuple[ModuleType, typing.Any]]:
    return {
        f"{module.__name__}.{name}": (module, value)
        for module in _MODULES
        for name, value in vars(module).items()
        if name.endswith("Name") and typing.get_origin(value) is typing.Literal
    }


def test_the_aliases_are_found() -> None:
    """A rename that hid them would make the test below pass vacuously."""
    found = {key.rsplit(".", 1)[1] for key in _aliases()}
    assert {
        "RunStatusName",
        "PhaseStateName",
        "EffectStateName",
        "BlockKindName",
        "ActionName",
        "CauseKindName",
    } <= found


@pytest.mark.parametrize("key", sorted(_aliases()))
def test_an_alias_spells_exactly_its_enums_values(key: str) -> None:
    module, alias = _aliases()[key]
    members = getattr(module, key.rsplit(".", 1)[1].removesuffix("Name"))
    assert issubclass(members, enum.Enum)
    spelled = typing.get_args(alias)
    assert len(spelled) == len(set(spelled)), f"{key} repeats a value"
    assert set(spelled) == {m.value for m in members}


def test_every_member_of_every_enum_has_a_docstring() -> None:
    """A string right after the member, the way Python documents attributes."""
    tree = ast.parse(inspect.getsource(states))
    undocumented: list[str] = []
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert {c.name for c in classes} >= {
        "RunStatus",
        "OutcomeStatus",
        "PhaseState",
        "EffectState",
        "BlockKind",
        "Action",
    }
    for cls in classes:
        body = cls.body
        for i, node in enumerate(body):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            after = body[i + 1] if i + 1 < len(body) else None
            documented = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
                and after.value.value.strip()
            )
            if not documented:
                undocumented.append(f"{cls.name}.{node.targets[0].id}")
    assert not undocumented, "members without a docstring: " + ", ".join(undocumented)
