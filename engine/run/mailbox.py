"""Where a phase receives messages: `ctx.recv(topic, schema=None, timeout=None)`.

A message is sent into a run from outside it (`phasegate send`,
`Engine.send`: decide/sending.py) and waits in the run's queue (the store's
messages table) until a phase receives it. Receiving is a durable step,
"@recv:TOPIC" ("@recv:TOPIC#2" for the second in the phase): the message's
id, value and sender are saved as its result in the transaction that marks
the message delivered (a hot statement that takes a queued message only),
so a message is taken exactly once, and a replay of the phase is handed the
same one from its step. Messages on a topic are taken oldest first.

When the queue is empty the first call records when the wait began and its
deadline ("@recvwait:TOPIC"), so neither restarts across a kill. The phase
then looks at the queue in its process, holding the lease, for up to
`park_seconds` (`PHASEGATE_PARK_SECONDS`) from that start, as a short
`ctx.sleep` sleeps; past it the run parks (status `waiting`, kind
`message`), and `send` wakes it through the worker (`wakes`, the one rule of
"does this message wake this run", asked by `send` and by the run's end).
A deadline passed with no message is saved as the step's result and raises
`NoAnswer`, as `ctx.ask` does, and a replay raises it again.

The topic's JSON Schema goes with the wait (the run row's `waiting_json`)
and with each received message's step, which is how `send` knows the type a
value must have: see decide/sending.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._stop import Stop
from ..errors import UsageError
from ..history import trail
from ..ids import validate_name
from ..outcome import BlockReason
from ..states import BlockKind, WaitKind
from ..store.store import Store
from ..waits import NoAnswer, seconds_arg
from .lease import Fence
from .parking import Park, Refused, json_schema, typed_answer
from .stepcalls import StepCalls
from .steplog import StepLog

RECV, RECV_WAIT = "@recv:", "@recvwait:"

#: How often a phase waiting in its process looks at its queue: a message
#: sent a moment after the phase asked for it reaches it within this.
POLL_SECONDS = 0.2


def wakes(waiting: Mapping[str, Any] | None, topic: str) -> bool:
    """Whether a message on `topic` is what a run waiting for `waiting` waits for.

    Args:
        waiting: The run's wait (its row's `waiting_json`, parsed), or None.
        topic: The message's topic.

    Returns:
        True when the run is parked on a `ctx.recv` of that topic.
    """
    return waiting is not None and waiting.get("kind") == WaitKind.MESSAGE.value and waiting.get("topic") == topic


def queued_for(store: Store, conn: Any, run_id: str, waiting_json: str | None) -> bool:
    """Whether a message the run's wait (`waiting_json`, as its row is about to
    record it) waits for is in its queue already: asked in the transaction
    that parks the run, with its row locked, so a message sent while the run
    was deciding to park is seen here, or its `send` sees the run waiting.

    Args:
        store: The store.
        conn: The parking transaction (the run's row locked).
        run_id: The run.
        waiting_json: What it is to wait for.

    Returns:
        True when it should be woken at once.
    """
    if not waiting_json:
        return False
    try:
        waiting = _json.loads(waiting_json)
    except ValueError:
        return False
    if not isinstance(waiting, dict) or not wakes(waiting, str(waiting.get("topic"))):
        return False
    return store.messages.has_queued(conn, run_id, str(waiting["topic"]))


def check_topic(topic: Any) -> str:
    """A topic's name, checked as a step's name is (no '@' first, nothing
    invisible), and without '#' (the second call of a topic is "TOPIC#2").

    Raises:
        UsageError: not such a name.
    """
    validate_name("topic", topic)
    if "#" in topic:
        raise UsageError(f"topic {topic!r}: a topic's name has no '#'")
    return str(topic)


@dataclass(frozen=True)
class Got:
    """One look at the queue (`Receiving.poll`): the value, or how long to wait before the next look."""

    done: bool
    """Whether a message was received (or a saved one handed back)."""
    value: Any = None
    """What `recv` returns, when done."""
    wait: float = 0.0
    """Seconds to wait in the process before looking again, when not done."""


class Mailbox:
    """A run's messages, as one execution of it receives them (made by the runner)."""

    def __init__(self, store: Store, fence: Fence, clock: Callable[[], float]) -> None:
        self._store = store
        self._fence = fence
        self._clock = clock

    def begin(
        self, steps: StepLog, calls: StepCalls, topic: str, schema: Any, timeout: float | None, park_seconds: float
    ) -> Receiving:
        """Start one `ctx.recv` call: its key is taken now, once.

        Raises:
            UsageError: a bad topic, timeout or schema.
            Interrupted: a stop was requested.
        """
        calls.check_stop()
        check_topic(topic)
        if timeout is not None:
            timeout = seconds_arg(f"recv {topic!r}: timeout", timeout)
        described = json_schema(f"recv {topic!r}", schema)
        key = calls.durable_key(RECV + topic)
        return Receiving(self, steps, calls, topic, schema, described, timeout, park_seconds, key)

    # -- the store, for `Receiving` ---------------------------------------------

    def _oldest(self, topic: str) -> Any | None:
        """The oldest message on `topic` still queued for the run, or None."""
        with self._store.read() as conn:
            found = self._store.messages.queued(conn, self._fence.run_id, topic, limit=1)
        return found[0] if found else None

    def _refuse(self, row: Any, phase: str, why: str) -> None:
        with self._store.hot_tx() as tx:
            tx.run(
                "message_refused",
                {"id": int(row.id), "run_id": self._fence.run_id, "at": self._clock(), "phase": phase, "why": why},
            )
            self._fence.check_hot(tx)

    def _vouched(self, row: Any) -> bool:
        return trail.message_vouched(row, self._store.seal_key)


class Receiving:
    """One `ctx.recv` call, looked at until it has its message, times out or parks."""

    def __init__(
        self,
        box: Mailbox,
        steps: StepLog,
        calls: StepCalls,
        topic: str,
        schema: Any,
        described: dict[str, Any] | None,
        timeout: float | None,
        park_seconds: float,
        key: str,
    ) -> None:
        self._box = box
        self._steps = steps
        self._calls = calls
        self._topic = topic
        self._schema = schema
        self._described = described
        self._timeout = timeout
        self._park_seconds = park_seconds
        self.key = key
        """The step's key ("@recv:TOPIC", "@recv:TOPIC#2"...)."""
        self._wait_key = RECV_WAIT + key[len(RECV) :]
        self._first = True
        self._wait: dict[str, Any] | None = None
        """When the wait began and its deadline, once read or recorded (read once an execution)."""

    def poll(self) -> Got:
        """Look once: a saved result, a queued message, the deadline, or the time to park.

        Returns:
            The value (done), or the seconds to wait before the next look.

        Raises:
            NoAnswer: the deadline passed with no message (saved: a replay raises it again).
            Park: nothing came within `park_seconds` of the wait's start: the run parks.
            Stop: a queued message's seal does not vouch for it (the run blocks, integrity).
            Interrupted: a stop was requested.
        """
        calls, steps, phase = self._calls, self._steps, self._calls.phase
        calls.check_stop()
        if self._first:
            self._first = False
            found, saved = steps.read(phase, self.key, home=calls.at_home())
            if found:
                return self._replayed(saved)
        # One at a time, oldest first: one the phase's type refuses is marked
        # so, and the next look finds the one after it.
        while (row := self._box._oldest(self._topic)) is not None:
            if not self._box._vouched(row):
                raise Stop(
                    BlockReason(
                        BlockKind.INTEGRITY,
                        f"message {int(row.id)} on topic {self._topic!r} does not match its seal; it was not delivered",
                        {"what": "message", "message": int(row.id)},
                    )
                )
            got = self._take(row)
            if got is not None:
                return got
        return self._empty()

    def _replayed(self, saved: Any) -> Got:
        self._calls.done(self.key)
        if isinstance(saved, dict) and saved.get("timeout"):
            raise NoAnswer(self._topic, _float(saved.get("deadline")), topic=True)
        value = saved.get("value") if isinstance(saved, dict) else None
        return Got(True, self._typed(value, refuse=False))

    def _take(self, row: Any) -> Got | None:
        """Receive `row` (None: the phase's type refused it, kept as refused)."""
        phase = self._calls.phase
        value = _json.loads(row.value_json)
        typed = self._typed(value, refuse=True)
        if isinstance(typed, Refused):
            self._box._refuse(row, phase, f"refused by {phase}'s ctx.recv: {typed.why}")
            return None
        record = {
            "message": int(row.id),
            "topic": self._topic,
            "value": value,
            "by": str(row.operator),
            "account": str(row.account),
            "sent_at": float(row.at),
            "schema": self._described,
        }
        taken = {
            "id": int(row.id),
            "run_id": self._box._fence.run_id,
            "at": self._box._clock(),
            "phase": phase,
            "step_key": self.key,
        }
        self._steps.save(phase, self.key, _json.dumps(record), also=[("message_taken", taken)])
        self._calls.done(self.key)
        return Got(True, typed)

    def _typed(self, value: Any, *, refuse: bool) -> Any:
        if self._schema is None:
            return value
        typed = typed_answer(self._schema, value)
        if isinstance(typed, Refused) and not refuse:
            # A saved message its phase's type now refuses: the code changed
            # since it was received; the phase is told, not handed it raw.
            raise UsageError(f"recv {self._topic!r}: the message received before no longer fits: {typed.why}")
        return typed

    def _empty(self) -> Got:
        calls, steps, phase = self._calls, self._steps, self._calls.phase
        now = self._box._clock()
        wait = self._wait
        if wait is None:
            found, wait = steps.read(phase, self._wait_key)
            if not found or not isinstance(wait, dict):
                deadline = now + self._timeout if self._timeout is not None else None
                wait = {"since": now, "deadline": deadline, "schema": self._described}
                steps.save(phase, self._wait_key, _json.dumps(wait))
            self._wait = wait
        since = _float(wait.get("since")) or now
        deadline = _float(wait.get("deadline"))
        if deadline is not None and now >= deadline:
            # Recorded before it is raised: a message sent later cannot
            # change what a replay of this phase is told.
            steps.save(phase, self.key, _json.dumps({"timeout": True, "deadline": deadline, "at": now}))
            calls.done(self.key)
            raise NoAnswer(self._topic, deadline, topic=True)
        left = since + self._park_seconds - now
        if left <= 0:
            waiting = {
                "kind": WaitKind.MESSAGE.value,
                "phase": phase,
                "topic": self._topic,
                "schema": self._described,
                "since": since,
                "until": deadline,
            }
            raise Park(waiting, deadline)
        return Got(False, wait=min(POLL_SECONDS, left, *(() if deadline is None else (deadline - now,))))


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
