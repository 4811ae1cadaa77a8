"""Where a durable step's result is recorded, and read back on a replay.

Ordinary steps are only counted (a phase interrupted midway is redone, which
is cheap for them). A durable step's result is committed when it completes,
fenced by the run's lease, and handed back instead of recomputing it when its
phase is redone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _json
from .._stop import damaged, read_saved
from ..errors import StoreError
from ..observe import hooks
from ..store.store import Store
from ..waits import RetryLater
from .completions import Completions
from .lease import Fence
from .replay import Call, Recoded, ReplayCheck, exempt

if TYPE_CHECKING:
    from .effectrecord import EffectRecord


class StepLog:
    """A run's saved durable steps: read once per start, written as they finish."""

    def __init__(
        self, store: Store, fence: Fence, clock: Callable[[], float], completions: Completions | None = None
    ) -> None:
        self._store = store
        self._completions = completions if completions is not None else Completions(store, fence)
        """Effect completions waiting for a transaction: a durable step's carries
        them, so a saved result that may depend on an effect never outlives it."""
        self._fence = fence
        self._clock = clock
        self._saved: dict[str, dict[str, tuple[str, str]]] = {}
        self._made: dict[str, dict[str, tuple[float, int]]] = {}
        """When each saved step was made (its time, its row id), by phase: the saved sequence's order."""
        self._recode: dict[str, Recoded] = {}
        """Open phases whose code changed since their steps were saved."""
        self._effects_of: Callable[[str], Iterable[EffectRecord]] = lambda _phase: ()
        self._checks: dict[str, ReplayCheck] = {}
        self._checks_lock = threading.Lock()
        """The replay check of each recoded phase, since the last `load` (replay.py)."""
        self._replayed: dict[str, set[str]] = {}
        """The saved steps handed back since the last `load`, by phase: how far
        the phase's current execution has got through what it saved (patches.py)."""
        self._began: dict[tuple[str, str], float] = {}
        """When each step being computed was found not saved: its span's start (observe/)."""

    def load(self) -> None:
        """One read of the run's saved steps, not one per phase."""
        saved: dict[str, dict[str, tuple[str, str]]] = {}
        made: dict[str, dict[str, tuple[float, int]]] = {}
        with self._store.read() as conn:
            for st in self._store.steps.of_run(conn, self._fence.run_id):
                saved.setdefault(st.phase, {})[st.step_key] = (st.result_json, st.result_hash)
                made.setdefault(st.phase, {})[st.step_key] = (float(st.created_at), int(st.id))
        self._saved = saved
        self._made = made
        self._replayed = {}
        self._checks = {}

    def follow_effects(self, effects_of: Callable[[str], Iterable[EffectRecord]]) -> None:
        """Where the phase's effect records of this replay are found (the runner's ledger).

        Args:
            effects_of: The effect records a phase made since it was last
                re-opened (a rewind, a reset), as the ledger has them.
        """
        self._effects_of = effects_of

    def effects_of(self, phase: str) -> list[EffectRecord]:
        """The effect records the phase made since it was last re-opened."""
        return list(self._effects_of(phase))

    def recode(self, phases: Mapping[str, Recoded]) -> None:
        """Check the replay of these phases against what their old code saved (replay.py).

        Args:
            phases: Each open phase whose code changed: its old code and its new.
        """
        self._recode = dict(phases)
        self._checks = {}

    def _check(self, phase: str) -> ReplayCheck | None:
        if phase not in self._recode:
            return None
        check = self._checks.get(phase)
        if check is None:
            # The first call may come from several threads of a `ctx.map` at
            # once: one check per phase, or a call's mark would be lost.
            with self._checks_lock:
                check = self._checks.get(phase)
                if check is None:
                    made = self._made.get(phase, {})
                    seq = [(t, i, Call("step", k)) for k, (t, i) in made.items() if not exempt(k)]
                    seq += [
                        (float(e.intent_at or 0.0), 0, Call("effect", str(e.name))) for e in self._effects_of(phase)
                    ]
                    check = self._checks[phase] = ReplayCheck(phase, seq, self._recode[phase])
        return check

    def check_effect(self, phase: str, name: str, *, home: bool) -> None:
        """An effect the phase calls, checked against the saved sequence when its code changed.

        Raises:
            Stop: the old code did something else at this point (replay.py).
        """
        check = self._check(phase)
        if check is not None:
            check.asked(Call("effect", name), home=home)

    def damaged(self, phases: Iterable[str]) -> list[str]:
        """What, among the saved steps of these phases, no longer matches its hash."""
        wanted = set(phases)
        return [
            f"durable step {key!r} of {phase}"
            for phase, steps in self._saved.items()
            if phase in wanted
            for key, (text, digest) in steps.items()
            if damaged(text, digest)
        ]

    def phases(self) -> frozenset[str]:
        """The phases that have saved durable steps."""
        return frozenset(p for p, steps in self._saved.items() if steps)

    def saved(self, phase: str) -> Mapping[str, tuple[str, str]]:
        """The phase's saved steps, by key: (result JSON, its hash)."""
        return self._saved.get(phase, {})

    def replayed(self, phase: str) -> frozenset[str]:
        """The keys of the phase's saved steps handed back since the last `load`."""
        return frozenset(self._replayed.get(phase, ()))

    def read(self, phase: str, key: str, *, home: bool | None = None, fn: Any = None) -> tuple[bool, Any]:
        """(True, value) when the step was saved (and still verifies); (False, None) otherwise.

        `home` says a call of the phase's code makes or finds this record (from
        the phase's own thread or task, or not): under changed code it is
        checked against the saved sequence first (replay.py), and so is `fn`,
        a durable step's function. None: a look-up only (a patch's answer, a
        question's lapse), never checked.

        Raises:
            Stop: the saved result does not verify, or the replay diverged.
        """
        if home is not None and not exempt(key):
            check = self._check(phase)
            if check is not None:
                check.asked(Call("step", key), home=home, fn=fn)
        saved = self._saved.get(phase, {}).get(key)
        if saved is None:
            self._began[(phase, key)] = self._clock()
            return False, None
        self._replayed.setdefault(phase, set()).add(key)
        return True, read_saved(saved[0], saved[1], f"durable step {key!r}")

    def save(self, phase: str, key: str, text: str, *, also: Sequence[tuple[str, dict[str, Any]]] = ()) -> list[int]:
        """Commit a durable step's result, fenced by the lease.

        Args:
            phase: The phase it belongs to.
            key: The step's key.
            text: Its result, as JSON.
            also: Hot statements (by name, with their parameters) to commit in
                the same transaction: what the step's record must never
                outlive, or be outlived by (a received message's delivery).

        Returns:
            The row count of each of `also`.

        Raises:
            LeaseLost: the lease is no longer this process's (nothing is committed).
            StoreError: one of `also` changed no row (nothing is committed).
        """
        now = self._clock()
        with self._completions.hot_tx() as tx:
            tx.run(
                "step",
                {
                    "run_id": self._fence.run_id,
                    "phase": phase,
                    "step_key": key,
                    "result_json": text,
                    "result_hash": _json.sha256(text),
                    "created_at": now,
                },
            )
            counts = [tx.run(name, params) for name, params in also]
            if 0 in counts:
                # What the step must commit with is not there (a message taken
                # already): nothing is committed, the step included.
                raise StoreError(f"durable step {key!r}: a record it commits with was not found; nothing was saved")
            self._fence.check_hot(tx)
        hooks.OBSERVER.step(self._fence.run_id, phase, key, self._began.pop((phase, key), now))
        return counts

    def failed(self, phase: str, key: str, error: Exception) -> None:
        """A durable step's function raised: told to the observers (a rate
        limit's `RetryLater` is a wait, not a failure)."""
        if isinstance(error, RetryLater):
            return
        began = self._began.pop((phase, key), self._clock())
        hooks.OBSERVER.step_failed(self._fence.run_id, phase, key, began, error)

    def discard(self, phases: list[str]) -> None:
        """Forget saved steps of these phases (their code changed since)."""
        with self._store.write() as conn:
            self._store.steps.discard(conn, self._fence.run_id, phases)
        for p in phases:
            self._saved.pop(p, None)
