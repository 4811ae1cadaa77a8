"""The typed views of a run, as an operator sees it: a line of the runs
list (`RunSummary`), and one run in full (`RunView`) with its parts. Frozen
dataclasses: what crosses from the engine to the console and `--json`.
Built from the store alone: a run's by `build.build`, a line by
`RunSummary.from_row`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from .. import _json
from ..assistants import assistant_of
from ..authoring.sources import CodeDiff
from ..history.prune import PruneCandidate
from ..run.frontier import Frontier
from ..run.lease import HolderState
from ..safetext import safe
from ..shapes import BlockedReason, EnvCheck, IntegrityReason, ReconcileAnswer, RunError
from ..states import ActionName, EffectState, PhaseState, RunStatus
from ..timefmt import iso
from .codeview import CodeView
from .liveness import Liveness
from .messages import MessageView
from .progress import ProgressView
from .status import EXPIRED, NEEDS_ATTENTION, PROPOSED, effective_status, status_text


@dataclass(frozen=True)
class RunSummary:
    """One line of the runs list, from the runs table alone."""

    run_id: str
    """The run's id."""
    workflow: str
    """The workflow's name."""
    status: RunStatus
    """Its status as an operator sees it (`interrupted` and `stalled` from the lease, not only the stored status)."""
    frontier_phase: str | None
    """The first phase not yet done; None for a run with no phases left."""
    frontier_index: int
    """That phase's place, from 0."""
    phase_count: int
    """How many phases the workflow has."""
    steps_done: int
    """Steps the frontier phase has recorded."""
    last_checkpoint_at: float | None
    """When the run last checkpointed (UNIX seconds), or None before its first."""
    updated_at: float
    """When the run's row last changed (UNIX seconds)."""
    attention: str
    """The one line the list shows for it: why it stopped, or what it is doing."""
    blocked_kinds: tuple[str, ...]
    """The kinds of the reasons it is blocked for (`integrity`, `env_mismatch`, ...)."""
    pending_decision: bool = False
    """An operator's decision waits to be carried out (at the run's next start)."""
    sort_key: tuple[Any, ...] = ()
    """Its place in the order it was listed in: `Engine.runs(after=...)` pages on from it."""
    liveness: Liveness | None = None
    """The stored status and lease it was judged from, to judge it again (`at`)."""
    waiting_for: str | None = None
    """For a waiting run, what it waits for (`WaitKind`: answer, timer, retry_later, message); else None."""
    prompt: str | None = None
    """For a run waiting for an answer, its question's prompt (as stored); else None."""
    progress: ProgressView | None = None
    """Its running phase's last-known progress (`ctx.progress`), or None."""

    @property
    def needs_attention(self) -> bool:
        """Blocked, failed, interrupted or stalled, or waiting for a person's answer: a person is needed."""
        return self.status in NEEDS_ATTENTION or (self.status is RunStatus.WAITING and self.waiting_for == "answer")

    def at(self, now: float) -> RunSummary:
        """The line with its status judged again at `now`, from the lease it
        was read with (no store read: a lease lapses, a process dies, and
        neither writes anything).

        Args:
            now: UNIX seconds.

        Returns:
            This line, or a copy with the status it has at `now`.
        """
        if self.liveness is None:
            return self
        status = self.liveness.status_at(now)
        return self if status is self.status else replace(self, status=status)

    @property
    def reason(self) -> str:
        """Why it is where it is, as the list's reason column says it."""
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
        not allowed to break the list around it.

        Args:
            row: The damaged row, as the database returned it.
            why: What is wrong with it, for the line's reason.
            sort_key: Its place in the order it was listed in.

        Returns:
            A blocked line (kind `integrity`) naming the damage.
        """
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
        """A line from a row of the runs table.

        Args:
            row: A checked row of the runs table (its JSON columns parse).
            now: The time the status is judged at (UNIX seconds): a lease that
                lapsed by then makes a running run interrupted or stalled.
            sort_key: Its place in the order it was listed in.

        Returns:
            The line.
        """
        # A checked row's reasons are objects, each with a text kind (`_rowcheck`).
        blocked: list[BlockedReason] = _json.loads(row.blocked_json or "[]")
        status = effective_status(row, now)
        waiting_for = prompt = None
        if status is RunStatus.WAITING:
            w = _json.loads(getattr(row, "waiting_json", None) or "{}")
            waiting_for = str(w.get("kind")) if isinstance(w, dict) and w.get("kind") else None
            q = w.get("question") if isinstance(w, dict) else None
            prompt = str(q.get("prompt")) if waiting_for == "answer" and isinstance(q, dict) else None
        return cls(
            run_id=row.run_id,
            workflow=row.workflow,
            status=status,
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
            liveness=Liveness.from_row(row),
            waiting_for=waiting_for,
            prompt=prompt,
            progress=ProgressView.from_row(row),
        )


# The parts of a run's view. Field order is the order `status --json` prints.


@dataclass(frozen=True)
class PhaseView:
    """One phase of a run (`RunView.phases`)."""

    name: str
    """The phase's name."""
    state: PhaseState
    """done, partial, open, failed or degraded."""
    needs: tuple[str, ...]
    """The earlier phases whose outputs it receives."""
    floor: tuple[str, ...]
    """The needs it cannot start without."""
    probes: tuple[str, ...]
    """The probes it reads (declared, or every probe when none are)."""
    missing: tuple[str, ...]
    """Needed outputs the phase ran (or will run) without."""
    steps_done: int | None
    """Steps its checkpoint recorded; None while it is not done."""

    @property
    def done(self) -> bool:
        """Done, whole or degraded: a rewind can re-open it."""
        return self.state in (PhaseState.DONE, PhaseState.DEGRADED)


