"""Stopping a run from deep inside it, and reading back what it saved.

`Stop` is raised inside a phase (or while the start sequence applies a
decision) when the run must wait for an operator; the runner turns it into a
block. Saved results are read through `read_saved`, which checks the hash they
were stored with before anything parses them.
"""

from __future__ import annotations

from typing import Any

from . import _json
from .outcome import BlockReason
from .states import BlockKind


class Stop(BaseException):
    """The run must stop for an operator.

    A BaseException, like KeyboardInterrupt, so that a phase's own
    `except Exception` cannot swallow it and checkpoint past an effect in
    doubt or a damaged record."""

    def __init__(self, reason: BlockReason) -> None:
        super().__init__(reason.detail)
        self.reason = reason


def damaged(text: str | None, digest: str | None) -> bool:
    """Whether a saved result no longer matches the hash it was saved with."""
    return text is None or _json.sha256(text) != digest


def read_saved(text: str | None, digest: str | None, what: str) -> Any:
    """A saved step or effect result, only if it still hashes to what was saved."""
    if damaged(text, digest):
        raise Stop(
            BlockReason(
                BlockKind.INTEGRITY,
                f"saved result of {what} does not match its hash (expected {digest}, actual {_json.sha256(text or '')})",
                {"what": "record"},
            )
        )
    assert text is not None  # damaged() is False only for text
    try:
        return _json.loads(text)
    except ValueError as exc:
        raise Stop(
            BlockReason(BlockKind.INTEGRITY, f"saved result of {what} does not parse: {exc}", {"what": "record"})
        ) from None
