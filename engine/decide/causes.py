"""Why runs stopped, grouped: one cause for many runs.

When something goes wrong in production it goes wrong for many runs at once
(a tax table changes and 300 billing runs stop on the same values). A cause
is the reason a run needs a person, reduced to what the runs that share it
have in common: the same probe change (probe, saved value, current value),
the same code change (phase and fingerprints), the same exception (type and
message with numbers, ids and hex masked), the same integrity failure kind,
the same in-doubt effect name.

The signature is computed from what the run row already says (its
`blocked_json`, `error_json` and effective status), so grouping reads the
rows of the runs that need attention and nothing else. Its hash is the
cause's id: the same world gives the same id on every machine and every
call, short enough to type (`c-1a2b3c4d5e`).

`collect` reads; everything above it is a pure function of what it read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from .. import _json
from ..authoring.workflow import AGE_PROBE
from ..errors import PhasegateError, StoreError
from ..history.seals import split_key
from ..run.environment import describe
from ..states import Action, BlockKind, EffectState, RunStatus
from ..store import _rowcheck
from ..store.store import OwnRows, Store
from ..views.models import RunView
from ..views.status import NEEDS_ATTENTION, effect_state, effective_status
from .fit import allowed_actions


class CauseKind(StrEnum):
    """What the runs of a cause have in common (`Cause.kind`)."""

    PROBE_CHANGE = "probe_change"
    """The same probe changed the same way (probe, saved value, current value)."""
    CODE_CHANGE = "code_change"
    """The same phase's code changed (phase and fingerprints)."""
    EXCEPTION = "exception"
    """The same exception: its type, and its message with numbers, ids and hex masked."""
    INTEGRITY = "integrity"
    """The same kind of damage found by verification."""
    IN_DOUBT_EFFECT = "in_doubt_effect"
    """The same effect in doubt (phase and name)."""
    BELOW_FLOOR = "below_floor"
    """The same lost need below a phase's floor."""
    INTERRUPTED = "interrupted"
    """Its process died (or froze) with nothing in doubt: a worker resumes it."""
    STALLED = "stalled"
    """Its holder is alive on this host, past its lease."""
    QUESTION = "question"
    """It waits for a person's answer to the same question (phase and name): one answer may answer them all."""
    OTHER = "other"
    """Blocked for a reason this engine does not know (a newer writer, damage)."""


CauseKindName = Literal[
    "probe_change",
    "code_change",
    "exception",
    "integrity",
    "in_doubt_effect",
    "below_floor",
    "interrupted",
    "stalled",
    "question",
    "other",
]

#: When a run stops for several reasons at once, the one that names its
#: cause: the one an operator must look at first (damage before drift,
#: drift before a missing need, the rest after).
_PRIORITY = (
    CauseKind.INTEGRITY,
    CauseKind.CODE_CHANGE,
    CauseKind.PROBE_CHANGE,
    CauseKind.BELOW_FLOOR,
    CauseKind.IN_DOUBT_EFFECT,
    CauseKind.EXCEPTION,
    CauseKind.INTERRUPTED,
    CauseKind.STALLED,
    CauseKind.QUESTION,
    CauseKind.OTHER,
)

#: Summary text is cut here: one line in an 80-column terminal.
_SUMMARY_MAX = 160


@dataclass(frozen=True)
class Reason:
    """One reason a run needs a person, as the part of a cause's signature it is."""

    kind: CauseKind
    key: tuple[Any, ...]
    """What runs sharing this reason have in common (JSON-able)."""
    summary: str


@dataclass(frozen=True)
class Cause:
    """Runs that stopped for the same reason, and what one decision may do to all of them."""

    cause: str
    """The stable id: `c-` and ten hex digits of the signature's hash."""
    kind: CauseKind
    """What its runs have in common: a probe change, a code change, an exception, ..."""
    summary: str
    """One line for a person, with the shared values."""
    runs: tuple[str, ...]
    """The ids of its runs."""
    allowed_actions: tuple[Action, ...] = ()
    """The decisions that fit every one of its runs now (`fit` (decide/fit.py))."""
    workflows: tuple[str, ...] = field(default=())
    """The workflows its runs belong to."""
    signature: tuple[Any, ...] = field(default=(), compare=False)
    """What its runs share, as compared (the id is its hash); not in the JSON."""

    def to_json(self) -> dict[str, Any]:
        """The cause as `status --by-cause --json` prints it.

        Returns:
            `cause`, `kind`, `summary`, `runs` and `allowed_actions` (the
            contract: more may follow, none is renamed), `count`, `workflows`.
        """
        return {
            "cause": self.cause,
            "kind": self.kind.value,
            "summary": self.summary,
            "runs": list(self.runs),
            "allowed_actions": [a.value for a in self.allowed_actions],
            "count": len(self.runs),
            "workflows": list(self.workflows),
        }


