"""The answer form's fields, from a question's JSON Schema: which widget each
part of the answer gets, and how the operator's entries become the value.
Nothing here imports Textual; the engine checks the value against the schema
again before anything is recorded (`Engine.preview`, then `Engine.decide`).

A schema is stored data: it is read, never executed, and every word of it
that reaches the screen goes through `phasegate.ops.safe`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

FieldKind = Literal["boolean", "choice", "integer", "number", "string", "json"]

#: A whole answer (no property path).
WHOLE = ""

#: How deep a `$ref` chain is followed (a schema that refers to itself is shown as JSON past it).
MAX_REFS = 8


@dataclass(frozen=True)
class Field:
    """One field of the answer form."""

    path: str
    """The property it fills (WHOLE for the whole answer)."""
    label: str
    """How the form names it."""
    kind: FieldKind
    """Which widget enters it (text, number, a checkbox, a choice, JSON)."""
    required: bool = True
    """The schema requires it: an empty entry is refused."""
    options: tuple[Any, ...] = ()
    """For a choice: the values to choose among, in the schema's order."""
    default: Any = None
    """The schema's default, or None."""
    hint: str = ""
    """The schema's description or its type, said in the field's placeholder."""


@dataclass(frozen=True)
class Form:
    """The fields of one question's answer."""

    fields: tuple[Field, ...]
    """The fields, in the schema's order."""
    whole_object: bool = False
    """The answer is an object whose properties are the fields."""


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """`schema` with a local `$ref` (`#/$defs/Name`, as pydantic writes it) followed."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and depth < MAX_REFS:
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, Mapping) else None
        schema, depth = node if isinstance(node, Mapping) else {}, depth + 1
    return schema


def _kind(schema: Any, root: Mapping[str, Any]) -> tuple[FieldKind, tuple[Any, ...]]:
    """The widget a (sub)schema gets, and a choice's options."""
    s = _resolve(schema, root)
    if not isinstance(s, Mapping):
        return "json", ()
    if isinstance(s.get("enum"), list) and s["enum"]:
        return "choice", tuple(s["enum"])
    if "const" in s:
        return "choice", (s["const"],)
    t = s.get("type")
    if t in ("boolean", "integer", "number", "string"):
        return t, ()
    return "json", ()


def _hint(schema: Any, root: Mapping[str, Any], kind: FieldKind) -> str:
    s = _resolve(schema, root)
    desc = s.get("description") if isinstance(s, Mapping) else None
    if isinstance(desc, str) and desc:
        return desc
    props = s.get("properties") if isinstance(s, Mapping) else None
    if kind == "json" and isinstance(props, Mapping) and props:
        # The shape to type, one level deep: "JSON object: width (integer), height (integer)".
        parts = [f"{name} ({_kind(sub, root)[0]})" for name, sub in props.items()]
        return "JSON object: " + ", ".join(parts)
    if kind == "json" and isinstance(s, Mapping) and s.get("type") == "array":
        return "JSON list"
    return {"integer": "a whole number", "number": "a number", "string": "text", "json": "JSON"}.get(kind, "")


def form_of(schema: Mapping[str, Any] | None) -> Form:
    """The form for a question's schema: a checkbox for a boolean, a choice
    for an enum, a checked field for a number or a string, one field per
    property of an object (JSON for a property that is not simple), and
    one JSON field for anything else (or no schema: any JSON value).

    Args:
        schema: The question's JSON Schema, as stored (None: any value).

    Returns:
        Its form.
    """
    root: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    top = _resolve(root, root)
    props = top.get("properties") if isinstance(top, Mapping) else None
    if isinstance(top, Mapping) and top.get("type") == "object" and isinstance(props, Mapping) and props:
        listed = top.get("required")
        required: list[Any] = listed if isinstance(listed, list) else []
        fields = []
        for name, sub in props.items():
            kind, options = _kind(sub, root)
            sub_r = _resolve(sub, root)
            fields.append(
                Field(
                    str(name),
                    str(name),  # the name the answer's JSON uses (as `decide --value` takes it)
                    kind,
                    required=name in required,
                    options=options,
                    default=sub_r.get("default") if isinstance(sub_r, Mapping) else None,
                    hint=_hint(sub, root, kind),
                )
            )
        return Form(tuple(fields), whole_object=True)
    if schema is None:
        return Form((Field(WHOLE, "answer", "json", hint="any JSON value"),))
    kind, options = _kind(top, root)
    default = top.get("default") if isinstance(top, Mapping) else None
    return Form((Field(WHOLE, "answer", kind, options=options, default=default, hint=_hint(top, root, kind)),))


class EntryError(ValueError):
    """An entry that is not a value of its field's kind (the field's path said)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"at {path or 'the answer'}: {message}")
        self.path = path
        """The path of the field whose entry was refused ("" for the whole answer)."""


Entry = bool | str | None
"""What a widget holds: a checkbox's bool, a choice's index as text (None:
nothing chosen), the text of an input."""


def value_of(form: Form, entries: Mapping[str, Entry]) -> Any:
    """The answer the operator's entries make.

    Args:
        form: The question's form.
        entries: Each field's entry, by its path.

    Returns:
        The value to record (then checked by the engine against the schema).

    Raises:
        EntryError: An entry is not of its field's kind, or a required one is empty.
    """
    out: dict[str, Any] = {}
    for f in form.fields:
        raw = entries.get(f.path)
        missing, value = _one(f, raw)
        if missing:
            if f.required or not form.whole_object:
                raise EntryError(f.path, "required")
            continue
        if not form.whole_object:
            return value
        out[f.path] = value
    return out


def _one(f: Field, raw: Entry) -> tuple[bool, Any]:
    """(missing, value) of one entry."""
    if f.kind == "boolean":
        return False, bool(raw)
    if f.kind == "choice":
        if raw is None or raw == "":
            return True, None
        return False, f.options[int(str(raw))]
    text = str(raw or "")
    if f.kind == "string":
        # An empty optional text is left out; a required one is the empty string.
        return (not text and not f.required), text
    text = text.strip()
    if not text:
        return True, None
    if f.kind == "integer":
        try:
            return False, int(text)
        except ValueError:
            raise EntryError(f.path, f"{text!r} is not a whole number") from None
    if f.kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise EntryError(f.path, f"{text!r} is not a number") from None
        return False, int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    try:
        return False, json.loads(text)
    except ValueError as exc:
        raise EntryError(f.path, f"not JSON ({exc})") from None


def choice_label(value: Any) -> str:
    """How a choice's option is shown: text as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def initial_text(f: Field) -> str:
    """What an input starts with: the schema's default, when it has one."""
    if f.default is None or f.kind in ("boolean", "choice"):
        return ""
    if f.kind == "string":
        return str(f.default)
    return json.dumps(f.default)
