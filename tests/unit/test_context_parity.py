"""The two phase contexts are one face (issue 41): what a sync phase calls,
an async phase awaits, with the same names and the same parameters, and the
runner's own hooks are not part of either."""

from __future__ import annotations

import inspect
import typing
from typing import Any

from phasegate import AsyncPhaseContext, PhaseContext

#: Decided without a wait: plain calls in both contexts.
NEVER_AWAITED = {"patched", "deprecated_patch", "progress"}


def _public(cls: type) -> dict[str, Any]:
    return {name: inspect.getattr_static(cls, name) for name in dir(cls) if not name.startswith("_")}


def _params(fn: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_both_contexts_have_the_same_public_methods_and_attributes() -> None:
    sync, async_ = _public(PhaseContext), _public(AsyncPhaseContext)
    assert sorted(sync) == sorted(async_)
    assert {"step", "map", "effect", "ask", "sleep", "sleep_until", "patched", "deprecated_patch"} <= set(sync)


def test_each_method_takes_the_same_parameters_in_both() -> None:
    for name, member in _public(PhaseContext).items():
        other = inspect.getattr_static(AsyncPhaseContext, name)
        if isinstance(member, property):
            assert isinstance(other, property), name
            continue
        assert _params(member) == _params(other), name


def test_what_waits_is_awaited_in_the_async_context_and_nothing_else() -> None:
    for name, member in _public(AsyncPhaseContext).items():
        if isinstance(member, property):
            continue
        assert inspect.iscoroutinefunction(member) == (name not in NEVER_AWAITED), name
        assert not inspect.iscoroutinefunction(inspect.getattr_static(PhaseContext, name)), name


def test_the_runners_hooks_are_not_public() -> None:
    for cls in (PhaseContext, AsyncPhaseContext):
        assert not {"adopt", "settle", "close"} & set(_public(cls)), cls


def test_ask_is_typed_to_return_the_schemas_type_in_both() -> None:
    """`ctx.ask(..., bool)` is a bool to a type checker, awaited or not: the
    overloads say so, the same in both contexts (no schema, or a type form
    that is no class, is any JSON value: `Any`)."""
    for cls in (PhaseContext, AsyncPhaseContext):
        said = [(o.__annotations__["schema"], o.__annotations__["return"]) for o in typing.get_overloads(cls.ask)]
        assert said == [("None", "Any"), ("type[T]", "T"), ("object", "Any")], cls
