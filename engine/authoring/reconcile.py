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
    result: Any = None
    why: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Anything the hook wants kept in the decision log beside its answer."""

    @classmethod
    def done(cls, result: Any, *, why: str = "", evidence: dict[str, Any] | None = None) -> Reconciled:
        return cls("done", result, why or "the outside system has it", dict(evidence or {}))

    @classmethod
    def not_done(cls, *, why: str = "", evidence: dict[str, Any] | None = None) -> Reconciled:
        return cls("not_done", None, why or "the outside system has no such request", dict(evidence or {}))

    @classmethod
    def unknown(cls, why: str = "", *, evidence: dict[str, Any] | None = None) -> Reconciled:
        return cls("unknown", None, why or "the outside system cannot say", dict(evidence or {}))

    def as_dict(self) -> dict[str, Any]:
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