# -- masking ----------------------------------------------------------------

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), "<hex>"),
    # A run of hex long enough to be a hash or an address, with at least one digit.
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (re.compile(r"\d+(?:[.,]\d+)*"), "<n>"),
)


def mask(message: str) -> str:
    """An exception's message with what differs from run to run masked:
    ids, hex and numbers (`invoice 1042 timed out after 30s` and `invoice 7
    timed out after 31s` are the same failure)."""
    out = message
    for pattern, repl in _MASKS:
        out = pattern.sub(repl, out)
    return " ".join(out.split())


# -- one run's reasons -------------------------------------------------------


def _shown(value: Any, limit: int = 32) -> str:
    text = value if isinstance(value, str) else _json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _env_reasons(block: Mapping[str, Any]) -> list[Reason]:
    out: list[Reason] = []
    for c in block.get("changes", []) or []:
        if not isinstance(c, Mapping):
            continue
        probe = str(c.get("probe"))
        saved, current = c.get("saved"), c.get("current")
        if probe.startswith("code:"):
            phase = probe[5:]
            out.append(
                Reason(
                    CauseKind.CODE_CHANGE,
                    ("code", phase, saved, current),
                    f"code of phase {phase} changed ({_shown(saved, 12)} -> {_shown(current, 12)})",
                )
            )
        elif probe == AGE_PROBE:
            # The age differs from run to run; the limit it passed is what they share.
            out.append(
                Reason(CauseKind.PROBE_CHANGE, ("probe", probe, saved), f"checkpoint older than max_age ({saved})")
            )
        elif probe == "shape":
            out.append(
                Reason(
                    CauseKind.CODE_CHANGE,
                    ("shape", saved, current),
                    f"workflow shape changed before the frontier ({_shown(saved)} -> {_shown(current)})",
                )
            )
        else:
            out.append(
                Reason(
                    CauseKind.PROBE_CHANGE,
                    ("probe", probe, saved, current),
                    describe([{"probe": probe, "saved": saved, "current": current}])
                    if isinstance(saved, dict) and isinstance(current, dict)
                    else f"probe {probe} changed: {_shown(saved)} -> {_shown(current)}",
                )
            )
    return out


def _block_reasons(run_id: str, block: Mapping[str, Any]) -> list[Reason]:
    kind = block.get("kind")
    if kind == BlockKind.ENV_MISMATCH.value:
        found = _env_reasons(block)
        if found:
            return found
    elif kind == BlockKind.INTEGRITY.value:
        what = block.get("what")
        failure = block.get("failure")
        if not what and isinstance(failure, Mapping):
            what = failure.get("what")
        what = str(what or "unknown")
        return [Reason(CauseKind.INTEGRITY, ("integrity", what), f"integrity failure: {what}")]
    elif kind == BlockKind.IN_DOUBT_EFFECT.value:
        return [_in_doubt(run_id, str(block.get("effect", "")), block.get("phase"), block.get("name"))]
    elif kind == BlockKind.BELOW_FLOOR.value:
        phase, lost = block.get("phase"), block.get("lost")
        return [
            Reason(
                CauseKind.BELOW_FLOOR,
                ("below_floor", phase, lost),
                f"phase {phase} is below its floor without {lost}",
            )
        ]
    return [Reason(CauseKind.OTHER, ("blocked", str(kind)), f"blocked: {kind}")]


def _in_doubt(run_id: str, key: str, phase: Any, name: Any) -> Reason:
    if not name or not phase:
        where = split_key(run_id, key)
        phase, name = where if where is not None else (phase, key)
    return Reason(
        CauseKind.IN_DOUBT_EFFECT,
        ("in_doubt_effect", str(phase), str(name)),
        f"effect {name} (phase {phase}) in doubt",
    )


