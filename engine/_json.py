"""Canonical JSON: the only format the store holds.

Canonical means one byte string per value (sorted keys, no spaces, UTF-8, no
NaN), so a content hash is stable across processes and versions. Values are
turned into plain JSON data by pydantic, which knows models, dataclasses,
datetimes and the like; reading back never executes anything.

The canonical form is what the standard library's encoder writes
(`dumps_stdlib`). orjson writes the very same bytes for almost every value,
15-20x faster, so `dumps` asks it first and keeps its text only where it is
known to agree; everything else (non-string keys, integers past 64 bits,
sets, models, the few floats orjson spells differently, NaN) takes the
standard library's path. Stores written before orjson was used therefore read,
hash and verify unchanged: there is one canonical form, not two.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from .errors import UsageError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

NON_FINITE = "NaN and Infinity have no canonical JSON form"
"""The one error a non-finite number gets, wherever it is in a value."""


def to_plain(value: Any) -> Any:
    """Plain JSON data (dict, list, str, int, float, bool, None) for `value`."""
    # pydantic is imported when first needed: plain data never needs it, and
    # a command line start should not pay for it.
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise UsageError(f"value is not JSON-serialisable: {exc}") from None


_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode

# Everything orjson would write in its own way goes to `default`, which
# refuses, and so to the standard library: datetimes and dataclasses (pydantic
# spells them), subclasses of str/int/dict/list (IntEnum, models built on
# dict), sets, anything unknown.
_ORJSON_OPTS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)

# The only floats whose spelling differs (checked over millions of random
# doubles and every power of ten, and by tests/unit/test_json_canonical.py):
# below 1e-4 the standard library writes an exponent where orjson writes
# `0.0000...`, and single-digit negative exponents are `e-07` there, `e-7`
# here. Text that merely contains these characters (in a string) falls back
# too: slower, never wrong. The checks run over orjson's bytes as it wrote
# them: no text is decoded to look at it, and a check whose one
# indispensable byte is absent (`.`, found by memchr) does not scan.
_TINY_FLOAT = b".0000"
_SHORT_EXPONENT = re.compile(rb"e-\d(?!\d)")
# orjson writes NaN and Infinity as null. A null in the text is only trusted
# when parsing it back gives the value itself (NaN equals nothing, None least).
# A compiled pattern: re finds this literal at least as fast as `in` over
# 1 MB here (0.41-0.58 against 0.55-0.62 ms).
_NULL = re.compile(rb"null")


def _refuse(value: Any) -> NoReturn:
    raise TypeError(type(value).__name__)


def _fast(value: Any) -> bytes | None:
    """orjson's UTF-8 for `value` when it is provably the canonical text, else None."""
    data, _ = _fast_parsed(value)
    return data


def _fast_parsed(value: Any) -> tuple[bytes | None, Any]:
    """`_fast`, and the bytes parsed back when a null made that necessary
    (else `MISSING`): such a parse is a fresh copy, which a later phase may
    be handed instead of parsing the same bytes again."""
    try:
        data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTS)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        return None, MISSING
    if (b"." in data and _TINY_FLOAT in data) or _SHORT_EXPONENT.search(data):
        return None, MISSING
    if _NULL.search(data):
        parsed = orjson.loads(data)
        if not _same(parsed, value):
            return None, MISSING
        return data, parsed
    return data, MISSING


def _same(parsed: Any, value: Any) -> bool:
    try:
        return bool(parsed == value)
    except Exception:  # noqa: BLE001 - a value whose __eq__ fails is not provably the same
        return False


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""No parsed copy came with an `Encoded`: parse its bytes when one is needed."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """A value's canonical JSON, as the bytes that are hashed, stored and parsed."""

    data: bytes
    """Canonical JSON in UTF-8: the output hash is taken over exactly these bytes."""
    by_orjson: bool
    """orjson wrote them, so they hold no integer past 64 bits and orjson may
    parse them (`loads_canonical`)."""
    parsed: Any = MISSING
    """A copy already parsed from `data` while checking it (or MISSING), that no one else holds."""

    @property
    def text(self) -> str:
        """The same JSON as text, for a store column of text."""
        return self.data.decode("utf-8")


def dumps(value: Any) -> str:
    """Canonical JSON text of `value`."""
    data = _fast(value)
    return data.decode("utf-8") if data is not None else dumps_stdlib(value)


def encode(value: Any) -> Encoded:
    """Canonical JSON of `value` as bytes, the form a checkpoint hashes and keeps."""
    data, parsed = _fast_parsed(value)
    if data is not None:
        return Encoded(data, True, parsed)
    text = dumps_stdlib(value)
    try:
        return Encoded(text.encode("utf-8"), False)
    except UnicodeEncodeError:
        # A lone surrogate: the standard library writes it, UTF-8 cannot hold it.
        raise UsageError("value is not JSON-serialisable: a string holds a lone surrogate") from None


def dumps_stdlib(value: Any) -> str:
    """Canonical JSON text of `value` by the standard library alone: the
    reference `dumps` must equal byte for byte."""
    # Plain data goes straight to the C encoder; only values it does not know
    # (models, dataclasses, datetimes...) pay for pydantic.
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
    except ValueError as exc:
        if "Out of range float" in str(exc):
            raise UsageError(f"value is not JSON-serialisable: {NON_FINITE}") from None
        raise UsageError(f"value is not JSON-serialisable: {exc}") from None
    except TypeError as exc:
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
    """Parse stored JSON. The standard library's parser: it keeps integers of
    any size, and what it accepts is what stores have always held."""
    return json.loads(text)


def loads_canonical(text: str | bytes, by_orjson: bool) -> Any:
    """Parse text that `encode` wrote, into the same value `loads` would give.

    orjson parses faster; its only difference on canonical text is integers
    past 64 bits (which it turns into floats), and text orjson wrote holds
    none, so `by_orjson` (as `encode` said) decides."""
    return orjson.loads(text) if by_orjson else json.loads(text)


def loads_shallow(text: str | bytes) -> Any:
    """Parse stored JSON whose structure, strings and small numbers are all
    that will be read from it: what `loads` accepts, faster. orjson first
    (the standard library's parser where orjson refuses, so NaN and lone
    surrogates parse as they always have); an integer past 64 bits comes
    back as a float, so never use it where such a value is read."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
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
    from pydantic import TypeAdapter

    ad: TypeAdapter[Any] = TypeAdapter(annotation)
    try:
        _adapters[annotation] = ad
    except TypeError:  # unhashable annotation: do not cache
        pass
    return ad
