"""What a phase function sees: `ctx.inputs`, `ctx.missing`, `ctx.step` and
`ctx.effect`.

Ordinary steps are counted and nothing more: a phase interrupted midway is
redone from its start, which is cheap for them. Durable steps and effects
write their own records, because recomputing them is costly or doing them
twice is wrong.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .. import _json
from ..authoring.retry import NO_RETRY, Attempt, RetryPolicy, describe, wait
from ..errors import UsageError
from ..ids import validate_name

if TYPE_CHECKING:
    from ..authoring.reconcile import Reconciled
    from .ledger import EffectLedger
    from .steplog import StepLog

T = TypeVar("T")


#: Resolved return types of functions whose annotations are all strings (the
#: `from __future__ import annotations` case), by code, module and annotations:
#: resolving them compiles each string, ~40 us per effect or durable step.
_hints: dict[tuple[Any, ...], Any] = {}


def _returns(fn: Callable[..., Any]) -> Any:
    ann = getattr(fn, "__annotations__", None)
    if type(ann) is dict and not ann and not hasattr(fn, "__wrapped__"):
        return Any  # nothing declared (a lambda): what get_type_hints says, without its ~5 us
    key: tuple[Any, ...] | None = None
    if (
        isinstance(ann, dict)
        and ann
        and all(isinstance(v, str) for v in ann.values())
        and hasattr(fn, "__code__")
        and not hasattr(fn, "__wrapped__")
    ):
        key = (fn.__code__, id(getattr(fn, "__globals__", None)), tuple(ann.items()))
        if key in _hints:
            return _hints[key]
    try:
        hint = typing.get_type_hints(fn).get("return", Any)
    except Exception:  # noqa: BLE001 - lambdas, builtins, unresolved names
        hint = Any
    if key is not None and len(_hints) < 4096:
        _hints[key] = hint
    return hint


class PhaseContext:
    """The handle a phase uses to run steps and effects."""

    def __init__(
        self,
        run_id: str,
        phase: str,
        inputs: Any,
        missing: frozenset[str],
        *,
        steps: StepLog,
        effects: EffectLedger,
        attempts: list[Attempt] | None = None,
    ) -> None:
        self._steps = steps
        self._effects = effects
        self._attempts: list[Attempt] = attempts if attempts is not None else []
        """Where failed attempts of retried steps are recorded (the runner's list)."""
        self.phase = phase
        """The name of the phase being run."""
        self.run_id = run_id
        """The run's id."""
        self.inputs = inputs
        """The run's original inputs, exactly as given to its first `run`."""
        self.missing: frozenset[str] = missing
        """Needed outputs that are lost and were accepted as gaps (degraded run)."""
        self.steps_done = 0
        """Steps (of any kind) completed in this execution of the phase."""
        self._occurrence: dict[str, int] = {}
        self._effects_seen: set[str] = set()

    @property
    def degraded(self) -> bool:
        return bool(self.missing)

    def step(
        self,
        name: str,
        fn: Callable[..., T],
        /,
        *args: Any,
        durable: bool = False,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
        **kwargs: Any,
    ) -> T:
        """Run one step. With `durable=True` its result is saved when it
        completes and returned from the store on a replay of this phase.

        `retries=N` calls `fn` again, up to N more times, when it raises one
        of `retry_on`, waiting `backoff` seconds before the first retry and
        twice as long before each next one (with jitter). Each failed attempt
        is recorded with the run; the last one's error is the step's."""
        validate_name("step", name)
        policy = NO_RETRY if not retries else RetryPolicy.of(f"step {name!r}", retries, backoff, retry_on)
        if not durable:
            self.steps_done += 1
            return self._call(name, policy, fn, args, kwargs)
        n = self._occurrence.get(name, 0)
        self._occurrence[name] = n + 1
        key = name if n == 0 else f"{name}#{n + 1}"
        annotation = _returns(fn)
        found, value = self._steps.read(self.phase, key)
        if not found:
            result = self._call(name, policy, fn, args, kwargs)
            text = _json.dumps(result)
            self._steps.save(self.phase, key, text)
            value = _json.loads(text)
        self.steps_done += 1
        return cast(T, rehydrate(annotation, value))

    def _call(
        self, name: str, policy: RetryPolicy, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> T:
        attempt = 1
        while True:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                again = policy.retryable(exc, attempt)
                if again or attempt > 1:
                    self._attempts.append(Attempt(self.phase, name, attempt, policy.attempts, describe(exc), again))
                if not again:
                    raise
            wait(policy.delay(attempt))
            attempt += 1

    def effect(
        self,
        name: str,
        fn: Callable[..., T],
        /,
        *,
        idempotent: bool = False,
        atomic: bool = False,
        reconcile: Callable[[str], Reconciled] | None = None,
        reconcile_timeout: float = 30.0,
        redo_on_rewind: bool = False,
    ) -> T:
        """Do something outside the run that must not happen twice.

        Its intent (name and idempotency key) is committed before `fn(key)` is
        called, and its completion after, with the run's next commit or within
        `PHASEGATE_EFFECT_FLUSH_MS` (completions.py). `idempotent=True` says the target
        deduplicates by key, so an interrupted call may simply be repeated.
        `atomic=True` calls `fn(key, session)` with a database session inside
        the transaction that records completion: both commit or neither.

        `reconcile(key)` asks the outside system whether the action with that
        key happened, when a resume finds the effect in doubt; it answers with
        `Reconciled.done(result)`, `Reconciled.not_done()` or
        `Reconciled.unknown(why)` (reconcile.py), within `reconcile_timeout`
        seconds. `redo_on_rewind=True` (idempotent effects only) gives the
        effect a new key when a rewind or reset re-opens its phase, so the
        target acts again; by default a completed effect is never repeated."""
        validate_name("effect", name)
        if redo_on_rewind and not idempotent:
            raise UsageError(f"effect {name!r}: redo_on_rewind needs idempotent=True (a new key must be safe to send)")
        if not reconcile_timeout > 0:
            raise UsageError(f"effect {name!r}: reconcile_timeout must be a positive number of seconds")
        if name in self._effects_seen:
            raise UsageError(f"effect {name!r} is called twice in phase {self.phase!r}; effect names must be unique")
        self._effects_seen.add(name)
        value = self._effects.perform(
            self.phase,
            name,
            fn,
            idempotent=idempotent,
            atomic=atomic,
            reconcile=reconcile,
            reconcile_timeout=reconcile_timeout,
            redo_on_rewind=redo_on_rewind,
        )
        self.steps_done += 1
        return cast(T, rehydrate(_returns(fn), value))


def rehydrate(annotation: Any, value: Any) -> Any:
    """Give back the value as its function declared it (pydantic models,
    dataclasses); plain JSON data when the function declared nothing."""
    if annotation is Any or annotation is None:
        return value
    try:
        return _json.adapter(annotation).validate_python(value)
    except Exception:  # noqa: BLE001 - an annotation pydantic cannot build: keep plain data
        return value