RESULT_SHOWN = 1024
"""Bytes of an effect's recorded result shown whole; past that, its hash."""


@dataclass(frozen=True)
class EffectView:
    """One effect of a run: an action on the outside world and its record (`RunView.effects`)."""

    name: str
    """The name the phase gave it (`ctx.effect(name, ...)`)."""
    key: str
    """Its stable key, the same on every resume: what an idempotent target deduplicates by."""
    phase: str
    """The phase that calls it."""
    state: EffectState
    """intent (called, or about to be), done, or in_doubt."""
    attempt: int
    """How many times it was called with this key."""
    idempotent: bool
    """The target deduplicates by key, so a resume may call it again."""
    atomic: bool
    """Recorded done in the transaction of the target's own writes: never in doubt."""
    retry_approved: bool
    """An operator's `retry_effect` lets the next start call it again."""
    intent_at: str | None
    """When its intent was committed (ISO 8601), or None."""
    done_at: str | None
    """When its completion was committed, or None."""
    confirmed_by: int | None
    """The decision that confirmed it by hand (`confirm_effect`), or None."""
    reconcile: ReconcileAnswer | None = None
    """The last answer of its reconcile hook (answer, why, at), if it was asked."""
    redo_on_rewind: bool = False
    """A rewind or reset that re-opens its phase gives it a new key, so the target acts again."""
    result_text: str | None = None
    """Its recorded result as stored JSON text, when done and at most
    `RESULT_SHOWN` bytes (`status --json` prints it parsed, as `result`)."""
    result_hash: str | None = None
    """The SHA-256 of a recorded result larger than that (its value is left out)."""


@dataclass(frozen=True)
class DecisionView:
    """One decision recorded on a run, or a row of its audit (`RunView.decisions`)."""

    id: int
    """The decision's number in the store (what `decide second --decision N` names)."""
    action: ActionName | str
    """One of the actions; "prune" for the audit row of a prune, "second" for
    the row that seconded a proposal."""
    operator: str
    """Who decided, as they named themselves (`--operator`, `$PHASEGATE_OPERATOR`, the login name)."""
    reason: str
    """Why, in their words."""
    at: str | None
    """When it was recorded (ISO 8601)."""
    state: str
    """pending, applied or void."""
    phase: str | None
    """For a rewind: the phase to re-run from."""
    effect: str | None
    """For confirm_effect and retry_effect: the effect's key."""
    answers: str | None
    """The stop it answered, as a one-line summary."""
    applied_at: str | None
    """When the run carried it out, or None while it waits."""
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

    @property
    def assistant(self) -> bool:
        """Recorded by an AI assistant through `phasegate mcp` (always a proposal,
        which only a person's second makes take effect)."""
        return assistant_of(self.operator, self.account) is not None

    batch_id: str | None = None
    """Shared by the decisions one command recorded for a group of runs (`decide --cause`)."""
    policy_id: int | None = None
    """The policy change in force when it was made (`phasegate policy --show --all` lists it; version 5)."""


