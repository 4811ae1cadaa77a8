"""Pruning: state that served its purpose goes, but only when that is safe.

A candidate is safe for one of two reasons, and says which. Either it has no
future value (a checkpoint output superseded by a later verified one, a
durable step whose phase is checkpointed), or it is exported to an archive
file whose bytes are read back and hash-matched before anything is removed
(outputs that no open phase needs, finished runs past retention).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .. import _json
from . import archive, chain, keys
from .stops import stop_key

Safety = Literal["no_future_value", "archive"]


@dataclass(frozen=True)
class PruneCandidate:
    """Stored data that is safe to remove, and why (`phasegate prune`)."""

    run_id: str
    """The run the data belongs to."""
    what: str
    """What would be removed, for a person ("output of price (checkpoint 0.1)")."""
    bytes: int
    """How much stored data it frees."""
    why_safe: str
    """Why removing it loses nothing a run or an operator needs."""
    safety: Safety
    """How that is known: no future value, or exported to an archive read back and hash-matched."""
    kind: Literal["superseded_output", "step_records", "unneeded_output", "finished_run", "sent_alerts"]
    """superseded_output, step_records, unneeded_output, finished_run or sent_alerts."""
    refs: tuple[int, ...] = field(default=(), compare=False)
    """Row ids (checkpoints, or steps for step_records) the candidate covers."""
    step_refs: tuple[int, ...] = field(default=(), compare=False)
    """For a finished run: the step records removed with it."""
    alert_keys: tuple[str, ...] = field(default=(), compare=False)
    """For sent_alerts: the stop keys of the alert rows removed."""

    def as_dict(self) -> dict[str, Any]:
        """The candidate as `prune --json` and `status --json` print it.

        Returns:
            Its fields, `refs` as a list, without `step_refs`.
        """
        d = asdict(self)
        d["refs"] = list(self.refs)
        del d["step_refs"]
        del d["alert_keys"]
        return d


def candidates(
    run: Any,
    rows: list[Any],
    steps: list[Any],
    *,
    now: float,
    retention_days: float,
    verified: chain.Verified | None = None,
    key: keys.SealKey | None,
) -> list[PruneCandidate]:
    """The candidates of one run, from its own rows only (`verified`: its
    chain already verified by the caller, so it is not hashed twice; else
    verified here under the store's seal `key`)."""
    out: list[PruneCandidate] = []
    if run.lease_owner is not None and run.lease_expires_at is not None and run.lease_expires_at > now:
        return out  # never prune under a live run
    verified = verified if verified is not None else chain.verify_run(run, rows, key=key)
    if verified.failure is not None:
        return out  # a damaged run is evidence for an operator, not garbage
    state = chain.fold(verified.entries)
    current = {d.entry.row.id for d in state.done.values()}
    shape = _json.loads(run.shape_json)
    names = [p["name"] for p in shape]

    # A durable step record is superseded only by an output that can be had
    # now: stored and verifying, or archived and reading back hash-matched.
    # A done phase whose output is lost still has its durable steps as the
    # only record of what they produced: those are evidence, not garbage.
    stepped = {s.phase for s in steps}
    lost = {n for n, d in state.done.items() if n in stepped and archive.why_lost(d.entry) is not None}
    steps = [s for s in steps if s.phase not in lost]

    if run.status == "completed" and run.updated_at < now - retention_days * 86400:
        held = [r for r in rows if r.output_json is not None]
        size = sum(len(r.output_json.encode()) for r in held) + sum(len(s.result_json.encode()) for s in steps)
        if held or steps:
            days = (now - run.updated_at) / 86400
            out.append(
                PruneCandidate(
                    run.run_id,
                    f"run {run.run_id}: {len(held)} checkpoint outputs and {len(steps)} step records",
                    size,
                    f"finished {days:.0f} days ago, past the {retention_days:g}-day retention; exported to an "
                    "archive file that is read back and hash-matched before removal",
                    "archive",
                    "finished_run",
                    tuple(r.id for r in held),
                    tuple(int(s.id) for s in steps),
                )
            )
        return out

    for r in rows:
        if r.output_json is None:
            continue
        if r.id in current:
            continue
        if r.status == "live":
            why = f"superseded by a later verified checkpoint of {r.phase} or by a rewind"
        elif r.status == "discarded":
            why = "discarded by an operator's decision after it failed verification"
        else:
            why = "archived by a reset; the run started over"
        out.append(
            PruneCandidate(
                run.run_id,
                f"output of {r.phase} (checkpoint {r.epoch}.{r.seq})",
                int(r.output_bytes),
                f"no future value: {why}",
                "no_future_value",
                "superseded_output",
                (int(r.id),),
            )
        )

    done_steps = [s for s in steps if s.phase in state.done]
    if done_steps:
        by_phase: dict[str, list[Any]] = {}
        for s in done_steps:
            by_phase.setdefault(s.phase, []).append(s)
        for phase, group in by_phase.items():
            out.append(
                PruneCandidate(
                    run.run_id,
                    f"{len(group)} durable step record(s) of {phase}",
                    sum(len(s.result_json.encode()) for s in group),
                    f"no future value: phase {phase} is checkpointed, and its output holds what the steps produced",
                    "no_future_value",
                    "step_records",
                    tuple(int(s.id) for s in group),
                )
            )

    open_needs: set[str] = set()
    for p in shape:
        if p["name"] not in state.done and p["name"] not in state.skipped:
            open_needs.update(p["needs"])
    last = names[-1] if names else None
    for name, d in state.done.items():
        row = d.entry.row
        if row.output_json is None or name in open_needs or name == last:
            continue
        out.append(
            PruneCandidate(
                run.run_id,
                f"output of {name} (checkpoint {row.epoch}.{row.seq})",
                int(row.output_bytes),
                "no open phase needs it; exported to an archive file that is read back and hash-matched before removal",
                "archive",
                "unneeded_output",
                (int(row.id),),
            )
        )
    return out


def alert_candidates(run: Any, alerts: list[Any]) -> list[PruneCandidate]:
    """A run's alert rows that served their purpose: each was sent, and the
    stop it announced is over (the run's stop now is another, `stops.stop_key`).
    A row being sent, or whose send failed, stays: a watch still needs it so
    as not to send its alert twice, or to say that it failed.

    Args:
        run: The run's row.
        alerts: Its alert rows.

    Returns:
        One candidate covering them, or none.
    """
    current = stop_key(run)
    over = [a for a in alerts if a.state == "sent" and a.stop_key != current]
    if not over:
        return []
    size = sum(len(a.event_json.encode()) for a in over)
    return [
        PruneCandidate(
            run.run_id,
            f"run {run.run_id}: {len(over)} sent alert record(s)",
            size,
            "no future value: each alert was sent and the stop it announced is over",
            "no_future_value",
            "sent_alerts",
            alert_keys=tuple(a.stop_key for a in over),
        )
    ]
