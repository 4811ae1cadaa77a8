"""Declaring a workflow: its probes and its phases, in order.

A workflow knows nothing of storage. It is a description the engine reads:
which phases exist, what each needs and cannot start without, which probes of
the outside world each depends on, and a fingerprint of each phase's code.
"""

from __future__ import annotations

import hashlib
import inspect
import textwrap
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from .. import _json
from ..errors import UsageError, WorkflowError
from ..ids import validate_name
from ..safetext import is_safe
from . import runbooks as _runbooks
from .retry import NO_RETRY, RetryPolicy

F = TypeVar("F", bound=Callable[..., Any])

#: A pseudo-probe: the age of the last checkpoint, compared with `max_age`.
AGE_PROBE = "age"


def _source_bytes(obj: Any) -> bytes:
    try:
        return textwrap.dedent(inspect.getsource(obj)).encode("utf-8")
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        return repr((code.co_code, code.co_consts)).encode() if code else repr(obj).encode()


def _names(code: types.CodeType) -> set[str]:
    """Global names a code object (and the functions nested in it) refers to."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _covered(fn: Callable[..., Any]) -> dict[str, bytes]:
    """What a phase's fingerprint covers: its source, and the source of every
    function or class of the same module it reaches through global names
    (helpers such as the step functions it calls), recursively. A fix in a
    helper is a code change of the phase. Comments count too: an operator
    would rather see a false alarm than miss a change.

    Each piece is named by its qualified name alone, not by its module's
    name: the same file is `__main__` when run as a script, `flow` when
    imported by name and a generated name when `phasegate resume` loads it
    by path, and how the code was loaded is no change of the code."""
    module = getattr(fn, "__module__", None)
    seen: dict[str, bytes] = {}
    todo: list[Any] = [fn]
    while todo:
        obj = todo.pop()
        key = str(getattr(obj, "__qualname__", repr(obj)))
        if key in seen:
            continue
        seen[key] = _source_bytes(obj)
        code = getattr(obj, "__code__", None)
        glb = getattr(obj, "__globals__", None)
        if code is None or glb is None:
            continue
        for name in sorted(_names(code)):
            ref = glb.get(name)
            if (inspect.isfunction(ref) or inspect.isclass(ref)) and getattr(ref, "__module__", None) == module:
                if inspect.isclass(ref):
                    seen.setdefault(ref.__qualname__, _source_bytes(ref))
                else:
                    todo.append(ref)
    return seen


def _reached(fn: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    """The named functions of the phase's module it reaches through global
    names, recursively, by qualified name (the phase itself included)."""
    module = getattr(fn, "__module__", None)
    found: dict[str, Callable[..., Any]] = {}
    todo: list[Any] = [fn]
    while todo:
        obj = todo.pop()
        key = str(getattr(obj, "__qualname__", ""))
        if not key or key in found:
            continue
        found[key] = obj
        code, glb = getattr(obj, "__code__", None), getattr(obj, "__globals__", None)
        if code is None or glb is None:
            continue
        for name in sorted(_names(code)):
            ref = glb.get(name)
            if inspect.isfunction(ref) and getattr(ref, "__module__", None) == module:
                todo.append(ref)
    return found


def _code_shape(code: types.CodeType, h: Any) -> None:
    """Feed what a code object does to `h`: its bytecode, names and
    constants (nested code too), not its line numbers: a comment or a blank
    line changes nothing here."""
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            h.update(b"<code>")
            _code_shape(const, h)
        else:
            h.update(repr(const).encode())


def step_functions(fn: Callable[..., Any]) -> dict[str, str]:
    """A fingerprint of what each named function a phase reaches does, by
    qualified name (run/replay.py: a durable step whose function changed is
    not handed its saved result). Each covers the function's own code and,
    recursively, the same-module functions it names; comments do not count.

    Args:
        fn: The phase's function.

    Returns:
        Qualified name -> a 16-hex-digit fingerprint.
    """
    reached = _reached(fn)
    memo: dict[str, str] = {}

    def of(key: str, stack: frozenset[str]) -> str:
        if key in memo:
            return memo[key]
        obj = reached[key]
        h = hashlib.sha256()
        code = getattr(obj, "__code__", None)
        if code is not None:
            _code_shape(code, h)
            glb = getattr(obj, "__globals__", {})
            for name in sorted(_names(code)):
                ref = glb.get(name)
                other = str(getattr(ref, "__qualname__", ""))
                if inspect.isfunction(ref) and other in reached:
                    h.update(f"{name}->{other}:".encode())
                    if other not in stack:
                        h.update(of(other, stack | {key}).encode())
        digest = h.hexdigest()[:16]
        memo[key] = digest
        return digest

    return {key: of(key, frozenset()) for key in reached if "<locals>" not in key}


def _code_hash(covered: dict[str, bytes], module: str = "") -> str:
    """The fingerprint of the covered code. `module` prefixes each name as
    phasegate before 0.2 did (see `Phase.former_hashes`)."""
    h = hashlib.sha256()
    for key in sorted(covered):
        h.update(f"{module}.{key}".encode() if module else key.encode())
        h.update(b"\0" + covered[key] + b"\0")
    return h.hexdigest()[:16]


def _source_text(covered: dict[str, bytes]) -> str:
    """The covered sources as one text, in the order the hash reads them,
    each under a header line naming it: what a drift's diff is made of."""
    parts = []
    for key in sorted(covered):
        parts.append(f"# --- {key}\n" + covered[key].decode("utf-8", "replace").rstrip("\n") + "\n")
    return "".join(parts)