@dataclass(frozen=True)
class OutputView:
    """One stored phase output (`RunView.outputs`)."""

    phase: str
    """The phase whose output it is."""
    seq: int
    """The checkpoint's place in the run's chain."""
    bytes: int
    """Its stored size."""
    hash: str | None
    """The SHA-256 of its canonical JSON, whole (the screen shows 12 hex characters)."""
    state: str
    """present, pruned, archived, or lost (present but not verifying)."""
    verified: bool
    """Its bytes matched its hash when the view was built."""


@dataclass(frozen=True)
class LeaseView:
    """Who holds a run's lease now (`RunView.lease`)."""

    holder: str
    """The process holding the run (`host:pid`)."""
    expires_at: str | None
    """When the lease lapses unless renewed (ISO 8601)."""
    alive: bool
    """The holder still holds it: unexpired, and on this host its process is alive."""
    heartbeat_at: str | None
    """The holder's last renewal."""
    state: HolderState = HolderState.LIVE
    """live, stalled (alive on this host, past its lease) or gone."""
    liveness: Liveness | None = None
    """The stored status and lease columns it was judged from (not in the JSON; `RunView.at`)."""


def _waiting_json(waiting: dict[str, Any]) -> dict[str, Any]:
    """A run's wait as `status --json` shows it: times ISO 8601."""
    out = {**waiting, "until": iso(waiting.get("until")) if isinstance(waiting.get("until"), int | float) else None}
    if "since" in waiting:  # a message's wait (`ctx.recv`): when it began
        out["since"] = iso(waiting["since"]) if isinstance(waiting["since"], int | float) else None
    q = waiting.get("question")
    if isinstance(q, dict):
        out["question"] = {
            **q,
            "asked_at": iso(q.get("asked_at")) if isinstance(q.get("asked_at"), int | float) else None,
            "deadline": iso(q.get("deadline")) if isinstance(q.get("deadline"), int | float) else None,
        }
    return out


@dataclass(frozen=True)
class QuestionView:
    """A question a run asked (`ctx.ask`), and its answer (`RunView.questions`)."""

    name: str
    """The question's name: how an operator answers it (`--question NAME`)."""
    phase: str
    """The phase that asked it."""
    prompt: str
    """What the person reads."""
    schema: dict[str, Any] | None
    """The JSON Schema the answer must meet, or None for any JSON value."""
    payload: Any
    """What the run shows with the question (the tool call to approve), as stored."""
    asked_at: float
    """When it was first asked (UNIX seconds; ISO 8601 in the JSON)."""
    deadline: float | None
    """When `NoAnswer` is raised in the phase if nobody answered, or None."""
    state: Literal["open", "answered", "timed_out"]
    """open (waiting for a person), answered, or timed_out (the phase was told `NoAnswer`)."""
    answer: Any = None
    """The answer recorded, once answered."""
    answered_by: str | None = None
    """Who answered it."""
    decision: int | None = None
    """The answer's decision id."""

    def to_json(self) -> dict[str, Any]:
        """As `status --json` prints it.

        Returns:
            Every field, times as ISO 8601.
        """
        d = asdict(self)
        d["asked_at"] = iso(self.asked_at)
        d["deadline"] = iso(self.deadline)
        return d


