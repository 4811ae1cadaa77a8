"""What crosses the engine's boundary: outcomes and reasons for a block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .states import BlockKind, OutcomeStatus


@dataclass(frozen=True)
class BlockReason:
    """Why a run stopped for an operator: a kind and a one-line detail, with
    structured data (probe diffs, effect keys, checkpoint) for tools."""

    kind: BlockKind
    """Which kind of stop: integrity, env_mismatch, in_doubt_effect or below_floor."""
    detail: str
    """One line for a person ("probe tax_rates changed: 3f2a... -> 9c1e...")."""
    data: dict[str, Any] = field(default_factory=dict, compare=False)
    """The stored reason's other keys (its shape by kind is in `shapes.py`)."""

    def __getitem__(self, key: str) -> Any:  # reasons read like dicts too
        return self.as_dict()[key]

    def as_dict(self) -> dict[str, Any]:
        """The reason as it is stored.

        Returns:
            `data` with `kind` and `detail` beside it.
        """
        return {**self.data, "kind": str(self.kind), "detail": self.detail}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BlockReason:
        """A reason from its stored form (`as_dict`'s).

        Args:
            d: The stored reason: `kind`, `detail` and the kind's data.

        Returns:
            The reason.

        Raises:
            ValueError: `kind` is not a `BlockKind`.
        """
        data = {k: v for k, v in d.items() if k not in ("kind", "detail")}
        return cls(BlockKind(d["kind"]), str(d.get("detail", "")), data)

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class Outcome:
    """The result of one `Engine.run`."""

    run_id: str
    """The run."""
    status: OutcomeStatus
    """How the call ended: completed, blocked, failed, or interrupted between phases."""
    result: Any = None
    """For a completed run: the last phase's output."""
    blocked: list[BlockReason] = field(default_factory=list)
    """For a blocked run: every reason it stopped for an operator."""
    error: dict[str, Any] | None = None
    """For a failed run: the phase, the exception type and its message."""
    phases_run: list[str] = field(default_factory=list)
    """The phases this call executed, in order (a resume skips done ones)."""
    stopped: str = ""
    """For an interrupted run: where it stopped ("stopped by SIGTERM in phase
    agent, after step llm:7"); it is resumable from there. For a waiting,
    paused or cancelled run: the line that says what it waits for, or who
    paused or cancelled it and why."""
    degraded: str = ""
    """For a completed run whose phases did not all run whole: what is
    missing ("enrich skipped; report ran without fetch"); empty otherwise."""
    waiting: dict[str, Any] | None = None
    """For a waiting run: what it waits for (`kind` answer, timer or
    retry_later, with the question or the time), as `status --json` shows it."""
