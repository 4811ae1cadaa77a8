"""What an async phase function sees: `AsyncPhaseContext`, whose `step`,
`effect` and `map` are awaited.

Every guarantee of a sync phase holds. A durable step's result is committed
when it completes; an effect's intent is committed before its function is
called and its completion with the run's next commit. Those commits run on
the event loop's thread, one at a time: the loop waits for at most one
commit (milliseconds), never for the start sequence, which runs in the
runner's own thread (asyncdriver.py). The intents of effects begun in the
same round of the loop (a gather's) share one commit (intentbatch.py).

The function given to `step`, `effect` or `map` may be `async def`
(awaited on the loop) or plain (run in a worker thread, so that concurrent
steps overlap). Concurrency comes from `asyncio.gather` or a `TaskGroup`
over `ctx.step` and `ctx.effect` calls, or from `ctx.map`; a name called
from a task other than the phase's own gets no implicit numbering
(stepcalls.py).

Stopping. When the run is asked to stop, the phase's task is cancelled at
its next await; an effect whose function is in flight is let finish and
recorded first (cut off, it would be in doubt), and the stop is then raised.
A cancellation that is not a stop (the author's own `asyncio.timeout`)
cancels an effect in flight like any other await: it may then be in doubt,
as it truly is.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from .. import _json
from ..authoring.retry import NO_RETRY, Attempt, RetryPolicy
from ..errors import UsageError
from ..ids import validate_name
from ..waits import seconds_arg
from .contextbase import PhaseContextBase
from .intentbatch import IntentBatch
from .ledger import Intent, Pending, Saved
from .parking import Parking, after_failure, epoch_of
from .stepcalls import check_effect_options, is_async_callable, rehydrate, returns
from .stopping import Interrupted, StopRequest

if TYPE_CHECKING:
    from ..authoring.reconcile import Reconciled
    from .ledger import EffectLedger
    from .mailbox import Mailbox
    from .progress import Progress
    from .steplog import StepLog

#: Where plain functions of async steps run. Wide: they are mostly waiting on
#: I/O (a blocking SDK), and the default executor's min(32, cpus + 4)
#: threads would serialise a fan-out of 20 on a two-core machine.
_POOL_SIZE = 64

T = TypeVar("T")
Item = TypeVar("Item")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_POOL_SIZE, thread_name_prefix="phasegate-step")
        return _pool


def _forget_pool() -> None:
    # A forked child has none of its parent's threads: a pool made before the
    # fork would take work and never do it.
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


async def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await _awaited(_submit(fn, *args, **kwargs))


def _submit(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """`fn(*args, **kwargs)` queued for a thread of the pool (in this task's context)."""
    return _threads().submit(contextvars.copy_context().run, fn, *args, **kwargs)


async def _awaited(work: Future[Any]) -> Any:
    result = await asyncio.wrap_future(work)
    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
        result = await result  # a plain function that returned an awaitable: awaited here
    return result


_RUNNING: contextvars.ContextVar[AsyncPhaseContext | None] = contextvars.ContextVar(
    "phasegate_running_phase", default=None
)
"""The async phase whose task (or a task it started) is running here."""


def running_phase() -> AsyncPhaseContext | None:
    """The async phase running in this task, or None outside one.

    Set by the driver for the phase's task; tasks the phase starts (a
    `gather` of tool calls) and threads its steps run in (a copied context)
    inherit it. An adapter that is handed no context (an agent framework's
    hook) finds its phase here.

    Returns:
        The phase's context, or None when no async phase is running in this task.
    """
    return _RUNNING.get()


def _here() -> object:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


class AsyncPhaseContext(PhaseContextBase):
    """The handle an `async def` phase uses to run steps and effects; they are awaited."""

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
            here=_here,
            progress=progress,
        )
        self._inflight: set[asyncio.Task[Any]] = set()
        """Effect calls under way: the phase does not end before they are recorded."""
        self._intents = IntentBatch(effects)
        """Intents asked for in the same round of the loop, committed together."""

    def _adopt(self) -> None:
        """(the driver) Make the calling task the phase's own: implicit numbering is sound in it."""
        self._calls.home = _here()

    # What the step returns, to the type checker: an `async def` function's
    # awaited result, a plain one's return (its arguments are the author's
    # own data: `Any`).
    @overload
    async def step(
        self,
        name: str,
        fn: Callable[..., Awaitable[T]],
        /,
        *args: Any,
        durable: bool = False,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
        **kwargs: Any,
    ) -> T: ...
    @overload
    async def step(
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
    ) -> T: ...
    async def step(
        self,
        name: str,
        fn: Callable[..., Any],
        /,
        *args: Any,
        durable: bool = False,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
        **kwargs: Any,
    ) -> Any:
        """Run one step: `await fn(*args, **kwargs)` for an `async def` function,
        a worker thread for a plain one. The arguments are `PhaseContext.step`'s.

        Args:
            name: the step's name; a durable step's result is saved under it.
            fn: an `async def` function, or a plain one (run in a thread).
            *args: passed to `fn`.
            durable: save the result when it completes; a replay returns it from the store.
            retries: call `fn` again, up to this many more times, when it raises one of `retry_on`.
            backoff: seconds before the first retry, doubled before each next one (with jitter).
            retry_on: the exceptions that are retried.
            **kwargs: passed to `fn`.

        Returns:
            What `fn` returned (for a durable step, as the store gives it back).

        Raises:
            UsageError: the result cannot be stored, or the name is reused across tasks.
            Interrupted: a stop was requested.
        """
        calls = self._calls
        calls.check_stop()
        validate_name("step", name)
        policy = NO_RETRY if not retries else RetryPolicy.of(f"step {name!r}", retries, backoff, retry_on)
        if not durable:
            result = await self._call(name, policy, fn, args, kwargs)
            calls.done(name)
            return result
        return await self._durable(calls.durable_key(name), name, policy, fn, args, kwargs)

    async def _durable(
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
                result = await self._call(name, policy, fn, args, kwargs)
            except Exception as exc:
                self._steps.failed(self.phase, key, exc)
                raise
            text = _json.dumps(result)
            self._steps.save(self.phase, key, text)  # one commit, on the loop's thread
            value = _json.loads(text)
        self._calls.done(key)
        return rehydrate(annotation, value)

    async def _call(
        self, name: str, policy: RetryPolicy, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        attempt = 1
        coro_fn = is_async_callable(fn)
        resumed = self._parking.resumed_retry(self.phase, name) if self._parking is not None else None
        if resumed is not None:
            # A retry this step parked for (`RetryLater`): its next attempt, once due.
            attempt = resumed[0] + 1
            await asyncio.sleep(resumed[1])
        while True:
            try:
                if coro_fn:
                    return await fn(*args, **kwargs)
                return await _in_thread(fn, *args, **kwargs)
            except Exception as exc:
                wait = after_failure(self._parking, self.phase, name, policy, exc, attempt, self._attempts)
                if wait is None:
                    raise
            await asyncio.sleep(wait)
            attempt += 1

    @overload
    async def map(
        self,
        name: str,
        fn: Callable[[Item], Awaitable[T]],
        items: Iterable[Item],
        /,
        *,
        durable: bool = False,
        limit: int = 8,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    ) -> list[T]: ...
    @overload
    async def map(
        self,
        name: str,
        fn: Callable[[Item], T],
        items: Iterable[Item],
        /,
        *,
        durable: bool = False,
        limit: int = 8,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    ) -> list[T]: ...
    async def map(
        self,
        name: str,
        fn: Callable[[Any], Any],
        items: Iterable[Any],
        /,
        *,
        durable: bool = False,
        limit: int = 8,
        retries: int = 0,
        backoff: float = 1.0,
        retry_on: type[BaseException] | tuple[type[BaseException], ...] = (Exception,),
    ) -> list[Any]:
        """`fn(item)` for each item, at most `limit` at once; the results in order.

        Item `i` is the step `name:i` (a second `map` of the same name in the
        phase is `name#2:i`). When an item raises, the others are cancelled
        (the durable ones already finished stay saved) and the error is raised.

        Args:
            name: the steps' common name.
            fn: an `async def` function of one item, or a plain one (threads).
            items: what to call it on.
            durable: save each item's result.
            limit: at most this many calls at once (at least 1).
            retries: retries per item (see `step`).
            backoff: see `step`.
            retry_on: see `step`.

        Returns:
            `fn`'s results, in the order of `items`.

        Raises:
            UsageError: `limit` is below 1, or a result cannot be stored.
            Interrupted: a stop was requested.
        """
        calls = self._calls
        calls.check_stop()
        validate_name("map", name)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise UsageError(f"map {name!r}: limit must be a whole number of at least 1, not {limit!r}")
        base = calls.durable_key(name)
        policy = NO_RETRY if not retries else RetryPolicy.of(f"map {name!r}", retries, backoff, retry_on)
        gate = asyncio.Semaphore(limit)
        todo = list(items)
        if durable:
            calls.claim(f"map {name!r}", [f"{base}:{i}" for i in range(len(todo))])

        async def one(i: int, item: Any) -> Any:
            async with gate:
                calls.check_stop()
                if durable:
                    return await self._durable(f"{base}:{i}", f"{name}:{i}", policy, fn, (item,), {})
                result = await self._call(f"{name}:{i}", policy, fn, (item,), {})
                calls.done(f"{name}:{i}")
                return result

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(i, item)) for i, item in enumerate(todo)]
        return [t.result() for t in tasks]

    @overload
    async def effect(
        self,
        name: str,
        fn: Callable[..., Awaitable[T]],
        /,
        *,
        idempotent: bool = False,
        atomic: bool = False,
        reconcile: Callable[[str], Reconciled] | None = None,
        reconcile_timeout: float = 30.0,
        redo_on_rewind: bool = False,
    ) -> T: ...
    @overload
    async def effect(
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
    ) -> T: ...
    async def effect(
        self,
        name: str,
        fn: Callable[..., Any],
        /,
        *,
        idempotent: bool = False,
        atomic: bool = False,
        reconcile: Callable[[str], Reconciled] | None = None,
        reconcile_timeout: float = 30.0,
        redo_on_rewind: bool = False,
    ) -> Any:
        """Do something outside the run that must not happen twice; awaited.
        The arguments are `PhaseContext.effect`'s.

        Args:
            name: the effect's name, unique in its phase.
            fn: `async def` (awaited) or plain (run in a thread), called as `fn(key)`.
                An atomic effect's function gets a sync session and must be plain.
            idempotent: the target deduplicates by key.
            atomic: `fn(key, session)` inside the transaction that records it.
            reconcile: asked whether an in-doubt effect happened (a plain function).
            reconcile_timeout: seconds the reconcile hook may take.
            redo_on_rewind: (idempotent effects only) a new key when a rewind re-opens the phase.

        Returns:
            What `fn` returned, or what it returned before (as stored).

        Raises:
            UsageError: an option is out of range, a name is used twice, or an
                atomic effect's function is async.
            Stop: the effect is in doubt and nothing can say whether it happened.
            Interrupted: a stop was requested.
        """
        calls = self._calls
        calls.check_stop()
        validate_name("effect", name)
        check_effect_options(
            name, idempotent=idempotent, redo_on_rewind=redo_on_rewind, reconcile_timeout=reconcile_timeout
        )
        if atomic and is_async_callable(fn):
            raise UsageError(
                f"effect {name!r}: an atomic effect's function runs inside the store's transaction with a "
                "sync session; it cannot be async"
            )
        calls.effect_name(name)
        self._steps.check_effect(self.phase, name, home=calls.at_home())
        if atomic:
            value = await _in_thread(self._effects.perform, self.phase, name, fn, idempotent=idempotent, atomic=True)
            calls.done(name)
        else:
            value = await self._unatomic(name, fn, idempotent, reconcile, reconcile_timeout, redo_on_rewind)
        return rehydrate(returns(fn), value)

    async def _unatomic(
        self,
        name: str,
        fn: Callable[..., Any],
        idempotent: bool,
        reconcile: Callable[[str], Reconciled] | None,
        reconcile_timeout: float,
        redo_on_rewind: bool,
    ) -> Any:
        begin = functools.partial(
            self._effects.begin,
            self.phase,
            name,
            idempotent=idempotent,
            reconcile=reconcile,
            reconcile_timeout=reconcile_timeout,
            redo_on_rewind=redo_on_rewind,
        )
        # A reconcile hook is a plain function that may take its whole
        # timeout: asked from a thread. Otherwise one commit, on the loop,
        # shared by every effect the phase's tasks begin in the same round
        # of the loop (intentbatch.py), unless another thread holds the
        # ledger (another effect's hook, an atomic effect): the loop must
        # not wait for it.
        began: Pending | Saved | None = None
        if reconcile is None:
            began = await self._intents.begin(Intent(self.phase, name, idempotent, redo_on_rewind))
        if began is None:
            began = await self._begin_in_thread(begin)
            if isinstance(began, Pending) and self._calls.closed:
                # Its thread began it after the phase ended (a task the phase
                # left running, under Engine.arun; a retry may be running the
                # phase again): not called, as a step would not be; withdrawn.
                self._effects.retract(began)
                raise Interrupted(f"phase {self.phase} has ended; effect {name!r} begun after it is not called")
        if not isinstance(began, Pending):
            self._calls.done(name)
            return began.value
        call = asyncio.ensure_future(self._perform(name, fn, began))
        self._inflight.add(call)
        call.add_done_callback(self._inflight.discard)
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            if self._stop is None or self._stop.why is None:
                call.cancel()  # not a stop: cancelled like any await (it may be in doubt, as it is)
                raise
            # A stop: the call in flight finishes and is recorded, then the stop goes on.
            while not call.done():
                try:
                    await asyncio.shield(call)
                except asyncio.CancelledError:
                    continue
                except BaseException:  # noqa: BLE001 - the effect's own failure: the stop still wins
                    break
            raise

    async def _begin_in_thread(self, begin: Callable[[], Pending | Saved]) -> Pending | Saved:
        """`begin` in a thread. Cancelled meanwhile, the thread still commits
        the intent: it is waited for and withdrawn (`retract`), since the
        function will not be called, so no operator is asked about it."""
        work = _submit(begin)
        try:
            return cast("Pending | Saved", await _awaited(work))
        except asyncio.CancelledError:
            if not work.cancel():  # already begun in its thread
                while not work.done():
                    try:
                        await asyncio.shield(asyncio.wrap_future(work))
                    except asyncio.CancelledError:
                        continue
                    except BaseException:  # noqa: BLE001 - no intent then: nothing to withdraw
                        break
                if not work.cancelled() and work.exception() is None and isinstance(work.result(), Pending):
                    self._effects.retract(work.result())
            raise

    async def _perform(self, name: str, fn: Callable[..., Any], began: Pending) -> Any:
        """The effect's call and its completion, in a task of its own, so
        that a stop's cancellation of the phase does not cut it off."""
        if is_async_callable(fn):
            result = await self._effects.call(fn, began)
        else:
            work = _submit(self._effects.call, fn, began)
            try:
                result = await _awaited(work)
            except asyncio.CancelledError:
                if work.cancel():
                    # Cancelled before a thread took it up: the function never
                    # ran, so the effect is not in doubt (it may simply be called).
                    self._effects.retract(began)
                raise
        value = self._effects.finish(began, result)
        self._calls.done(name)
        return value

    async def commit(self) -> None:
        """Commit now the completions of effects that finished, instead of with
        the run's next transaction (completions.py): one commit, on the loop.

        For a caller that hands an effect's result on at once to something
        phasegate does not record (an agent's model), so that a process killed
        right after leaves no effect in doubt.
        """
        self._effects.completions.flush()

    async def _settle(self) -> None:
        """(the driver) Wait for effect calls still in flight, so each is recorded before the phase ends."""
        while self._inflight:
            await asyncio.wait(set(self._inflight))

    # The answer's type follows the schema's (issue 41): `ask(..., bool)` is a
    # bool to the type checker too. A type form that is no class (a
    # `Literal`, an `Annotated`) and no schema at all (any JSON value: the
    # operator's data) are `Any`.
    @overload
    async def ask(
        self, name: str, prompt: str, schema: None = None, *, payload: Any = None, timeout: float | None = None
    ) -> Any: ...
    @overload
    async def ask(
        self, name: str, prompt: str, schema: type[T], *, payload: Any = None, timeout: float | None = None
    ) -> T: ...
    @overload
    async def ask(
        self, name: str, prompt: str, schema: object, *, payload: Any = None, timeout: float | None = None
    ) -> Any: ...
    async def ask(
        self,
        name: str,
        prompt: str,
        schema: object = None,
        *,
        payload: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """`PhaseContext.ask`, awaited: ask a person and park until answered.

        Args:
            name: the question's name, unique in the phase.
            prompt: what the person reads.
            schema: what the answer must be (a pydantic model or a type); None for any JSON value.
            payload: JSON shown with the question.
            timeout: seconds to wait; past it, `NoAnswer` is raised here.

        Returns:
            The answer, rebuilt as `schema`.

        Raises:
            NoAnswer: `timeout` passed with no answer.
            UsageError: a bad argument.
            Interrupted: a stop was requested.
        """
        return self._parked().ask(self._steps, self._calls, name, prompt, schema, payload, timeout)

    async def recv(self, topic: str, schema: Any = None, timeout: float | None = None) -> Any:
        """`PhaseContext.recv`, awaited: the next message on `topic`, oldest
        first and exactly once; parks the run when none comes in time.

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
            await asyncio.sleep(got.wait)

    async def sleep(self, name: str, seconds: float) -> None:
        """`PhaseContext.sleep`, awaited: a durable wait (parks when long).

        Args:
            name: the timer's name.
            seconds: how long, from the first call.

        Raises:
            UsageError: not a number of seconds >= 0.
            Interrupted: a stop was requested.
        """
        wait = seconds_arg(f"sleep {name!r}", seconds)
        left = self._parked().timer(self._steps, self._calls, name, lambda now: now + wait)
        if left > 0:
            await asyncio.sleep(left)

    async def sleep_until(self, name: str, when: datetime | float) -> None:
        """`PhaseContext.sleep_until`, awaited.

        Args:
            name: the timer's name.
            when: an aware `datetime`, or UNIX seconds.

        Raises:
            UsageError: a naive datetime, or not a time.
            Interrupted: a stop was requested.
        """
        at = epoch_of(f"sleep_until {name!r}", when)
        left = self._parked().timer(self._steps, self._calls, name, lambda _now: at)
        if left > 0:
            await asyncio.sleep(left)