@dataclass(frozen=True)
class ClaimView:
    """The claim on a run now (`status --json`'s `claim`)."""

    operator: str
    """Who claimed the run, as they named themselves."""
    account: str
    """The OS account they claimed it from."""
    claimed_at: str | None
    """When (ISO 8601)."""
    expires_at: str | None
    """When the claim lapses unless renewed (`PHASEGATE_CLAIM_SECONDS` after it was made)."""
    claimed_ts: float
    """`claimed_at` as UNIX seconds, for "3 min ago" (not in the JSON)."""

    def to_json(self) -> dict[str, Any]:
        """The claim as `status --json` prints it.

        Returns:
            `operator`, `account`, `claimed_at` and `expires_at`.
        """
        return {
            "operator": self.operator,
            "account": self.account,
            "claimed_at": self.claimed_at,
            "expires_at": self.expires_at,
        }

    def said(self, now: float, *, name_width: int | None = None) -> str:
        """ "claimed by ada, 3 min ago", escaped: how the runs list (the
        console's reason column, `phasegate status`) and the detail say who is
        looking at the run.

        Args:
            now: The time to say "3 min ago" from (UNIX seconds).
            name_width: Cut a longer name to this many characters, after
                escaping, so the cut never splits an escape; None: whole.

        Returns:
            The phrase, safe to print.
        """
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
        """A claim from its row of the claims table.

        Args:
            row: A row of `phasegate_claims`.

        Returns:
            The claim.
        """
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
    """claim, release, takeover or expiry."""
    operator: str
    """Who, as they named themselves."""
    account: str
    """Their OS account."""
    at: str | None
    """When (ISO 8601)."""
    ts: float
    """`at` as UNIX seconds, for ordering (not in the JSON)."""

    def to_json(self) -> dict[str, Any]:
        """The event as `status --json`'s `claims` prints it.

        Returns:
            `kind`, `operator`, `account` and `at`.
        """
        return {"kind": self.kind, "operator": self.operator, "account": self.account, "at": self.at}