def reasons(
    run_id: str,
    status: RunStatus,
    blocked: Sequence[Mapping[str, Any]],
    error: Mapping[str, Any] | None,
    in_doubt: Iterable[tuple[str, str, str]] = (),
    waiting: Mapping[str, Any] | None = None,
) -> list[Reason]:
    """Why one run needs a person, reason by reason, from its row: the block
    reasons of a blocked run, the exception of a failed one, for an
    interrupted or stalled one its effects in doubt (`in_doubt`: key, phase,
    name), and for a waiting one the question it asked (`waiting`)."""
    out = _status_reasons(run_id, status, blocked, error, in_doubt, waiting)
    # One reason once (two in-doubt effects of one name in one run are one reason).
    seen: dict[str, Reason] = {}
    for r in out:
        seen.setdefault(_json.dumps(list(r.key)), r)
    return list(seen.values())


def _status_reasons(
    run_id: str,
    status: RunStatus,
    blocked: Sequence[Mapping[str, Any]],
    error: Mapping[str, Any] | None,
    in_doubt: Iterable[tuple[str, str, str]],
    waiting: Mapping[str, Any] | None,
) -> list[Reason]:
    """`reasons` before each is made one: what the run's status says."""
    if status is RunStatus.WAITING:
        q = (waiting or {}).get("question") if (waiting or {}).get("kind") == "answer" else None
        if not isinstance(q, Mapping):
            return []
        phase, name = str(q.get("phase")), str(q.get("name"))
        said = f"question {name} (phase {phase}) waits for an answer: {q.get('prompt')!s}"
        return [Reason(CauseKind.QUESTION, ("question", phase, name), said)]
    if status is RunStatus.BLOCKED:
        out = [r for b in blocked if isinstance(b, Mapping) for r in _block_reasons(run_id, b)]
        return out or [Reason(CauseKind.OTHER, ("blocked",), "blocked")]
    if status is RunStatus.FAILED:
        err = error or {}
        etype = str(err.get("type") or "error")
        message = mask(str(err.get("message") or ""))
        return [Reason(CauseKind.EXCEPTION, ("exception", etype, message), f"{etype}: {message}")]
    if status in (RunStatus.INTERRUPTED, RunStatus.STALLED):
        out = [_in_doubt(run_id, key, phase, name) for key, phase, name in in_doubt]
        if not out:
            kind = CauseKind.INTERRUPTED if status is RunStatus.INTERRUPTED else CauseKind.STALLED
            said = "process died; a worker resumes it" if kind is CauseKind.INTERRUPTED else "holder stalled"
            out.append(Reason(kind, (kind.value,), said))
        return out
    return []


def reasons_of_view(view: RunView) -> list[Reason]:
    """`reasons` of a run's view: the same signature the row gives."""
    doubts = [(e.key, e.phase, e.name) for e in view.effects if e.state is EffectState.IN_DOUBT]
    asking = view.asking
    waiting = view.waiting if asking is not None else None
    return reasons(view.run_id, view.status, view.blocked, view.error, doubts, waiting)


def signature(found: Sequence[Reason]) -> tuple[Any, ...]:
    """A run's whole signature: every reason, in a stable order. Two runs
    share a cause only when one decision answers the same things in both."""
    return tuple(sorted((list(r.key) for r in found), key=_json.dumps))


def cause_id(sig: tuple[Any, ...]) -> str:
    return "c-" + _json.sha256(_json.dumps(list(sig)))[:10]


def _headline(found: Sequence[Reason]) -> Reason:
    return min(found, key=lambda r: _PRIORITY.index(r.kind))


def summary(found: Sequence[Reason]) -> str:
    head = _headline(found)
    text = head.summary + (f" (and {len(found) - 1} more reason(s))" if len(found) > 1 else "")
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 3] + "..."


@dataclass
class _Group:
    found: list[Reason]
    runs: list[str] = field(default_factory=list)
    workflows: set[str] = field(default_factory=set)
    allowed: list[Action] | None = None


