"""The question's own type, found again in the workflow's code at decide time.

A question's JSON Schema is stored with it (run/parking.py), but a schema
loses what only the Python type says: a pydantic validator, a model's own
rules. So `decide RUN answer` also checks the value with the type `ctx.ask`
was given, validators included, where the workflow's code can be imported:
the run's target is loaded (as a resume loads it), the asking phase's
`ctx.ask("NAME", PROMPT, TYPE)` call is found in its source, and TYPE is
read node by node in the phase's module (`_look_up`: names, subscripts,
calls, constants; never `eval`). The check is `parking.typed_answer`, the
same function the resume applies, so what decide takes a resume takes too.

The code is only believed when the type found describes itself exactly as
the stored schema does: code changed since the run asked (or a call this
reading gets wrong) falls back to the stored schema alone, and the resume's
own check still stands between any answer and the phase.

The expression read is the author's own source, from the file the run
resumes with, never stored data.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import logging
import textwrap
from typing import Any

from ..authoring import loader
from ..errors import UsageError
from ..run.parking import Refused, json_schema, typed_answer
from ..views.models import QuestionView

log = logging.getLogger(__name__)

#: What `question_type` returns when the type cannot be found again.
UNKNOWN: Any = object()


def question_type(target: str | None, q: QuestionView) -> Any:
    """The type the run's phase gave `ctx.ask` for question `q`, or `UNKNOWN`.

    Args:
        target: The run's target (`file.py:NAME` or `package.module:NAME`).
        q: The question as the run recorded it.

    Returns:
        The type, when the workflow's code can be imported, its phase calls
        `ctx.ask` with `q`'s name as a literal, and the type found describes
        itself as the stored schema does; else `UNKNOWN`.
    """
    if not target or q.schema is None:
        return UNKNOWN
    try:
        wf = loader.load(target, isolated=True)
    except UsageError as exc:
        log.debug("answer to %s: its workflow does not load (%s); the stored schema checks it", q.name, exc)
        return UNKNOWN
    phase = next((p for p in wf.phases if p.name == q.phase), None)
    if phase is None:
        return UNKNOWN
    fn = inspect.unwrap(phase.fn)
    expr = _schema_expression(fn, q.name)
    if expr is None:
        return UNKNOWN
    try:
        # The author's own expression, in the phase's own module: what `ctx.ask` was given.
        found = _look_up(expr, fn.__globals__)
        same = json_schema(f"ask {q.name!r}", found) == q.schema
    except Exception as exc:  # noqa: BLE001 - a local name, a changed module: the stored schema checks it
        log.debug("answer to %s: its type is not found again (%s: %s)", q.name, type(exc).__name__, exc)
        return UNKNOWN
    return found if same else UNKNOWN


def check_typed(target: str | None, q: QuestionView, value: Any) -> None:
    """Refuse an answer the question's own type refuses (validators included).

    Args:
        target: The run's target.
        q: The question.
        value: The answer, as JSON data (already checked against the stored schema).

    Raises:
        UsageError: the type refuses it (exit 2): the line names the field and why.
    """
    schema = question_type(target, q)
    if schema is UNKNOWN:
        return
    taken = typed_answer(schema, value)
    if isinstance(taken, Refused):
        raise UsageError(f"answer to {q.name!r} refused by its type: {taken.why}")


def _schema_expression(fn: Any, name: str) -> ast.expr | None:
    """The TYPE of the one `ctx.ask(name, PROMPT, TYPE)` call (or `schema=TYPE`) in `fn`'s source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ask"):
            continue
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        if not (isinstance(first, ast.Constant) and first.value == name):
            continue
        typ = node.args[2] if len(node.args) >= 3 else next((k.value for k in node.keywords if k.arg == "schema"), None)
        if typ is not None:
            found.append(typ)
    # Two calls asking the same name (one per branch) may give two types: neither is believed.
    return found[0] if len(found) == 1 else None


def _look_up(expr: ast.expr, names: dict[str, Any]) -> Any:
    """What a type expression of the author's source means among `names` (a
    module's globals, then the builtins), read node by node: names, dotted
    names, constants, subscripts (`Annotated[int, ...]`, `Literal["a"]`),
    tuples and lists, and calls of what those mean (`AfterValidator(f)`,
    `Field(gt=0)`). Never `eval`: anything else is refused.

    Raises:
        LookupError: `expr` holds a node of another kind (the stored schema checks it).
        Exception: what a name's lookup or a call raises.
    """
    if isinstance(expr, ast.Name):
        return names[expr.id] if expr.id in names else getattr(builtins, expr.id)
    if isinstance(expr, ast.Attribute):
        return getattr(_look_up(expr.value, names), expr.attr)
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Tuple):
        return tuple(_look_up(e, names) for e in expr.elts)
    if isinstance(expr, ast.List):
        return [_look_up(e, names) for e in expr.elts]
    if isinstance(expr, ast.Subscript):
        return _look_up(expr.value, names)[_look_up(expr.slice, names)]
    if isinstance(expr, ast.Call):
        if any(k.arg is None for k in expr.keywords) or any(isinstance(a, ast.Starred) for a in expr.args):
            raise LookupError("a call with * or ** arguments: the stored schema checks it")
        fn = _look_up(expr.func, names)
        return fn(
            *(_look_up(a, names) for a in expr.args), **{str(k.arg): _look_up(k.value, names) for k in expr.keywords}
        )
    raise LookupError(f"{type(expr).__name__} in a type: the stored schema checks it")
