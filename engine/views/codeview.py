"""A run's code versions as an operator sees them: the code it started
under, the code of its latest attempt, and each attempt the row keeps
(run/codeversion.py records them; this reads them for `status`, `status
--json`, the console's run detail and alerts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..run import codeversion
from ..safetext import safe
from ..timefmt import iso


@dataclass(frozen=True)
class CodeAttempt:
    """The code one attempt of a run ran."""

    n: int
    """The attempt's number, from 1 (each start or resume that took the run up)."""
    digest: str
    """12 hex digits over the workflow's shape as the store keeps it."""
    label: str | None
    """What the author or the deploy called it (`Workflow(version=...)`,
    `PHASEGATE_CODE_VERSION`), stored text: escape it before showing it."""
    at: str | None
    """When the attempt took the run up (ISO 8601)."""

    @classmethod
    def of(cls, v: codeversion.CodeVersion) -> CodeAttempt:
        """The view of one stored entry.

        Args:
            v: The entry, as `codeversion.read` checked it.

        Returns:
            Its view.
        """
        return cls(n=v["n"], digest=v["digest"], label=v.get("label"), at=iso(v["at"]))

    def said(self) -> str:
        """The version in words, escaped: `3f2a9c1b7d0e (release-42)`."""
        return safe(f"{self.digest} ({self.label})" if self.label is not None else self.digest)

    def to_json(self) -> dict[str, Any]:
        """The attempt as `status --json` prints it (`label` only when given).

        Returns:
            `n`, `digest`, `at` and maybe `label`.
        """
        d: dict[str, Any] = {"n": self.n, "digest": self.digest, "at": self.at}
        if self.label is not None:
            d["label"] = self.label
        return d


@dataclass(frozen=True)
class CodeView:
    """Which code a run started under and which code it runs (or last ran) now."""

    started: CodeAttempt
    """The first attempt's code."""
    current: CodeAttempt
    """The latest attempt's code."""
    attempts: tuple[CodeAttempt, ...]
    """The latest attempts the row keeps, oldest first."""
    count: int
    """How many attempts the run has had (more than `attempts` holds past `codeversion.KEPT`)."""

    @property
    def moved(self) -> bool:
        """Whether the latest attempt ran other code than the first."""
        return (self.current.digest, self.current.label) != (self.started.digest, self.started.label)

    def said(self) -> str:
        """One line, escaped: `3f2a9c1b7d0e (v1), every attempt (2)` or, once
        it moved, `started 3f2a9c1b7d0e (v1), now 9b1e04c2aa17 (v2) (attempt 3 of 3)`."""
        if not self.moved:
            return f"{self.current.said()}, every attempt ({self.count})"
        return f"started {self.started.said()}, now {self.current.said()} (attempt {self.current.n} of {self.count})"

    def to_json(self) -> dict[str, Any]:
        """The run's `code` in `status --json`.

        Returns:
            `started`, `current`, `attempts` (each `n`, `digest`, `at`, maybe `label`) and `count`.
        """
        return {
            "started": self.started.to_json(),
            "current": self.current.to_json(),
            "attempts": [a.to_json() for a in self.attempts],
            "count": self.count,
        }

    def alert(self) -> dict[str, Any]:
        """What an alert says of it: the started and current versions, escaped.

        Returns:
            `started` and `current`, each `digest` and `label` (or None), and `moved`.
        """

        def one(a: CodeAttempt) -> dict[str, Any]:
            return {"digest": safe(a.digest), "label": None if a.label is None else safe(a.label)}

        return {"started": one(self.started), "current": one(self.current), "moved": self.moved}


def code_view(stored: object) -> CodeView | None:
    """The view of a run row's `code_json`.

    Args:
        stored: The column's value (None for a run started before schema version 8).

    Returns:
        The view, or None when the run records no code version (or a damaged one).
    """
    rec = codeversion.read(stored if isinstance(stored, str) else None)
    if rec is None:
        return None
    attempts = tuple(CodeAttempt.of(a) for a in rec["attempts"])
    return CodeView(started=CodeAttempt.of(rec["started"]), current=attempts[-1], attempts=attempts, count=rec["count"])