class Grouping:
    """Runs added one by one, grouped by signature. The allowed actions of a
    cause are the intersection of each run's (`decisions.allowed_actions`),
    in the order the first run lists them."""

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}

    def add(self, run_id: str, workflow: str, found: Sequence[Reason], allowed: Sequence[Action]) -> str:
        cid = cause_id(signature(found))
        g = self._groups.get(cid)
        if g is None:
            g = self._groups[cid] = _Group(list(found))
        g.runs.append(run_id)
        g.workflows.add(workflow)
        g.allowed = list(allowed) if g.allowed is None else [a for a in g.allowed if a in allowed]
        return cid

    def causes(self) -> list[Cause]:
        """Largest first, then by id: the cause behind most runs is looked at first."""
        out = [
            Cause(
                cause=cid,
                kind=_headline(g.found).kind,
                summary=summary(g.found),
                runs=tuple(sorted(g.runs)),
                allowed_actions=tuple(g.allowed or ()),
                workflows=tuple(sorted(g.workflows)),
                signature=signature(g.found),
            )
            for cid, g in self._groups.items()
        ]
        out.sort(key=lambda c: (-len(c.runs), c.cause))
        return out


def is_cause_id(text: str) -> bool:
    return bool(re.fullmatch(r"c-[0-9a-f]{10}", text))


# -- reading them from a store ----------------------------------------------

ViewOf = Callable[[Any, OwnRows | None], RunView]
"""A run's view from its row and its own rows (None: read them), in the caller's transaction."""

#: Runs whose own rows are read in one go when their views are built.
_CHUNK = 500


def row_reasons(store: Store, conn: Any, run: Any, status: RunStatus) -> list[Reason]:
    """`reasons` of a checked run row: its `blocked_json` and `error_json`, and
    for an interrupted or stalled run its effects (an indexed read of its own)."""
    blocked = _json.loads(run.blocked_json or "[]") if status is RunStatus.BLOCKED else []
    error = _json.loads(run.error_json) if run.error_json else None
    doubts: list[tuple[str, str, str]] = []
    if status in (RunStatus.INTERRUPTED, RunStatus.STALLED):
        doubts = [
            (e.key, e.phase, e.name)
            for e in store.effects.of_run(conn, run.run_id)
            if effect_state(e, holder_alive=False) is EffectState.IN_DOUBT
        ]
    waiting = None
    if status is RunStatus.WAITING and run.waiting_json:
        waiting = _json.loads(run.waiting_json)
    return reasons(run.run_id, status, blocked, error, doubts, waiting if isinstance(waiting, dict) else None)


_DAMAGED = Reason(CauseKind.INTEGRITY, ("integrity", "run record"), "integrity failure: damaged run record")


def collect(store: Store, conn: Any, now: float, view_of: ViewOf | None = None) -> list[Cause]:
    """The causes of every run that needs a person and has no decision
    waiting, from one indexed read of those rows. With `view_of`, each run's
    view is built to ask `decisions.allowed_actions` what fits it; without,
    `allowed_actions` is empty (resolving a cause id needs only its runs)."""
    grouping = Grouping()
    found: list[tuple[Any, list[Reason]]] = []
    for row in store.runs.needing_attention(conn):
        try:
            run = _rowcheck.check(row)
            status = effective_status(run, now)
            if status not in NEEDS_ATTENTION and status is not RunStatus.WAITING:
                continue  # running, its holder alive
            why = row_reasons(store, conn, run, status)
            if not why:
                continue  # waiting for a time, not a person
            found.append((run, why))
        except StoreError:
            # Shown, not hidden: its own row (or a row of its own) is damaged.
            grouping.add(str(row._mapping.get("run_id"))[:200], "?", [_DAMAGED], [])
    for start in range(0, len(found), _CHUNK):
        chunk = found[start : start + _CHUNK]
        seen = views(store, conn, [run for run, _ in chunk], view_of) if view_of is not None else {}
        for run, why in chunk:
            view = seen.get(run.run_id)
            allowed = allowed_actions(view) if isinstance(view, RunView) else []
            grouping.add(run.run_id, run.workflow, why, allowed)
    return grouping.causes()


def views(store: Store, conn: Any, rows: Sequence[Any], view_of: ViewOf) -> dict[str, RunView | PhasegateError]:
    """The views of these runs, their own rows read in four queries; a run
    whose rows are damaged gets its error (one damaged row must not take the
    others' views with it)."""
    try:
        own: dict[str, OwnRows] | None = store.own_rows.of_runs(conn, [r.run_id for r in rows])
    except StoreError:
        own = None  # read run by run below, so the damage is pinned on its own run
    out: dict[str, RunView | PhasegateError] = {}
    for run in rows:
        try:
            out[run.run_id] = view_of(run, own[run.run_id] if own is not None else None)
        except PhasegateError as exc:
            out[run.run_id] = exc
    return out
