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
    detail: str
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    def __getitem__(self, key: str) -> Any:  # reasons read like dicts too
        return self.as_dict()[key]

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "kind": str(self.kind), "detail": self.detail}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BlockReason:
        data = {k: v for k, v in d.items() if k not in ("kind", "detail")}
        return cls(BlockKind(d["kind"]), str(d.get("detail", "")), data)

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class Outcome:
    """The result of one `Engine.run`."""

    run_id: str
    status: OutcomeStatus
    result: Any = None
    blocked: list[BlockReason] = field(default_factory=list)
    error: dict[str, Any] | None = None
    """For a failed run: the phase, the exception type and its message."""
    phases_run: list[str] = field(default_factory=list)
    """The phases this call executed, in order (a resume skips done ones)."""
    stopped: str = ""
    """For an interrupted run: where it stopped ("stopped by SIGTERM in phase
    agent, after step llm:7"); it is resumable from there."""
    degraded: str = ""
    """For a completed run whose phases did not all run whole: what is
    missing ("enrich skipped; report ran without fetch"); empty otherwise."""