@dataclass(frozen=True)
class RunView:
    """Everything `phasegate status --json` prints for one run.

    `blocked`, `env`, `integrity` and `error` are the stored JSON objects as
    written (their shapes are in `shapes.py`), so tools see exactly what the
    engine recorded."""

    run_id: str
    """The run's id."""
    workflow: str
    """The workflow's name."""
    status: RunStatus
    """Its status as an operator sees it (`interrupted` and `stalled` from the lease)."""
    target: str | None
    """Where its workflow is loaded from (`file.py:NAME` or `package.module:NAME`), or None."""
    inputs: Any
    """Its original inputs, as given."""
    created_at: float
    """When the run was created (UNIX seconds; ISO 8601 in the JSON)."""
    updated_at: float
    """When its row last changed."""
    last_checkpoint_at: float | None
    """When it last checkpointed, or None before its first."""
    frontier: Frontier
    """The first phase not yet done: where a resume picks up."""
    phases: tuple[PhaseView, ...]
    """Each phase, in declaration order."""
    blocked: tuple[BlockedReason, ...]
    """Why it is blocked, one reason each, as stored."""
    env: tuple[EnvCheck, ...]
    """Each environment check: the probe, its saved and current values, whether it changed."""
    effects: tuple[EffectView, ...]
    """Each effect, in the order it was first called."""
    decisions: tuple[DecisionView, ...]
    """Every decision, oldest first (the run's audit)."""
    prune_candidates: tuple[PruneCandidate, ...]
    """What `phasegate prune` would remove, and why it is safe."""
    outputs: tuple[OutputView, ...]
    """Each stored phase output."""
    integrity: tuple[IntegrityReason, ...]
    """What verification found wrong (empty when sound)."""
    lease: LeaseView | None
    """Its holder now, or None."""
    error: RunError | None
    """For a failed run: the phase, the exception, its message and last frames, and each failed attempt."""
    notes: tuple[str, ...]
    """Lines worth knowing that are not a stop (a probe that changed before any phase read it, a retry)."""
    attention: str
    """The one line the runs list shows for it."""
    epoch: int = 0
    """How many times it was reset."""
    pending_decisions: tuple[DecisionView, ...] = ()
    """The decisions recorded and not yet carried out."""
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
    waiting: dict[str, Any] | None = None
    """For a waiting run, what it waits for: `kind` (answer, timer,
    retry_later or message), `until` (when a worker wakes it, or None),
    `phase`, and by kind `question`, the timer's `name`, the rate limit's
    `reason`, `step` and `attempt` of `of`, or the message's `topic`,
    `schema` and `since`."""
    held: dict[str, Any] | None = None
    """An operator's hold: `action` (pause or cancel), `state` (asked of a
    running run, or in_force), `by`, `reason`, `at`."""
    questions: tuple[QuestionView, ...] = ()
    """Every question the run asked, open or answered, oldest first."""
    messages: tuple[MessageView, ...] = ()
    """Every message sent into the run (`phasegate send`), oldest first, with what became of it."""

    trace_id: str | None = None
    """The OpenTelemetry trace id of its latest traced attempt (32 hex digits), or None."""
    code: CodeView | None = None
    """The code version it started under and its latest attempt's (schema
    version 8; None for a run started before)."""
    progress: ProgressView | None = None
    """Its running phase's last-known progress (`ctx.progress`), or None:
    kept through a kill, cleared when the phase checkpoints."""

    @property
    def asking(self) -> QuestionView | None:
        """The open question a waiting run waits for an answer to, if any."""
        if self.status is not RunStatus.WAITING or not self.waiting or self.waiting.get("kind") != "answer":
            return None
        q = self.waiting.get("question")
        name = q.get("name") if isinstance(q, dict) else None  # a stored record: not always one this engine wrote
        return next((q for q in self.questions if q.name == name and q.state == "open"), None)

    @property
    def proposals(self) -> tuple[DecisionView, ...]:
        """Decisions waiting for a second operator."""
        return tuple(d for d in self.decisions if d.proposed)

    def at(self, now: float) -> RunView:
        """The view with its status and holder judged again at `now`, from
        the lease it was read with (no store read). What else a holder's death
        changes (an effect in flight becoming in doubt) needs a fresh read: a
        caller that sees the status move reads the run again.

        Args:
            now: UNIX seconds.

        Returns:
            This view, or a copy with the status and lease state of `now`.
        """
        lease = self.lease
        if lease is None or lease.liveness is None:
            return self
        status, held = lease.liveness.status_at(now), lease.liveness.holder_at(now)
        if status is self.status and held is lease.state:
            return self
        fresh = replace(lease, state=held, alive=held is HolderState.LIVE)
        return replace(self, status=status, lease=fresh, attention=status_text(status, self.attention))

    @property
    def needs_attention(self) -> bool:
        """Blocked, failed, interrupted or stalled: a person is needed."""
        return self.status in NEEDS_ATTENTION

    def to_json(self) -> dict[str, Any]:
        """The run as `phasegate status RUN --json` prints it.

        Returns:
            Every field, times as ISO 8601; the fields added after 0.1 only
            when they have something to say (docs/reference/json.md).
        """
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
        if self.trace_id is None:
            del d["trace_id"]  # added after 0.2: only for a run that was traced
        # Added with issue 41: only for a run whose attempts recorded their code.
        if self.code is None:
            del d["code"]
        else:
            d["code"] = self.code.to_json()
        # Added with issue 42, always present (null: nothing reported, or the phase ended).
        d["progress"] = self.progress.to_json() if self.progress is not None else None
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
            if assistant_of(dec["operator"], dec.get("account")) is not None:
                dec["assistant"] = True  # added with issue 39: shown only when true
        for eff in d["effects"]:
            # Added in format 3, shown only when set (the 0.1 JSON stays byte for byte).
            if eff["reconcile"] is None:
                del eff["reconcile"]
            if not eff["redo_on_rewind"]:
                del eff["redo_on_rewind"]
            # Added with issue 28, shown only when recorded: what the effect returned.
            text = eff.pop("result_text")
            if text is not None:
                eff["result"] = _json.loads(text)
            if eff["result_hash"] is None:
                del eff["result_hash"]
        if d["lease"] is not None:
            del d["lease"]["liveness"]  # the inputs of `alive` and `state`, already said
            if d["lease"]["state"] != HolderState.STALLED.value:
                del d["lease"]["state"]  # said only when it says more than `alive`
        for k in ("created_at", "updated_at", "last_checkpoint_at"):
            d[k] = iso(d[k])
        # Added with format 6 (waits and holds): present only when there is something to say.
        if self.waiting is None:
            del d["waiting"]
        else:
            d["waiting"] = _waiting_json(self.waiting)
        held = d.pop("held")
        if held is not None:
            held = {**held, "at": iso(held.get("at"))}
            key = {"asked": "hold_asked"}.get(
                str(held.get("state")), "paused" if held["action"] == "pause" else "cancelled"
            )
            d[key] = held
        if self.questions:
            d["questions"] = [q.to_json() for q in self.questions]
        else:
            del d["questions"]
        if self.messages:  # added with format 8: only for a run that was sent messages
            d["messages"] = [m.to_json() for m in self.messages]
        else:
            del d["messages"]
        return d
