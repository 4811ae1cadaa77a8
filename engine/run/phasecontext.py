"""What a sync phase function sees: `ctx.inputs`, `ctx.missing`,
`ctx.step`, `ctx.effect`, `ctx.map`, the waits `ctx.ask`, `ctx.sleep`
and `ctx.sleep_until` (parking.py), and `ctx.recv` (mailbox.py).

Ordinary steps are counted and nothing more: a phase interrupted midway is
redone from its start, which is cheap for them. Durable steps and effects
write their own records, because recomputing them is costly or doing them
twice is wrong.

Threads. `ctx.step` and `ctx.effect` may be called from several threads at
once (a `ThreadPoolExecutor` inside the phase): each record is linked into
the run's history under the ledger's lock, and a name called from a worker
thread gets no implicit numbering (stepcalls.py). `ctx.map` is the common
case done for you. Async phases get `AsyncPhaseContext` (asynccontext.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from .. import _json
from ..authoring.retry import NO_RETRY, Attempt, RetryPolicy
from ..errors import UsageError
from ..ids import validate_name
from ..waits import seconds_arg
from .contextbase import PhaseContextBase
from .ledger import Pending
from .parking import Parking, after_failure, epoch_of
from .stepcalls import check_effect_options, is_async_callable, refuse_coroutine, rehydrate, returns
from .stopping import StopRequest

if TYPE_CHECKING:
    from ..authoring.reconcile import Reconciled
    from .ledger import EffectLedger
    from .mailbox import Mailbox
    from .progress import Progress
    from .steplog import StepLog

T = TypeVar("T")
R = TypeVar("R")
Item = TypeVar("Item")

__all__ = ["PhaseContext"]


def _async_refused(kind: str, name: str, fn: Any) -> UsageError:
    what = getattr(fn, "__qualname__", None) or type(fn).__name__
    return UsageError(
        f"{kind} {name!r}: {what} is async, and a sync phase cannot await it: declare the phase `async def` "
        "(it then gets an AsyncPhaseContext whose step and effect are awaited)"
    )


class PhaseContext(PhaseContextBase):
    """The handle a sync phase uses to run steps and effects."""

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
        stop: StopRequest | None = None,
        parking: Parking | None = None,
        mailbox: Mailbox | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Made by the runner for each execution of a phase; a phase only uses it.

        Args:
            run_id: The run's id.
            phase: The phase's name.
            inputs: A fresh copy of the run's inputs.
            missing: Needed outputs that are lost and accepted as gaps.
            steps: The run's durable-step log.
            effects: The run's effect ledger.
            attempts: Where failed attempts of retried steps are recorded.
            stop: The request that stops the run at its next step.
            parking: What the run knows of its waits (answers, a retry it parked for).
            mailbox: The run's messages, as `recv` receives them.
            progress: Where the run's progress reports go (None: kept nowhere).
        """
        super().__init__(
            run_id,
            phase,
            inputs,
            missing,
            steps=steps,
            effects=effects,
            attempts=attempts,
            stop=stop,
            parking=parking,
            mailbox=mailbox,
            here=threading.get_ident,
            progress=progress,
        )

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
        """Run one step: `fn(*args, **kwargs)`.

        Args:
            name: the step's name; a durable step's result is saved under it
                (a second call of the same name in the phase is `name#2`).
            fn: a plain function (an `async def` one is refused: see `AsyncPhaseContext`).
            *args: passed to `fn`.
            durable: save the result when it completes and return it from the
                store on a replay of this phase instead of calling `fn`.
            retries: call `fn` again, up to this many more times, when it raises one of `retry_on`.
            backoff: seconds before the first retry, doubled before each next one (with jitter).
            retry_on: the exceptions that are retried.
            **kwargs: passed to `fn`.

        Returns:
            What `fn` returned (for a durable step, as the store gives it back,
            rebuilt as `fn`'s return annotation declares).

        Raises:
            UsageError: `fn` is async, returned a coroutine, or its result
                cannot be stored; or the name is reused across threads.
            Interrupted: a stop was requested (the run stops here, resumable).
        """
        calls = self._calls
        calls.check_stop()
        validate_name("step", name)
        if is_async_callable(fn):
            raise _async_refused("step", name, fn)
        policy = NO_RETRY if not retries else RetryPolicy.of(f"step {name!r}", retries, backoff, retry_on)
        if not durable:
            result = self._call(name, policy, fn, args, kwargs)
            refuse_coroutine(f"step {name!r}", result)
            calls.done(name)
            return result
        key = calls.durable_key(name)
        return cast(T, self._durable(key, name, policy, fn, args, kwargs))

    def _durable(
        self,
        key: str,
        name: str,
        policy: RetryPolicy,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        annotation = returns(fn)
        found, value = self._steps.read(self.phase, key, home=self._calls.at_home(), fn=fn)
        if not found:
            try:
                result = self._call(name, policy, fn, args, kwargs)
            except Exception as exc:
                self._steps.failed(self.phase, key, exc)
                raise
            refuse_coroutine(f"step {name!r}", result)
            text = _json.dumps(result)
            self._steps.save(self.phase, key, text)
            value = _json.loads(text)
        self._calls.done(key)
        return rehydrate(annotation, value)

    def _call(
        self, name: str, policy: RetryPolicy, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> T:
        attempt = 1
        resumed = self._parking.resumed_retry(self.phase, name) if self._parking is not None else None
        if resumed is not None:
            # A retry this step parked for (`RetryLater`): its next attempt, once due.
            attempt = resumed[0] + 1
            self._calls.wait(resumed[1])
        while True:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                wait = after_failure(self._parking, self.phase, name, policy, exc, attempt, self._attempts)
                if wait is None:
                    raise
            self._calls.wait(wait)
            attempt += 1

    def map(
        self,
        name: str,
        fn: Callable[[Item], R],
        items: Iterable[Item],
        /,
        *,
        durable: bool = False,
        limit: int = 8,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    ) -> list[R]:
        """Run `fn(item)` for each item on up to `limit` threads; the results in order.

        Item `i` is the step `name:i` (a second `map` of the same name in the
        phase is `name#2:i`), so with `durable=True` a replay returns every
        finished item from the store and calls `fn` only for the others.
        When an item raises, no further item is started; the ones in flight
        finish (their results are saved), then the first error is raised.

        Args:
            name: the steps' common name.
            fn: a plain function of one item.
            items: what to call it on.
            durable: save each item's result (see `step`).
            limit: at most this many calls at once (at least 1).
            retries: retries per item (see `step`).
            backoff: see `step`.
            retry_on: see `step`.

        Returns:
            `fn`'s results, in the order of `items`.

        Raises:
            UsageError: `fn` is async, `limit` is below 1, or a result cannot be stored.
            Interrupted: a stop was requested.
        """
        calls = self._calls
        calls.check_stop()
        validate_name("map", name)
        if is_async_callable(fn):
            raise _async_refused("map", name, fn)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise UsageError(f"map {name!r}: limit must be a whole number of at least 1, not {limit!r}")
        base = calls.durable_key(name)
        todo = list(items)
        if durable:
            calls.claim(f"map {name!r}", [f"{base}:{i}" for i in range(len(todo))])
        policy = NO_RETRY if not retries else RetryPolicy.of(f"map {name!r}", retries, backoff, retry_on)

        def one(i: int, item: Any) -> Any:
            calls.check_stop()
            if durable:
                return self._durable(f"{base}:{i}", f"{name}:{i}", policy, fn, (item,), {})
            result = self._call(f"{name}:{i}", policy, fn, (item,), {})
            refuse_coroutine(f"map {name!r}", result)
            calls.done(f"{name}:{i}")
            return result

        results: list[Any] = [None] * len(todo)
        with ThreadPoolExecutor(min(limit, max(len(todo), 1)), thread_name_prefix=f"phasegate-map-{name}") as pool:
            pending: dict[Future[Any], int] = {}
            nxt = 0
            failed: BaseException | None = None
            while nxt < len(todo) or pending:
                while failed is None and nxt < len(todo) and len(pending) < limit:
                    pending[pool.submit(one, nxt, todo[nxt])] = nxt
                    nxt += 1
                finished, _ = wait(pending, return_when=FIRST_EXCEPTION)
                for f in finished:
                    i = pending.pop(f)
                    exc = f.exception()
                    if exc is None:
                        results[i] = f.result()
                    elif failed is None:
                        failed = exc
                if failed is not None and nxt < len(todo):
                    nxt = len(todo)  # start nothing more; let the ones in flight finish
            if failed is not None:
                raise failed
        return cast(list[R], results)

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
        `PHASEGATE_EFFECT_FLUSH_MS` (completions.py). Safe to call from several
        threads at once (each name once per phase).

        Args:
            name: the effect's name, unique in its phase; its key is `RUN/PHASE/NAME`.
            fn: called as `fn(key)` (or `fn()`; with a `fence` parameter it gets a `FenceToken`).
                An `async def` function is refused before anything is recorded.
            idempotent: the target deduplicates by key, so an interrupted call may simply be repeated.
            atomic: call `fn(key, session)` with a database session inside the
                transaction that records completion: both commit or neither.
            reconcile: `reconcile(key)` asks the outside system whether the action
                happened, when a resume finds the effect in doubt; it answers with
                `Reconciled.done(result)`, `Reconciled.not_done()` or `Reconciled.unknown(why)`.
            reconcile_timeout: seconds the reconcile hook may take.
            redo_on_rewind: (idempotent effects only) a new key when a rewind or
                reset re-opens the phase, so the target acts again; by default a
                completed effect is never repeated.

        Returns:
            What `fn` returned, or what it returned before (as stored).

        Raises:
            UsageError: `fn` is async or returned a coroutine (the intent is
                then withdrawn: nothing was attempted), a name is used twice,
                or an option is out of range.
            Stop: the effect is in doubt and nothing can say whether it happened.
            Interrupted: a stop was requested.
        """
        calls = self._calls
        calls.check_stop()
        validate_name("effect", name)
        check_effect_options(
            name, idempotent=idempotent, redo_on_rewind=redo_on_rewind, reconcile_timeout=reconcile_timeout
        )
        if is_async_callable(fn):
            raise _async_refused("effect", name, fn)
        calls.effect_name(name)
        self._steps.check_effect(self.phase, name, home=calls.at_home())
        if atomic:
            value = self._effects.perform(self.phase, name, fn, idempotent=idempotent, atomic=True)
        else:
            value = self._unatomic(name, fn, idempotent, reconcile, reconcile_timeout, redo_on_rewind)
        calls.done(name)
        return cast(T, rehydrate(returns(fn), value))

    def _unatomic(
        self,
        name: str,
        fn: Callable[..., Any],
        idempotent: bool,
        reconcile: Callable[[str], Reconciled] | None,
        reconcile_timeout: float,
        redo_on_rewind: bool,
    ) -> Any:
        began = self._effects.begin(
            self.phase,
            name,
            idempotent=idempotent,
            reconcile=reconcile,
            reconcile_timeout=reconcile_timeout,
            redo_on_rewind=redo_on_rewind,
        )
        if not isinstance(began, Pending):
            return began.value
        result = self._effects.call(fn, began)
        try:
            refuse_coroutine(f"effect {name!r}", result)
        except UsageError:
            self._effects.retract(began)
            raise
        return self._effects.finish(began, result)

    def commit(self) -> None:
        """Commit now the completions of effects that finished, instead of with
        the run's next transaction (completions.py): one commit.

        For a caller that hands an effect's result on at once to something
        phasegate does not record (an agent's model, another process), so that
        a process killed right after leaves no effect in doubt.
        """
        self._effects.completions.flush()

    # The answer's type follows the schema's (issue 41): `ask(..., bool)` is a
    # bool to the type checker too. A type form that is no class (a
    # `Literal`, an `Annotated`) and no schema at all (any JSON value: the
    # operator's data) are `Any`.
    @overload
    def ask(
        self, name: str, prompt: str, schema: None = None, *, payload: Any = None, timeout: float | None = None
    ) -> Any: ...
    @overload
    def ask(
        self, name: str, prompt: str, schema: type[T], *, payload: Any = None, timeout: float | None = None
    ) -> T: ...
    @overload
    def ask(
        self, name: str, prompt: str, schema: object, *, payload: Any = None, timeout: float | None = None
    ) -> Any: ...
    def ask(
        self,
        name: str,
        prompt: str,
        schema: object = None,
        *,
        payload: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """Ask a person, and wait for the answer without holding a process.

        The first call records the question and parks the run (status
        `waiting`, its lease released). An operator answers with `phasegate
        decide RUN answer --question NAME --value JSON` (or
        `Engine.decide(run_id, "answer", ...)`), checked against `schema`;
        a worker then resumes the run, the phase runs again from its start
        (its durable steps from the store), and this call returns the answer.

        Args:
            name: the question's name, unique in the phase: how an operator answers it.
            prompt: what the person reads.
            schema: what the answer must be: a pydantic model or a type
                (`bool`, `int`, a `Literal`, an `Enum`...); None for any JSON value.
            payload: JSON shown with the question (the tool call to approve).
            timeout: seconds to wait for an answer; past it, `NoAnswer` is raised here.

        Returns:
            The answer, rebuilt as `schema`.

        Raises:
            NoAnswer: `timeout` passed with no answer.
            UsageError: a bad argument (a payload that is not JSON, a schema pydantic cannot describe).
            Interrupted: a stop was requested.
        """
        return self._parked().ask(self._steps, self._calls, name, prompt, schema, payload, timeout)

    def recv(self, topic: str, schema: Any = None, timeout: float | None = None) -> Any:
        """Receive the next message sent into the run on `topic` (oldest first,
        each exactly once), waiting for one without holding a process.

        A message sent before the call waits in the run's queue. With none,
        the phase looks for one in its process for up to
        `PHASEGATE_PARK_SECONDS` (30) from the first call, then the run parks
        (status `waiting`, kind `message`) and a worker resumes it when one is
        sent (`phasegate send RUN TOPIC --value JSON --reason TEXT`). The
        message received is saved as a durable step: a replay gets the same one.

        Args:
            topic: the topic's name: what a sender names (`phasegate send RUN TOPIC`).
            schema: what the value must be: a pydantic model or a type (`bool`,
                `int`, a `Literal`...); None for any JSON value. Its JSON Schema
                is recorded with the wait, and `send` refuses a value that does
                not meet it.
            timeout: seconds to wait, from the first call; past it, `NoAnswer` is raised here.

        Returns:
            The message's value, rebuilt as `schema`.

        Raises:
            NoAnswer: `timeout` passed with no message.
            UsageError: a bad argument (a topic name, a timeout, a schema pydantic cannot describe).
            Interrupted: a stop was requested.
        """
        receiving = self._receiving(topic, schema, timeout)
        while True:
            got = receiving.poll()
            if got.done:
                return got.value
            self._calls.wait(got.wait)

    def sleep(self, name: str, seconds: float) -> None:
        """Wait `seconds`, durably: the wake time is recorded on the first
        call, so a kill and a resume never restart the wait.

        A wait shorter than `PHASEGATE_PARK_SECONDS` (30) sleeps here, holding
        the lease; a longer one parks the run (status `waiting`) and a worker
        resumes it when due.

        Args:
            name: the timer's name (a second call of the name in the phase is `name#2`).
            seconds: how long, from the first call.

        Raises:
            UsageError: not a number of seconds >= 0.
            Interrupted: a stop was requested.
        """
        wait = seconds_arg(f"sleep {name!r}", seconds)
        self._calls.wait(self._parked().timer(self._steps, self._calls, name, lambda now: now + wait))

    def sleep_until(self, name: str, when: datetime | float) -> None:
        """`sleep` until a moment: an aware `datetime`, or UNIX seconds.

        Args:
            name: the timer's name.
            when: the moment to wake at.

        Raises:
            UsageError: a naive datetime, or not a time.
            Interrupted: a stop was requested.
        """
        at = epoch_of(f"sleep_until {name!r}", when)
        self._calls.wait(self._parked().timer(self._steps, self._calls, name, lambda _now: at))
