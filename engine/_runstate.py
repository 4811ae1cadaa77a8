"""What one execution of a run shares between its parts.

`Runner` (the start sequence and the phases), `RecordsMixin` (durable steps
and effects) and `DecisionsMixin` (applying an operator's decisions) are one
object split by concept; this base names the state they share, so each part
type-checks on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import LeaseLost
from .outcome import BlockReason

if TYPE_CHECKING:
    from .engine import Engine
    from .store.store import Store
    from .workflow import Workflow


class _Stop(BaseException):
    """Raised inside a phase when the run must stop for an operator.

    A BaseException, like KeyboardInterrupt, so that a phase's own
    `except Exception` cannot swallow it and checkpoint past an effect in
    doubt or a damaged record."""

    def __init__(self, reason: BlockReason) -> None:
        super().__init__(reason.detail)
        self.reason = reason


class RunState:
    """Attributes set by `Runner.__init__` and its start sequence."""

    engine: Engine
    store: Store
    clock: Callable[[], float]
    wf: Workflow
    run_id: str
    owner: str
    epoch: int
    next_seq: int
    inputs_hash: str
    effects: dict[str, Any]
    current_probes: dict[str, Any]

    def _check_type(self, phase: str, value: Any) -> str | None:
        raise NotImplementedError

    def _fence(self, conn: Any, now: float) -> None:
        if self.store.update_run(conn, self.run_id, {"updated_at": now}, owner=self.owner) == 0:
            raise LeaseLost(f"run {self.run_id!r}: lease lost; nothing recorded")
