"""The typed views of a run, as an operator sees it: a line of the runs
list (`RunSummary`), and one run in full (`RunView`) with its parts. Frozen
dataclasses: what crosses from the engine to the console and `--json`.
Built from the store alone: a run's by `build.build`, a line by
`RunSummary.from_row`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from .. import _json
from ..authoring.sources import CodeDiff
from ..history.prune import PruneCandidate
from ..run.frontier import Frontier
from ..run.lease import HolderState
from ..safetext import safe
from ..shapes import BlockedReason, EnvCheck, IntegrityReason, ReconcileAnswer, RunError
from ..states import ActionName, EffectState, PhaseState, RunStatus
from ..timefmt import iso
from .status import EXPIRED, NEEDS_ATTENTION, PROPOSED, effective_status, status_text


@dataclass(frozen=True)
class RunSummary:
    """One line of the runs list, from the runs table alone."""

    run_id: str
    workflow: str
    status: RunStatus
    frontier_phase: str | None
    frontier_index: int
    phase_count: int
    steps_done: int
    last_checkpoint_at: float | None
    updated_at: float
    attention: str
    blocked_kinds: tuple[str, ...]
    pending_decision: bool = False
    """An operator's decision waits to be carried out (at the run's next start)."""
    sort_key: tuple[Any, ...] = ()
    """Its place in the order it was listed in: `Engine.runs(after=...)` pages on from it."""

    @property
    def needs_attention(self) -> bool:
        return self.status in NEEDS_ATTENTION

    @property
    def reason(self) -> str:
        return status_text(self.status, self.attention)

    @property
    def degraded(self) -> bool:
        """Completed, but not whole (the engine says so in `attention` when it completes)."""
        return self.status is RunStatus.COMPLETED and self.attention.startswith("completed (degraded)")

    @property
    def status_label(self) -> str:
        """The status as a list shows it: "completed (degraded)" for a degraded completion."""
        return "completed (degraded)" if self.degraded else self.status.value

    @classmethod
    def damaged(cls, row: Any, why: str, sort_key: tuple[Any, ...] = ()) -> RunSummary:
        """A line for a run whose own row is damaged: shown, not hidden, and
        not allowed to break the list around it."""
        rid = getattr(row, "_mapping", {}).get("run_id")
        return cls(
            run_id=str(rid)[:200],
            workflow="?",
            status=RunStatus.BLOCKED,
            frontier_phase=None,
            frontier_index=0,
            phase_count=0,
            steps_done=0,
            last_checkpoint_at=None,
            updated_at=0.0,
            attention=f"damaged record: {why}"[:300],
            blocked_kinds=("integrity",),
            sort_key=sort_key,
        )

    @classmethod
    def from_row(cls, row: Any, now: float, sort_key: tuple[Any, ...] = ()) -> RunSummary:
        # A checked row's reasons are objects, each with a text kind (`_rowcheck`).
        blocked: list[BlockedReason] = _json.loads(row.blocked_json or "[]")
        return cls(
            run_id=row.run_id,
            workflow=row.workflow,
            status=effective_status(row, now),
            frontier_phase=row.frontier_phase,
            frontier_index=int(row.frontier_index),
            phase_count=int(row.phase_count),
            steps_done=int(row.steps_done),
            last_checkpoint_at=row.last_checkpoint_at,
            updated_at=row.updated_at,
            attention=row.attention or "",
            blocked_kinds=tuple(b["kind"] for b in blocked),
            pending_decision=bool(getattr(row, "pending_decision", False)),
            sort_key=sort_key,
        )


# The parts of a run's view. Field order is the order `status --json` prints.


@dataclass(frozen=True)
class PhaseView:
    name: str
    state: PhaseState
    needs: tuple[str, ...]
    floor: tuple[str, ...]
    probes: tuple[str, ...]
    missing: tuple[str, ...]
    """Needed outputs the phase ran (or will run) without."""
    steps_done: int | None
    """Steps its checkpoint recorded; None while it is not done."""

    @property
    def done(self) -> bool:
        """Done, whole or degraded: a rewind can re-open it."""
        return self.state in (PhaseState.DONE, PhaseState.DEGRADED)


@dataclass(frozen=True)
class EffectView:
    name: str
    key: str
    phase: str
    state: EffectState
    attempt: int
    idempotent: bool
    atomic: bool
    retry_approved: bool
    intent_at: str | None
    done_at: str | None
    confirmed_by: int | None
    reconcile: ReconcileAnswer | None = None
    """The last answer of its reconcile hook (answer, why, at), if it was asked."""
    redo_on_rewind: bool = False


@dataclass(frozen=True)
class DecisionView:
    id: int
    action: ActionName | str
    """One of the actions; "prune" for the audit row of a prune, "second" for
    the row that seconded a proposal."""
    operator: str
    reason: str
    at: str | None
    state: str
    """pending, applied or void."""
    phase: str | None
    effect: str | None
    answers: str | None
    applied_at: str | None
    account: str | None = None
    """The OS account that recorded it (version 4; absent from older decisions)."""
    expires_at: str | None = None
    """A proposal's lapse, when nobody seconds it first."""
    seconded_by: int | None = None
    """The id of the "second" decision that let this proposal apply."""

    @property
    def proposed(self) -> bool:
        """Waiting for a second operator (and not yet lapsed)."""
        return self.state == PROPOSED

    batch_id: str | None = None
    """Shared by the decisions one command recorded for a group of runs (`decide --cause`)."""
    policy_id: int | None = None
    """The policy change in force when it was made (`phasegate policy --show --all` lists it; version 5)."""


