"""Where a durable step's result is recorded, and read back on a replay.

Ordinary steps are only counted (a phase interrupted midway is redone, which
is cheap for them). A durable step's result is committed when it completes,
fenced by the run's lease, and handed back instead of recomputing it when its
phase is redone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import _json
from .._stop import damaged, read_saved
from ..observe import hooks
from ..store.store import Store
from ..waits import RetryLater
from .completions import Completions
from .lease import Fence


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
        self._began: dict[tuple[str, str], float] = {}
        """When each step being computed was found not saved: its span's start (observe/)."""

    def load(self) -> None:
        """One read of the run's saved steps, not one per phase."""
        saved: dict[str, dict[str, tuple[str, str]]] = {}
        with self._store.read() as conn:
            for st in self._store.steps.of_run(conn, self._fence.run_id):
                saved.setdefault(st.phase, {})[st.step_key] = (st.result_json, st.result_hash)
        self._saved = saved

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
        return self._saved.get(phase, {})

    def read(self, phase: str, key: str) -> tuple[bool, Any]:
        """(True, value) when the step was saved (and still verifies); (False, None) otherwise."""
        saved = self._saved.get(phase, {}).get(key)
        if saved is None:
            self._began[(phase, key)] = self._clock()
            return False, None
        return True, read_saved(saved[0], saved[1], f"durable step {key!r}")

    def save(self, phase: str, key: str, text: str) -> None:
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
            self._fence.check_hot(tx)
        hooks.OBSERVER.step(self._fence.run_id, phase, key, self._began.pop((phase, key), now))

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