#: The longest code version label taken (`Workflow(version=...)`, `PHASEGATE_CODE_VERSION`).
VERSION_LABEL_MAX = 64


def check_version_label(label: object, where: str, error: type[UsageError] = UsageError) -> str:
    """A code version's label, checked: one line a person reads in `status`
    and in an alert. The one rule for `Workflow(version=...)` and
    `PHASEGATE_CODE_VERSION` (run/codeversion.py).

    Args:
        label: The label given.
        where: Where it was given, for the message.
        error: The error to raise (`WorkflowError` at declaration).

    Returns:
        The label, unchanged.

    Raises:
        UsageError: (or `error`) It is not a non-empty printable text of at most 64 characters.
    """
    if not isinstance(label, str) or not label.strip():
        raise error(f"{where}: a code version must be a non-empty text")
    if len(label) > VERSION_LABEL_MAX or not label.isprintable() or not is_safe(label):
        raise error(f"{where}: a code version must be at most {VERSION_LABEL_MAX} printable characters")
    return label


def _return_annotation(fn: Callable[..., Any]) -> Any:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolved forward refs: treat as untyped
        return Any
    return hints.get("return", Any)


@dataclass(frozen=True)
class Probe:
    name: str
    fn: Callable[..., Any]


@dataclass(frozen=True)
class Phase:
    name: str
    fn: Callable[..., Any]
    index: int
    needs: tuple[str, ...]
    floor: tuple[str, ...]
    probes: tuple[str, ...]
    code_hash: str
    output_type: Any = field(default=Any, compare=False)
    rederivable: bool = True
    source: str = field(default="", compare=False, repr=False)
    """The text `code_hash` covers (see `_covered`), kept for the sources table."""
    former_hashes: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """The same code's fingerprint as earlier versions computed it (with the
    module's name in it): a run checkpointed by them is not told its code
    changed when only the fingerprint's recipe did."""

    retry: RetryPolicy = field(default=NO_RETRY, compare=False, repr=False)
    """How a failure of the phase is retried (`@wf.phase(retries=...)`)."""
    is_async: bool = field(default=False, compare=False)
    """An `async def` phase: it gets an `AsyncPhaseContext` and runs in an event loop."""
    fns: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """What each named function the phase reaches does (`step_functions`),
    kept in the run's shape: a replay under changed code tells a durable
    step whose function changed (run/replay.py)."""

    def runs(self, code: str | None) -> bool:
        """Whether a recorded fingerprint names this phase's current code."""
        return code == self.code_hash or code in self.former_hashes

    def shape(self) -> dict[str, Any]:
        return {"name": self.name, "needs": list(self.needs)}


