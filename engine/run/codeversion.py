"""The code version a run started under, and the one of each attempt.

A run waits for hours or days, so a deploy lands under most runs; an
operator looking at one (or at an alert about it) needs to know which code
started it and which code its latest attempt ran, without the code. Each
attempt (a start or a resume that takes the run's lease) records one
`CodeVersion` in the run row's `code_json` (schema version 8):

- `digest`: 12 hex digits over the workflow's shape as the store keeps it
  (each phase's name, needs, floor, probes, code fingerprint and step
  functions' fingerprints). Computed, so it cannot be forgotten at a deploy
  and cannot lie: two attempts with the same digest ran the same phases.
- `label`: what the author or the deploy calls that code, when given:
  `Workflow(version=...)`, else the `PHASEGATE_CODE_VERSION` environment
  variable (a release, a git commit). A digest says *whether* the code
  moved; a label says *to which release*, which is what a person searches
  their deploy log for. It is shown, never compared: a run's replay is
  checked against its saved records (replay.py), not against a label.

The first attempt's version is kept as `started`; the latest attempts (up to
`KEPT`) as `attempts`, with `count` the number of all of them, so a run
woken thousands of times by a rate limit keeps a bounded row.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from .. import _json
from ..authoring.workflow import VERSION_LABEL_MAX, Workflow, check_version_label

#: The environment variable a deploy names its code with (a release, a commit).
ENV = "PHASEGATE_CODE_VERSION"
#: The latest attempts a run's row keeps (its first is kept apart, as `started`).
KEPT = 20
#: Hex digits of the digest shown and stored: enough to tell deploys apart.
DIGEST_LEN = 12


class CodeVersion(TypedDict):
    """One attempt's code, as `code_json` stores it."""

    digest: str
    """12 hex digits over the workflow's stored shape."""
    at: float
    """When the attempt took the run up (UNIX seconds)."""
    n: int
    """The attempt's number, from 1."""
    label: NotRequired[str]
    """`Workflow(version=...)` or `PHASEGATE_CODE_VERSION`, when given."""


class CodeRecord(TypedDict):
    """A run row's `code_json`."""

    started: CodeVersion
    """The first attempt's."""
    attempts: list[CodeVersion]
    """The latest `KEPT` attempts', oldest first (the first among them while kept)."""
    count: int
    """How many attempts the run has had."""


@dataclass(frozen=True)
class Version:
    """The code this process runs a workflow with."""

    digest: str
    """12 hex digits over the workflow's stored shape."""
    label: str | None
    """What the author or the deploy calls it, or None."""


def of(wf: Workflow, environ: Mapping[str, str] | None = None) -> Version:
    """The version of the code this process runs `wf` with.

    Args:
        wf: The workflow, as loaded.
        environ: Where `PHASEGATE_CODE_VERSION` is read (the process's environment).

    Returns:
        Its digest and label.

    Raises:
        UsageError: `PHASEGATE_CODE_VERSION` is set to something no person could read.
    """
    shape = [{k: v for k, v in p.items() if k != "runbooks"} for p in wf.describe()]
    digest = hashlib.sha256(_json.dumps({"workflow": wf.name, "phases": shape}).encode()).hexdigest()[:DIGEST_LEN]
    label = wf.version
    if label is None:
        given = (os.environ if environ is None else environ).get(ENV)
        label = check_version_label(given, ENV) if given else None
    return Version(digest, label)


def _entry(version: Version, at: float, n: int) -> CodeVersion:
    e: CodeVersion = {"digest": version.digest, "at": at, "n": n}
    if version.label is not None:
        e["label"] = version.label
    return e


def recorded(stored: str | None, version: Version, at: float) -> str:
    """The run's `code_json` with one more attempt under `version`.

    Args:
        stored: The column as the run's row holds it (None before the first
            attempt, or for a run started before schema version 8).
        version: This attempt's code.
        at: When it took the run up.

    Returns:
        The column's new text.
    """
    before = read(stored)
    if before is None:
        first = _entry(version, at, 1)
        return _json.dumps({"started": first, "attempts": [first], "count": 1})
    n = before["count"] + 1
    attempts = [*before["attempts"], _entry(version, at, n)][-KEPT:]
    return _json.dumps({"started": before["started"], "attempts": attempts, "count": n})


def _version(value: Any) -> CodeVersion | None:
    """A stored entry, checked (the store is untrusted: a hand edit, an older engine)."""
    if not isinstance(value, dict):
        return None
    digest, at, n, label = value.get("digest"), value.get("at"), value.get("n"), value.get("label")
    if not isinstance(digest, str) or not isinstance(at, (int, float)) or isinstance(at, bool):
        return None
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return None
    e: CodeVersion = {"digest": digest[:64], "at": float(at), "n": n}
    if isinstance(label, str):
        e["label"] = label[:VERSION_LABEL_MAX]
    return e


def read(stored: str | None) -> CodeRecord | None:
    """A run row's `code_json`, checked.

    Args:
        stored: The column's text.

    Returns:
        The record, or None when there is none or it is not one this engine
        writes (a run started before schema version 8, or damage: the code
        version is shown, never relied on, so damage hides it rather than
        stopping a read).
    """
    if not stored:
        return None
    try:
        value = _json.loads(stored)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    started = _version(value.get("started"))
    raw = value.get("attempts")
    attempts = [a for a in (_version(x) for x in raw) if a is not None] if isinstance(raw, list) else []
    count = value.get("count")
    if started is None or not attempts or not isinstance(count, int) or isinstance(count, bool):
        return None
    return {"started": started, "attempts": attempts, "count": max(count, len(attempts))}


def said(v: CodeVersion) -> str:
    """One attempt's code in words: `3f2a9c1b7d0e (release-42)`.

    Args:
        v: A stored entry (its label stored text: the caller escapes it).

    Returns:
        The digest, and the label in parentheses when there is one.
    """
    return f"{v['digest']} ({v['label']})" if "label" in v else v["digest"]
