"""Runbooks: what an operator should do when a run stops, declared by the
workflow and stored with each run.

One rule answers "which runbook applies to this stop" (`for_stop`), and the
status command, the console and alerts all ask it. The store keeps, per
phase, the runbooks resolved for that phase (`for_phase`), so the answer
needs only the run's row, never the workflow's code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import WorkflowError
from ..states import BlockKind

#: The kinds a runbook may name: every reason to block, and a failure.
KINDS: frozenset[str] = frozenset({k.value for k in BlockKind} | {"failed"})
#: Longer than a link or a few lines is a document, not a runbook entry.
MAX_TEXT = 2000


def check(workflow: str, books: Mapping[str, str]) -> dict[str, str]:
    """Validate the declared map's shape; phase names are checked once the
    phases exist (`check_phases`)."""
    out: dict[str, str] = {}
    for key, text in books.items():
        if not isinstance(key, str) or not key.strip():
            raise WorkflowError(f"a runbook key of {workflow!r} must be a non-empty string")
        if not isinstance(text, str) or not text.strip():
            raise WorkflowError(f"runbook {key!r} of {workflow!r} must be a non-empty string (a link or a short text)")
        if len(text) > MAX_TEXT:
            raise WorkflowError(f"runbook {key!r} of {workflow!r} is longer than {MAX_TEXT} characters; link to it")
        kind, sep, phase = key.partition(":")
        if sep and (kind not in KINDS or not phase):
            raise WorkflowError(
                f"runbook key {key!r} of {workflow!r}: before ':' must be one of {', '.join(sorted(KINDS))}"
            )
        out[key] = text
    return out


def check_phases(workflow: str, books: Mapping[str, str], phases: Iterable[str]) -> None:
    names = set(phases)
    for key in books:
        kind, sep, phase = key.partition(":")
        target = phase if sep else (None if kind in KINDS else kind)
        if target is not None and target not in names:
            raise WorkflowError(
                f"runbook key {key!r} of {workflow!r} names no phase and no kind "
                f"(kinds: {', '.join(sorted(KINDS))}; phases: {', '.join(sorted(names)) or 'none'})"
            )


def for_phase(books: Mapping[str, str], phase: str) -> dict[str, str]:
    """Kind -> runbook for stops in `phase`: `kind:phase` wins over the
    phase's own entry, which wins over the kind's."""
    out: dict[str, str] = {}
    for kind in sorted(KINDS):
        text = books.get(f"{kind}:{phase}") or books.get(phase) or books.get(kind)
        if text:
            out[kind] = text
    return out


def _phase_of(reason: Mapping[str, Any], frontier: str | None) -> str | None:
    """The phase a stop is about: the reason's own, else the frontier."""
    if isinstance(reason.get("phase"), str):
        return str(reason["phase"])
    failure = reason.get("failure")
    if isinstance(failure, Mapping) and isinstance(failure.get("phase"), str):
        return str(failure["phase"])
    for change in reason.get("changes") or []:
        phases = change.get("phases") if isinstance(change, Mapping) else None
        if phases and isinstance(phases[0], str):
            return str(phases[0])
    return frontier


def for_stop(
    shape: list[Any], blocked: Sequence[Mapping[str, Any]], error: Mapping[str, Any] | None, frontier: str | None
) -> list[dict[str, Any]]:
    """The runbooks that apply to a stopped run, one per reason that has one:
    `{"kind", "phase", "runbook"}`. Stored data: anything not of the expected
    shape is skipped, never trusted."""
    by_phase: dict[str, Mapping[str, Any]] = {}
    for p in shape:
        if isinstance(p, Mapping) and isinstance(p.get("name"), str) and isinstance(p.get("runbooks"), Mapping):
            by_phase[p["name"]] = p["runbooks"]
    if not by_phase:
        return []
    reasons: list[tuple[str, str | None]] = []
    for b in blocked:
        reasons.append((str(b.get("kind")), _phase_of(b, frontier)))
    if error:
        phase = error.get("phase")
        reasons.append(("failed", phase if isinstance(phase, str) else frontier))
    out: list[dict[str, Any]] = []
    for kind, phase in reasons:
        books = by_phase.get(phase or "") or next(iter(by_phase.values()))
        text = books.get(kind)
        entry = {"kind": kind, "phase": phase, "runbook": text}
        if isinstance(text, str) and entry not in out:
            out.append(entry)
    return out
