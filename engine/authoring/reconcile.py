"""Asking the outside system whether an in-doubt effect happened.

Payment, mail and messaging APIs can usually say whether the request with
key K went through; two-phase-commit recovery asks a participant exactly
this. A reconcile hook (`ctx.effect(..., reconcile=fn)`) is that question:
`fn(key)` answers with one of

- `Reconciled.done(result)`: it happened; the effect is recorded done with
  that result and not called again;
- `Reconciled.not_done()`: it did not; the effect is called again with the
  same key;
- `Reconciled.unknown(why)`: the system cannot say now. Raising, returning
  anything else, or taking longer than the timeout mean the same. The run
  stops `in_doubt_effect` and waits for a person, as without a hook.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Answer = Literal["done", "not_done", "unknown"]


@dataclass(frozen=True)
class Reconciled:
    """A reconcile hook's answer. Build it with `done`, `not_done` or `unknown`."""

    answer: Answer
    """done, not_done or unknown."""
    result: Any = None
    """For done: what the outside system returned, recorded as the effect's result."""
    why: str = ""
    """How the hook knows, in one line (kept in the decision log)."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Anything the hook wants kept in the decision log beside its answer."""

    @classmethod
    def done(cls, result: Any, *, why: str = "", evidence: dict[str, Any] | None = None) -> Reconciled:
        """The effect happened: record it done with `result`, never call it again.

        Args:
            result: What the outside system returned (the result later phases read).
            why: How the hook knows.
            evidence: Anything to keep in the decision log beside the answer.

        Returns:
            The answer.
        """
        return cls("done", result, why or "the outside system has it", dict(evidence or {}))

    @classmethod
    def not_done(cls, *, why: str = "", evidence: dict[str, Any] | None = None) -> Reconciled:
        """The effect did not happen: call it again, with the same key.

        Args:
            why: How the hook knows.
            evidence: Anything to keep in the decision log beside the answer.

        Returns:
            The answer.
        """
        return cls("not_done", None, why or "the outside system has no such request", dict(evidence or {}))

    @classmethod
    def unknown(cls, why: str = "", *, evidence: dict[str, Any] | None = None) -> Reconciled:
        """The outside system cannot say: leave the effect in doubt, for a person.

        Args:
            why: What the hook saw.
            evidence: Anything to keep beside the answer.

        Returns:
            The answer.
        """
        return cls("unknown", None, why or "the outside system cannot say", dict(evidence or {}))

    def as_dict(self) -> dict[str, Any]:
        """The answer as it is stored with the effect (`reconcile` in `status --json`).

        Returns:
            `answer` and `why`; `result` for done; `evidence` when there is some.
        """
        out: dict[str, Any] = {"answer": self.answer, "why": self.why}
        if self.answer == "done":
            out["result"] = self.result
        if self.evidence:
            out["evidence"] = self.evidence
        return out


def ask(hook: Callable[[str], Any], key: str, timeout: float) -> Reconciled:
    """Ask `hook` about `key`, never for longer than `timeout` seconds. A hook
    that hangs is left behind in a daemon thread: the run must not wait on it."""
    box: list[Any] = []

    def call() -> None:
        try:
            box.append(hook(key))
        except BaseException as exc:  # noqa: BLE001 - any failure of the hook means "unknown"
            box.append(exc)

    worker = threading.Thread(target=call, name=f"reconcile {key}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not box:
        return Reconciled.unknown(f"the reconcile hook did not answer within {timeout:g} s")
    got = box[0]
    if isinstance(got, BaseException):
        return Reconciled.unknown(f"the reconcile hook raised {type(got).__name__}: {got}"[:300])
    if not isinstance(got, Reconciled):
        return Reconciled.unknown(f"the reconcile hook returned {type(got).__name__}, not a Reconciled answer")
    return got
