"""What the tools return, as JSON, made safe: no SDK here, so it is tested
(and read) without one.

Every text in a result was read from the store, which someone else wrote: it
goes through the one safe-text rule (`safetext.safe`) on its way to the
client, keys and values, so no control character, escape sequence or bidi
override reaches the assistant or the screen it is shown on as itself. A
line break and a tab are kept (a traceback, a runbook, a code diff are
lines, as `status --json` gives them); a carriage return is not.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .. import _json
from ..decide.causes import Cause
from ..decide.preview import Preview
from ..errors import PhasegateError, UsageError
from ..safetext import safe
from ..upkeep.reports import PolicyReport, UnknownSchema, UnmarkedStore, VerifyReport
from ..views.models import ClaimView, DecisionView, RunSummary, RunView
from ..views.runspage import RunsPage

#: The most runs one `list_runs` page holds.
PAGE_MAX = 200
#: The parts of a page's cursor (an attention sort key has fewer).
_CURSOR_PARTS = 8


def clean(value: Any) -> Any:
    """A JSON value with every string in it (keys too) through `safe`.

    Args:
        value: JSON-shaped data (dicts, lists, strings, numbers, booleans, None).

    Returns:
        The same shape, its text safe to show.
    """
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        return {safe(k): clean(v) for k, v in value.items()}  # a key is one line
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def clean_object(value: Mapping[str, Any]) -> dict[str, Any]:
    """`clean` of a JSON object: what a tool returns.

    Args:
        value: A JSON object.

    Returns:
        The same object, its text safe to show.
    """
    return {safe(k): clean(v) for k, v in value.items()}


def _text(value: str) -> str:
    if value.isascii() and value.isprintable():
        return value  # the common case, and no copy
    return "\n".join("\t".join(safe(part) for part in line.split("\t")) for line in value.split("\n"))


def error_line(exc: PhasegateError) -> str:
    """A refusal as the tool's one line: the error's words, the arguments it is about.

    Args:
        exc: The engine's error.

    Returns:
        One line, safe to show.
    """
    about = f" (arguments: {', '.join(exc.options)})" if exc.options else ""
    return safe(f"{exc.title}: {exc.message}{about}")


def proposal(d: DecisionView) -> dict[str, Any]:
    """A proposal waiting for a second, as the tools list it."""
    return {
        "decision": d.id,
        "action": d.action,
        "proposer": d.operator,
        "assistant": d.assistant,
        "reason": d.reason,
        "phase": d.phase,
        "effect": d.effect,
        "expires_at": d.expires_at,
    }


def runs_page(page: RunsPage, now: float, shown: Collection[str] | None = None) -> dict[str, Any]:
    """`list_runs`: a page of the runs list in the console's attention order.

    Args:
        page: The page (`Engine.runs_page`).
        now: When it was read, for the claims' words.
        shown: Keep only the runs shown with one of these statuses (None:
            all). The store keeps live, interrupted and stalled runs under
            one status, `running`, and the clock tells them apart, so the
            page is read by stored status and cut here; the cursor is still
            the page's last line, so paging goes on past what was cut.

    Returns:
        `runs` (each: `run_id`, `workflow`, `status`, `reason`,
        `needs_attention`, `frontier`, `claim`, `proposals`), `total` and
        `next` (the cursor of the page after it, or None).
    """
    out = []
    for r in page.rows:
        if shown is not None and r.status.value not in shown:
            continue
        out.append(_line(r, page.claims.get(r.run_id), page.proposals.get(r.run_id, ()), now))
    cursor = cursor_of(page.last_key) if page.has_next and page.last_key is not None else None
    return clean_object({"runs": out, "total": page.total, "next": cursor})


def _line(r: RunSummary, claim: ClaimView | None, proposals: Sequence[DecisionView], now: float) -> dict[str, Any]:
    return {
        "run_id": r.run_id,
        "workflow": r.workflow,
        "status": r.status_label,
        "reason": r.reason,
        "needs_attention": r.needs_attention,
        "frontier": {"phase": r.frontier_phase, "index": r.frontier_index, "of": r.phase_count},
        "claim": None if claim is None else claim.said(now),
        "proposals": [proposal(d) for d in proposals],
    }


def cursor_of(key: Sequence[Any]) -> str:
    """A page's sort key as the opaque cursor the client hands back.

    Args:
        key: The last line's `sort_key`.

    Returns:
        The cursor (JSON text).
    """
    return json.dumps(list(key), separators=(",", ":"))


def key_of(cursor: str) -> list[Any]:
    """A cursor from the client, checked: a list of a few scalars.

    Args:
        cursor: What `list_runs` returned as `next`.

    Returns:
        The sort key it stands for.

    Raises:
        UsageError: It is not a cursor `list_runs` made.
    """
    try:
        key = _json.loads(cursor)
    except (ValueError, RecursionError):
        key = None
    ok = isinstance(key, list) and 0 < len(key) <= _CURSOR_PARTS
    if not ok or not all(v is None or isinstance(v, str | int | float) for v in key):
        raise UsageError("after is not a cursor list_runs returned (pass its `next` as it is)", options=("after",))
    return list(key)


def status(view: RunView) -> dict[str, Any]:
    """`run_status`: the run as `status RUN --json` prints it.

    Args:
        view: The run's view.

    Returns:
        Its JSON, made safe.
    """
    return clean_object(view.to_json())


def causes(found: Sequence[Cause]) -> dict[str, Any]:
    """`causes`: as `status --by-cause --json` prints them.

    Args:
        found: The causes (`Engine.triage.causes`).

    Returns:
        `causes`: each cause's JSON, made safe.
    """
    return clean_object({"causes": [c.to_json() for c in found]})


def preview(pv: Preview, claimed_by: str | None) -> dict[str, Any]:
    """`preview`: what a decision would do, as `decide --dry-run` says it.

    Args:
        pv: The preview.
        claimed_by: Someone else's claim on the run, in words (the person who
            seconds a proposal answers to it), or None.

    Returns:
        `action`, `summary`, `accepts`, `rerun`, `effects_again`,
        `discarded`, `kept`, `env_hash` and `claimed_by`.
    """
    return clean_object(
        {
            "action": pv.action.value,
            "summary": pv.summary,
            "accepts": list(pv.accepts),
            "rerun": list(pv.rerun),
            "effects_again": list(pv.effects_again),
            "discarded": list(pv.discarded),
            "kept": list(pv.kept),
            "env_hash": pv.env_hash,
            "claimed_by": claimed_by,
        }
    )


def verified(
    reports: Sequence[VerifyReport | UnknownSchema | PolicyReport | UnmarkedStore], seals: str
) -> dict[str, Any]:
    """`verify`: as `verify --json` prints the reports, with the seals' line.

    Args:
        reports: What `Engine.verify` found.
        seals: `Engine.seal_kind`'s line.

    Returns:
        `ok` (nothing damaged or lost), `seals` and `reports`.
    """
    bad = [r for r in reports if not r.ok or (isinstance(r, VerifyReport) and r.lost)]
    return clean_object({"ok": not bad, "seals": seals, "reports": [r.to_json() for r in reports]})
