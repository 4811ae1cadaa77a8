"""Canonical JSON: the only format the store holds.

Canonical means one byte string per value (sorted keys, no spaces, UTF-8, no
NaN), so a content hash is stable across processes and versions. Values are
turned into plain JSON data by pydantic, which knows models, dataclasses,
datetimes and the like; reading back never executes anything.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .errors import UsageError


def to_plain(value: Any) -> Any:
    """Plain JSON data (dict, list, str, int, float, bool, None) for `value`."""
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise UsageError(f"value is not JSON-serialisable: {exc}") from None


_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def dumps(value: Any) -> str:
    """Canonical JSON text of `value`."""
    # Fast path: plain data goes straight to the C encoder; only values it
    # does not know (models, dataclasses, datetimes...) pay for pydantic.
    try:
        return _encode(value)
    except (TypeError, ValueError):
        pass
    try:
        return json.dumps(
            to_plain(_sorted_sets(value)),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(f"value is not JSON-serialisable: {exc}") from None


def _sorted_sets(value: Any) -> Any:
    """Sets become lists in a canonical order: iteration order of a set of
    strings differs between processes (hash randomisation), and the bytes,
    hence the hash, must not."""
    if isinstance(value, set | frozenset):
        items = [_sorted_sets(v) for v in value]
        return sorted(items, key=dumps)
    if isinstance(value, dict):
        return {k: _sorted_sets(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_sorted_sets(v) for v in value]
    return value


def loads(text: str | bytes) -> Any:
    return json.loads(text)


def sha256(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


_adapters: dict[Any, TypeAdapter[Any]] = {}


def adapter(annotation: Any) -> TypeAdapter[Any]:
    """A cached pydantic TypeAdapter, used to check and rehydrate stored values."""
    try:
        return _adapters[annotation]
    except (KeyError, TypeError):
        pass
    ad: TypeAdapter[Any] = TypeAdapter(annotation)
    try:
        _adapters[annotation] = ad
    except TypeError:  # unhashable annotation: do not cache
        pass
    return ad