class Workflow:
    """A named, ordered set of phases and the probes they depend on."""

    def __init__(
        self,
        name: str,
        *,
        max_age: float | timedelta | None = None,
        runbooks: Mapping[str, str] | None = None,
        version: str | None = None,
    ) -> None:
        """
        Args:
            name: The workflow's name, stored with every run of it.
            max_age: How old (seconds, or a `timedelta`) a run's last checkpoint
                may be before a resume stops as `env_mismatch` on the `age` probe.
            runbooks: Why a run stops -> what an operator should do about it (a
                link or a short text). A key is a block kind (`env_mismatch`,
                `in_doubt_effect`, `below_floor`, `integrity`, or `failed`), a
                kind for one phase (`failed:charge`), or a phase name (any stop
                there). They are stored with each run, so `status`, the console
                and alerts show them without this code.
            version: What you call this code (a release, a commit), recorded
                with each attempt of each run beside the code's digest
                (run/codeversion.py) and shown by `status`, the console and
                alerts; without it, `PHASEGATE_CODE_VERSION` is recorded.

        Raises:
            WorkflowError: The name is empty or holds control, bidi or invisible
                characters, a runbook's key or text is not acceptable, or the
                version is not one printable line of at most 64 characters.
        """
        self.name = validate_name("workflow", name, WorkflowError)
        """The workflow's name."""
        self.version: str | None = None if version is None else check_version_label(version, name, WorkflowError)
        """What the author calls this code (`version=`), or None."""
        self.runbooks: dict[str, str] = _runbooks.check(name, runbooks or {})
        """The runbooks as given, checked."""
        self.max_age: float | None = max_age.total_seconds() if isinstance(max_age, timedelta) else max_age
        """Seconds a checkpoint may age before a resume stops (None: no limit)."""
        self.phases: list[Phase] = []
        """The phases, in declaration order (the order they run in)."""
        self.probes: dict[str, Probe] = {}
        """The environment probes, by name."""
        self._cache: dict[str, Any] = {}

    def probe(self, name: str) -> Callable[[F], F]:
        """Register an environment probe: a function returning a JSON value that
        describes an outside condition the workflow depends on. It may take one
        parameter, the run's inputs (to find the files that run works on).

        Args:
            name: The probe's name, as phases list it in `probes=`.

        Returns:
            A decorator that registers the function and returns it unchanged.

        Raises:
            WorkflowError: The name is reserved (`age`), already declared, or
                holds control, bidi or invisible characters.
        """
        validate_name("probe", name, WorkflowError)
        if name == AGE_PROBE:
            raise WorkflowError(f"probe name {AGE_PROBE!r} is reserved for max_age")

        def deco(fn: F) -> F:
            if name in self.probes:
                raise WorkflowError(f"probe {name!r} is declared twice in {self.name!r}")
            self.probes[name] = Probe(name, fn)
            return fn

        return deco

    @typing.overload
    def phase(self, name: F, /) -> F: ...

    @typing.overload
    def phase(
        self,
        name: str | None = None,
        *,
        needs: Iterable[str] = (),
        floor: Iterable[str] | None = None,
        probes: Iterable[str] = (),
        rederivable: bool = True,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    ) -> Callable[[F], F]: ...

    def phase(
        self,
        name: str | Callable[..., Any] | None = None,
        *,
        needs: Iterable[str] = (),
        floor: Iterable[str] | None = None,
        probes: Iterable[str] = (),
        rederivable: bool = True,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    ) -> Any:
        """Register a phase: `@wf.phase`, `@wf.phase()` or `@wf.phase("name", ...)`.
        Phases run in declaration order. `needs` names the
        earlier phases whose outputs it reads; `floor` the subset it cannot start
        without (all of `needs` unless given). `rederivable=False` says a lost
        output of this phase cannot be recomputed by running it again (it
        captured a moment of the outside world), so a later phase whose floor
        needs it stops below its floor instead of silently re-running it.

        `retries=N` re-runs the phase from its start, up to N more times, when
        it raises one of `retry_on`, after `backoff` seconds (doubled each
        time, with jitter). A re-run keeps what the failed attempt saved: its
        durable steps come back from the store and its completed effects are
        not called again.

        A phase declared `async def` gets an `AsyncPhaseContext` and runs in an
        event loop (the run's own, or the caller's under `Engine.arun`).

        Args:
            name: The phase's name (default: the function's name); no '/'. (Used
                bare, `@wf.phase` is given the function itself, and registers it.)
            needs: Earlier phases whose outputs it is called with, as keyword arguments.
            floor: The needs it cannot start without (default: all of them).
            probes: The probes it reads (a probe no phase names is read by every phase).
            rederivable: Whether a lost output of it may be recomputed by running it again.
            retries: How many more times the phase is run from its start after a failure.
            backoff: Seconds before the first retry, doubled before each next one (with jitter).
            retry_on: The exceptions that are retried.

        Returns:
            A decorator that registers the function and returns it unchanged
            (used bare: the function, registered).

        Raises:
            WorkflowError: (from the decorator) the name is taken or holds '/', a
                need is not an earlier phase, the floor is not within the needs,
                or a probe is unknown.
        """

        if callable(name):
            # `@wf.phase` without parentheses: Python calls it with the function.
            # Returning a decorator here would replace the function with it and
            # register nothing, so the run would complete having done nothing.
            return self.phase(
                None,
                needs=needs,
                floor=floor,
                probes=probes,
                rederivable=rederivable,
                retries=retries,
                backoff=backoff,
                retry_on=retry_on,
            )(name)

        def deco(fn: F) -> F:
            pname = validate_name("phase", name or fn.__name__, WorkflowError)
            need_t = tuple(needs)
            floor_t = need_t if floor is None else tuple(floor)
            known = {p.name for p in self.phases}
            if pname in known:
                raise WorkflowError(f"phase {pname!r} is declared twice in {self.name!r}")
            if "/" in pname:
                # An effect's key is run/phase/name: a "/" in a phase would let two effects share one.
                raise WorkflowError(f"phase {pname!r}: a phase name cannot hold '/'")
            for n in need_t:
                if n not in known:
                    raise WorkflowError(f"phase {pname!r} needs {n!r}, which is not an earlier phase")
            for n in floor_t:
                if n not in need_t:
                    raise WorkflowError(f"phase {pname!r} has {n!r} in its floor but not in needs")
            for p in probes:
                if p not in self.probes and p != AGE_PROBE:
                    raise WorkflowError(f"phase {pname!r} declares unknown probe {p!r}")
            policy = RetryPolicy.of(f"phase {pname!r}", retries, backoff, retry_on) if retries else NO_RETRY
            self._cache.clear()
            covered = _covered(fn)
            module = str(getattr(fn, "__module__", ""))
            self.phases.append(
                Phase(
                    name=pname,
                    fn=fn,
                    index=len(self.phases),
                    needs=need_t,
                    floor=floor_t,
                    probes=tuple(probes),
                    code_hash=_code_hash(covered),
                    output_type=_return_annotation(fn),
                    rederivable=rederivable,
                    source=_source_text(covered),
                    former_hashes=(_code_hash(covered, module),),
                    retry=policy,
                    is_async=inspect.iscoroutinefunction(fn),
                    fns=step_functions(fn),
                )
            )
            return fn

        return deco

    # -- derived descriptions ------------------------------------------------

    def get(self, name: str) -> Phase:
        """A phase by name.

        Args:
            name: The phase's name.

        Returns:
            The phase.

        Raises:
            KeyError: The workflow has no such phase.
        """
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)

    def shape(self) -> list[dict[str, Any]]:
        """Phases and their needs, in order: what a resume must find unchanged
        before its frontier.

        Returns:
            One `{"name", "needs"}` mapping per phase.
        """
        if "shape" not in self._cache:
            self._cache["shape"] = [p.shape() for p in self.phases]
        return list(self._cache["shape"])

    def code_version(self) -> str:
        """A short fingerprint of every phase's code and needs.

        Returns:
            Sixteen hex digits that change when any phase's code or needs do.
        """
        if "code" not in self._cache:
            h = hashlib.sha256()
            for p in self.phases:
                h.update(f"{p.name}:{p.code_hash}:{','.join(p.needs)};".encode())
            self._cache["code"] = h.hexdigest()[:16]
        return str(self._cache["code"])

    def describe(self) -> list[dict[str, Any]]:
        """The shape the store keeps for operators (who may not have the code).
        A phase's `runbooks` (kind -> text, resolved for that phase) is there
        only when the workflow declares some; older stores have none.

        Returns:
            One mapping per phase: name, needs, floor, probes, code and (maybe) runbooks.
        """
        _runbooks.check_phases(self.name, self.runbooks, [p.name for p in self.phases])
        out: list[dict[str, Any]] = []
        for p in self.phases:
            d: dict[str, Any] = {
                "name": p.name,
                "needs": list(p.needs),
                "floor": list(p.floor),
                "probes": list(p.probes),
                "code": p.code_hash,
            }
            if p.fns:
                d["fns"] = dict(p.fns)
            books = _runbooks.for_phase(self.runbooks, p.name)
            if books:
                d["runbooks"] = books
            out.append(d)
        return out

    def check_output(self, phase: str, value: Any) -> str | None:
        """Why `value` does not fit what `phase` declares it returns.

        Args:
            phase: The phase's name.
            value: A candidate output (an operator's, for a degrade).

        Returns:
            The first line of the validation error, or None when it fits (or
            when the phase is unknown or declares nothing).
        """
        try:
            ph = self.get(phase)
        except KeyError:
            return None
        if ph.output_type is Any:
            return None
        try:
            _json.adapter(ph.output_type).validate_python(value)
        except Exception as exc:  # noqa: BLE001 - pydantic ValidationError or schema build error
            return str(exc).splitlines()[0]
        return None

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, phases={[p.name for p in self.phases]})"