@dataclass(frozen=True)
class OutputView:
    phase: str
    seq: int
    bytes: int
    hash: str | None
    state: str
    """present, pruned, archived, or lost (present but not verifying)."""
    verified: bool


@dataclass(frozen=True)
class LeaseView:
    holder: str
    expires_at: str | None
    alive: bool
    heartbeat_at: str | None
    state: HolderState = HolderState.LIVE
    """live, stalled (alive on this host, past its lease) or gone."""


@dataclass(frozen=True)
class ClaimView:
    """The claim on a run now (`status --json`'s `claim`)."""

    operator: str
    account: str
    claimed_at: str | None
    expires_at: str | None
    claimed_ts: float
    """`claimed_at` as UNIX seconds, for "3 min ago" (not in the JSON)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "account": self.account,
            "claimed_at": self.claimed_at,
            "expires_at": self.expires_at,
        }

    def said(self, now: float, *, name_width: int | None = None) -> str:
        """ "claimed by ada, 3 min ago", escaped: how the runs list (the
        console's reason column, `phasegate status`) and the detail say who is
        looking at the run. `name_width` cuts a long name, after escaping, so
        the cut never splits an escape."""
        s = max(0, int(now - self.claimed_ts))
        if s < 60:
            ago = "just now"
        elif s < 3600:
            ago = f"{s // 60} min ago"
        else:
            ago = f"{s // 3600} h {(s % 3600) // 60} min ago"
        name = safe(self.operator)
        if name_width is not None and len(name) > name_width:
            name = name[: name_width - 3] + "..."
        return f"claimed by {name}, {ago}"

    @classmethod
    def from_row(cls, row: Any) -> ClaimView:
        return cls(
            operator=str(row.operator),
            account=str(row.account),
            claimed_at=iso(row.claimed_at),
            expires_at=iso(row.expires_at),
            claimed_ts=float(row.claimed_at),
        )


EventKind = Literal["claim", "release", "takeover", "expiry"]


@dataclass(frozen=True)
class ClaimEvent:
    """One line of a run's claim audit."""

    kind: EventKind
    operator: str
    account: str
    at: str | None
    ts: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "operator": self.operator, "account": self.account, "at": self.at}


@dataclass(frozen=True)
class RunView:
    """Everything `phasegate status --json` prints for one run.

    `blocked`, `env`, `integrity` and `error` are the stored JSON objects as
    written (their shapes are in `shapes.py`), so tools see exactly what the
    engine recorded."""

    run_id: str
    workflow: str
    status: RunStatus
    target: str | None
    inputs: Any
    created_at: float
    updated_at: float
    last_checkpoint_at: float | None
    frontier: Frontier
    phases: tuple[PhaseView, ...]
    blocked: tuple[BlockedReason, ...]
    env: tuple[EnvCheck, ...]
    effects: tuple[EffectView, ...]
    decisions: tuple[DecisionView, ...]
    prune_candidates: tuple[PruneCandidate, ...]
    outputs: tuple[OutputView, ...]
    integrity: tuple[IntegrityReason, ...]
    lease: LeaseView | None
    error: RunError | None
    notes: tuple[str, ...]
    attention: str
    epoch: int = 0
    pending_decisions: tuple[DecisionView, ...] = ()
    runbooks: tuple[dict[str, Any], ...] = ()
    """What the workflow says to do about each reason this run stopped (see `runbooks.for_stop`)."""
    degraded: bool = False
    """Completed, but not whole: a phase was skipped or ran without some of its needs."""
    code_diffs: tuple[CodeDiff, ...] = ()
    """Each code change that blocks the run, as a diff of the stored sources (filled by `Engine.status`)."""
    claim: ClaimView | None = None
    """Who is looking at the run now (`phasegate claim`), filled by `Engine.status`."""
    claims: tuple[ClaimEvent, ...] = ()
    """The run's claim audit: claims, releases, takeovers and expiries."""

    @property
    def proposals(self) -> tuple[DecisionView, ...]:
        """Decisions waiting for a second operator."""
        return tuple(d for d in self.decisions if d.proposed)

    @property
    def needs_attention(self) -> bool:
        return self.status in NEEDS_ATTENTION

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = str(self.status)
        d["prune_candidates"] = [c.as_dict() for c in self.prune_candidates]
        # Added after 0.1: present only when there is something to say, so the
        # JSON of every run without runbooks or a code drift stays byte for byte.
        if self.code_diffs:
            d["code_diffs"] = [c.as_dict() for c in self.code_diffs]
        else:
            del d["code_diffs"]
        if not self.runbooks:
            del d["runbooks"]
        if not self.degraded:
            del d["degraded"]
        d["claim"] = self.claim.to_json() if self.claim is not None else None
        if self.claims:
            d["claims"] = [c.to_json() for c in self.claims]
        else:
            del d["claims"]
        for dec in d["decisions"] + d["pending_decisions"]:
            # Added in format 4, shown only when set (the 0.1 JSON stays byte for byte).
            for key in ("account", "expires_at", "seconded_by", "batch_id", "policy_id"):
                if dec[key] is None:
                    del dec[key]
            if dec["state"] in (PROPOSED, EXPIRED):
                dec["proposer"] = dec["operator"]
        for eff in d["effects"]:
            # Added in format 3, shown only when set (the 0.1 JSON stays byte for byte).
            if eff["reconcile"] is None:
                del eff["reconcile"]
            if not eff["redo_on_rewind"]:
                del eff["redo_on_rewind"]
        if d["lease"] is not None and d["lease"]["state"] != HolderState.STALLED.value:
            del d["lease"]["state"]  # said only when it says more than `alive`
        for k in ("created_at", "updated_at", "last_checkpoint_at"):
            d[k] = iso(d[k])
        return d
