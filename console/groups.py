"""Many runs at once, for the console: the causes, and one decision for a
group of runs (a cause's, or the runs marked in the list). Blocking calls on
the engine's public API, run from worker threads; nothing here imports Textual.

A group decision is previewed run by run (`Engine.preview_many`) and then
recorded for exactly the runs the preview said it fits
(`Engine.decide_many`, one transaction): if any of them changed since, the
engine refuses the whole group and nothing is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from phasegate import NO_RESULT, Cause, Engine

from .actions import BY_NAME, ActionSpec
from .requesting import proposal_words

#: The decisions a group can take (prune is per run, and not a decision).
GROUP_ACTIONS: tuple[str, ...] = ("approve", "degrade", "rewind", "reset", "confirm_effect", "retry_effect")

#: A wrong one of these is expensive to take back for many runs at once: the
#: operator types the number of runs to confirm (a reset discards their work;
#: a retry may call a target that does not deduplicate again, 300 times).
TYPED: dict[str, str] = {
    "reset": "this discards the work of every run",
    "retry_effect": "a retry of a charge that happened charges twice",
}


@dataclass(frozen=True)
class GroupLine:
    """What the decision would do to one run, or why it does not fit it."""

    run_id: str
    """The run."""
    summary: str | None
    """What the decision would do to it (the engine's preview), or None when it does not fit."""
    unfit: str | None = None
    """Why the decision does not fit this run (the engine's refusal), or None when it fits."""


@dataclass(frozen=True)
class GroupChoice:
    """One option (a phase to rewind to), with its per-run preview."""

    value: str | None
    """The value chosen (a phase to rewind to), or None for an action without a choice."""
    label: str
    """How the modal names the option."""
    lines: tuple[GroupLine, ...]
    """The option's preview, run by run."""

    @property
    def fitting(self) -> tuple[str, ...]:
        """The runs this option fits: the ones a confirmation decides."""
        return tuple(ln.run_id for ln in self.lines if ln.unfit is None)


@dataclass(frozen=True)
class GroupRequest:
    """Everything the group modal shows; built off the UI thread."""

    spec: ActionSpec
    """The action the group decides."""
    what: str
    """What the group is: "cause c-... (summary)" or "3 marked runs"."""
    cause: str | None
    """The cause's id when the group is a cause, None for marked runs."""
    choices: tuple[GroupChoice, ...]
    """The options, each with its preview for every run."""
    choose: str = ""
    """What the operator picks among `choices` ("phase"); empty when there is one."""
    default: int = 0
    """The index of the option selected first."""
    typed_why: str = ""
    """Non-empty: the operator types the number of runs to confirm, and why."""
    ask_result: bool = False
    """A confirmation records each effect's result: the operator gives it as JSON."""
    proposal: str = ""
    """Said when the store's policy makes each decision a proposal (`service.proposal_words`)."""


@dataclass(frozen=True)
class GroupResult:
    """What the operator confirmed."""

    spec: ActionSpec
    """The action confirmed."""
    cause: str | None
    """The cause decided, or None for marked runs."""
    run_ids: tuple[str, ...]
    """The runs the preview said it fits: exactly these are decided."""
    reason: str
    """Why, in the operator's words (stored with every decision)."""
    choice: str | None = None
    """The option chosen (a phase to rewind to), if any."""
    result_json: str | None = None
    """A confirmation's result, as the JSON text the operator typed."""


def read_causes(engine: Engine) -> list[Cause]:
    return engine.triage.causes()


def assistant_proposals(engine: Engine, causes: Sequence[Cause]) -> dict[str, tuple[str, ...]]:
    """What AI assistants (`phasegate mcp`) proposed on the runs of each cause,
    a line each ("approve on RUN, decision 4, by mcp:claude-ai: REASON"), by cause id;
    a cause without any is left out. Stored text: the caller escapes it."""
    runs = {r: c.cause for c in causes for r in c.runs}
    out: dict[str, list[str]] = {}
    for run_id, props in engine.oversight.proposals(list(runs)).items():
        for d in props:
            if d.assistant:
                out.setdefault(runs[run_id], []).append(
                    f"{d.action} on {run_id}, decision {d.id}, by {d.operator}: {d.reason}"
                )
    return {k: tuple(v) for k, v in out.items()}


def build_request(engine: Engine, name: str, run_ids: tuple[str, ...], cause: str | None, what: str) -> GroupRequest:
    """The group modal for `name` on these runs (each still of `cause`, when given)."""
    request = _build_request(engine, name, run_ids, cause, what)
    proposal = proposal_words(engine, name, len(run_ids))
    return replace(request, proposal=proposal) if proposal else request


def _build_request(engine: Engine, name: str, run_ids: tuple[str, ...], cause: str | None, what: str) -> GroupRequest:
    spec = BY_NAME[name]
    if name == "rewind":
        # The phases any of them has done, in the order the first shows them.
        phases: list[str] = []
        for rid in run_ids:
            for p in engine.status(rid).phases:
                if p.done and p.name not in phases:
                    phases.append(p.name)
        choices = tuple(GroupChoice(p, p, _lines(engine, name, run_ids, cause, phase=p)) for p in phases) or (
            GroupChoice(None, "", _lines(engine, name, run_ids, cause)),
        )
        return GroupRequest(spec, what, cause, choices, choose="phase" if phases else "", default=len(choices) - 1)
    # A confirmation is previewed with a placeholder result: the operator gives the real one in the modal.
    lines = _lines(engine, name, run_ids, cause, result=None if name == "confirm_effect" else NO_RESULT)
    return GroupRequest(
        spec,
        what,
        cause,
        (GroupChoice(None, "", lines),),
        typed_why=TYPED.get(name, ""),
        ask_result=name == "confirm_effect",
    )


def _lines(
    engine: Engine,
    name: str,
    run_ids: tuple[str, ...],
    cause: str | None,
    *,
    phase: str | None = None,
    result: Any = NO_RESULT,
) -> tuple[GroupLine, ...]:
    out = engine.triage.preview_many(list(run_ids), name, cause=cause, phase=phase, result=result)
    return tuple(GroupLine(ln.run_id, ln.preview.summary if ln.preview else None, ln.unfit) for ln in out)


def apply(engine: Engine, result: GroupResult) -> str:
    """Record the decision for the runs it was previewed to fit; one line saying what landed."""
    name = result.spec.name
    res = engine.triage.decide_many(
        list(result.run_ids),
        name,
        reason=result.reason,
        cause=result.cause,
        phase=result.choice if name == "rewind" else None,
        result=json.loads(result.result_json) if result.result_json is not None else NO_RESULT,
    )
    first = res.decided[0]
    when = {
        "applied": "applied",
        "proposed": "proposed: the store's policy needs a second operator for each run",
    }.get(first.state, "recorded; each applies at its run's next start")
    return f"{first.action} by {first.operator} {when}: {len(res.decided)} run(s), batch {res.batch_id}"
