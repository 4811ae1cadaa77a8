"""How the commands print what they read: a run's outcome, the runs list,
the causes, a run's view and its code diffs, a decision's preview.

Everything shown here may come from the store, so every value goes through
`safetext.safe` on its way to the terminal.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..authoring.sources import CodeDiff, printable
from ..errors import ExitCode
from ..outcome import Outcome
from ..safetext import safe, safe_json
from ..states import RunStatus
from ..timefmt import iso
from ..views.models import ClaimView, RunSummary, RunView

if TYPE_CHECKING:
    from ..decide.causes import Cause
    from ..decide.preview import Preview
    from ..views.patches import PatchReport


#: How the command line names each option an error is about
#: (`PhasegateError.options`, by the names the API takes them).
FLAGS: dict[str, str] = {
    "phase": "--phase NAME",
    "effect": "--effect KEY",
    "result": "--result JSON",
    "expect_env": "--expect-env HASH",
    "question": "--question NAME",
    "value": "--value JSON",
    "force": "--force",
    "dry_run": "--dry-run",
    "skip_unfit": "--skip-unfit",
    "operator": "--operator NAME",
    "reason": "--reason TEXT",
}


def with_flags(message: str, options: Sequence[str]) -> str:
    """An error's words with the flags of the options it is about: the core
    says "rewind needs the phase to re-run from", the command line adds
    "(--phase NAME)", so its user knows what to type.

    Args:
        message: The error's words (`PhasegateError.message`).
        options: The options it is about (`PhasegateError.options`).

    Returns:
        The message, followed by the options' flags in brackets when it names any.
    """
    flags = [FLAGS.get(o, "--" + o.replace("_", "-")) for o in options]
    return f"{message} ({', '.join(flags)})" if flags else message


def print_outcome(o: Outcome) -> int:
    """One line for how a run ended (a line more per block reason); the exit code it means."""
    # Every value below may come from the store: shown through `safe`.
    rid = safe(o.run_id)
    if o.status == "completed":
        print(f"{rid}: completed" + (f" (degraded): {safe(o.degraded)}" if o.degraded else ""))
        return ExitCode.OK
    if o.status == "blocked":
        print(f"{rid}: blocked")
        for r in o.blocked:
            print(f"  {r.kind}: {safe(r.detail)}")
        return ExitCode.BLOCKED
    if o.status == "interrupted":
        print(f"{rid}: interrupted: {safe(o.stopped or 'stopped')}; resume it")
        return ExitCode.INTERRUPTED
    if o.status == "waiting":
        print(f"{rid}: {safe(o.stopped or 'waiting')}; a worker resumes it")
        return ExitCode.WAITING
    if o.status in ("paused", "cancelled"):
        print(f"{rid}: {safe(o.stopped or o.status)}")
        return ExitCode.WAITING if o.status == "paused" else ExitCode.CANCELLED
    err = o.error or {}
    print(f"{rid}: failed in phase {safe(err.get('phase'))}: {safe(err.get('type'))}: {safe(err.get('message'))}")
    return ExitCode.FAILED


#: How much of a claimer's name the list shows (escaped first): a claim note
#: stays short whatever name was stored.
_CLAIMER_WIDTH = 24


def print_runs(rows: Sequence[RunSummary], held: Mapping[str, ClaimView], now: float) -> int:
    """The runs list, a run a line, a claim on it first in its reason."""
    if not rows:
        print("no runs")
    for r in rows:
        fr = f"{r.frontier_index}/{r.phase_count} {r.frontier_phase or '-'}"
        fr = safe(fr)
        reason = safe(r.reason)
        claim = held.get(r.run_id)
        if claim is not None:
            # First in the reason, as the console's runs list says it.
            said = claim.said(now, name_width=_CLAIMER_WIDTH)
            reason = f"{said}; {reason}" if reason else said
        print(f"{safe(r.run_id):<32} {safe(r.workflow):<16} {r.status_label:<12} {fr:<20} {reason}")
    return ExitCode.OK


#: Runs named per cause in the text listing; `--json` names them all.
_RUNS_SHOWN = 5


def print_causes(causes: Sequence[Cause], *, as_json: bool) -> int:
    """`status --by-cause`: each cause, the runs it holds and the actions that fit them all."""
    if as_json:
        print(safe_json(json.dumps([c.to_json() for c in causes], indent=2, ensure_ascii=False)))
        return ExitCode.OK
    if not causes:
        print("no runs need attention")
        return ExitCode.OK
    for c in causes:
        n = len(c.runs)
        print(f"{c.cause}  {c.kind.value:<15} {n:>5} run{'s' if n != 1 else ' '}  {safe(', '.join(c.workflows))[:30]}")
        for line in textwrap.wrap(safe(c.summary), width=76) or [""]:
            print(f"    {line}")
        shown = ", ".join(safe(r) for r in c.runs[:_RUNS_SHOWN]) + (
            f", and {n - _RUNS_SHOWN} more" if n > _RUNS_SHOWN else ""
        )
        for i, line in enumerate(textwrap.wrap(shown, width=70)):
            print(f"    {'runs: ' if i == 0 else '      '}{line}")
        acts = ", ".join(a.value for a in c.allowed_actions) or "none (nothing fits every run)"
        print(f"    fits: {acts}")
    total = sum(len(c.runs) for c in causes)
    print(f"{len(causes)} cause{'s' if len(causes) != 1 else ''}, {total} run{'s' if total != 1 else ''}")
    print("decide one: phasegate decide --cause CAUSE ACTION --reason TEXT [--dry-run]")
    return ExitCode.OK


def print_patch(report: PatchReport, *, as_json: bool) -> int:
    """`status --patch ID`: the live runs on the old path of a patch, and those that may still take it."""
    if as_json:
        print(safe_json(json.dumps(report.to_json(), indent=2, ensure_ascii=False)))
        return ExitCode.OK
    pid = safe(report.patch)
    old, unseen = report.old_path, report.not_reached
    print(f"patch {pid}: {len(old)} live run{'s' if len(old) != 1 else ''} take the old path")
    for r in old:
        mark = "  (its record does not verify)" if r.run_id in report.damaged else ""
        print(f"  {safe(r.run_id)}  {r.status:<11} phase {safe(r.phase or '-')}  ({safe(r.workflow)}){mark}")
    print(f"{report.new_path} live run{'s' if report.new_path != 1 else ''} took the new path")
    if unseen:
        print(f"{len(unseen)} live run{'s' if len(unseen) != 1 else ''} of its workflows have not reached it yet:")
        for r in unseen[:_RUNS_SHOWN]:
            print(f"  {safe(r.run_id)}  {r.status:<11} at {safe(r.phase or '-')}  ({safe(r.workflow)})")
        if len(unseen) > _RUNS_SHOWN:
            print(f"  and {len(unseen) - _RUNS_SHOWN} more (--json lists them all)")
    if report.old_path_can_go:
        print("no live run takes or may take the old path: it can go (ctx.deprecated_patch marks the place)")
    else:
        print("keep the old path until none is left (a run that has not reached the patch may take it)")
    return ExitCode.OK


def print_view(v: RunView, now: float | None = None) -> None:
    """`status RUN`: a run's view, a labelled line per fact.

    Args:
        v: The run's view.
        now: When it was read (UNIX seconds), for the heartbeat's age; None: now.
    """
    # Everything here was read from the store: each value goes through `safe`.
    print(f"run       {safe(v.run_id)}  ({safe(v.workflow)})")
    print(f"status    {v.status.value}" + (f"  - {safe(v.attention)}" if v.attention else ""))
    live = v.lease.liveness if v.lease is not None else None
    if live is not None and live.status == RunStatus.RUNNING.value:
        # Who holds it and how lately it renewed: the README's word for "is it alive".
        print(f"holder    {safe(live.said(time.time() if now is None else now))}")
    fr = v.frontier
    print(f"frontier  {fr.index}/{fr.of} {safe(fr.phase)} ({fr.steps_done} steps done)")
    if v.progress is not None:
        # `said` escapes the stored phase name and message (views/progress.py).
        at = time.time() if now is None else now
        pace = v.progress.pace()
        mark = "  [stalled]" if v.progress.stalled(v.status, at) else ""
        print(f"progress  {v.progress.said()}" + (f"  ({pace})" if pace else "") + mark)
    print("phases    " + "  ".join(f"{safe(p.name)}:{p.state}" for p in v.phases))
    if v.code is not None:
        # Which code started the run and which code its latest attempt ran (escaped by `said`).
        print(f"code      {v.code.said()}")
    for b in v.blocked:
        print(f"blocked   {safe(b['kind'])}: {safe(b['detail'])}")
    _print_waits(v)
    if v.error:
        # The status line above is shortened; the error is shown whole.
        e = v.error
        print(f"error     in {safe(e.get('phase'))}: {safe(e.get('type'))}: {safe(e.get('message'))}")
    for n in v.notes:
        print(f"note      {safe(n)}")
    for ef in v.effects:
        if ef.state != "done":
            print(f"effect    {ef.state:<9} {safe(ef.key)}")
            if ef.reconcile is not None:
                print(f"reconcile {safe(ef.reconcile.get('answer'))}: {safe(ef.reconcile.get('why', ''))}")
    for c in v.prune_candidates:
        print(f"prunable  {safe(c.what)} ({c.bytes} B): {safe(c.why_safe)}")
    held = v.claim
    if held is not None:
        print(
            f"claimed   by {safe(held.operator)} (account {safe(held.account)}) since {held.claimed_at},"
            f" until {held.expires_at}"
        )
    for d in v.decisions:
        batch = f" (batch {safe(d.batch_id)})" if d.batch_id else ""
        by = " (AI assistant)" if d.assistant else ""
        print(f"decision  {d.at} {safe(d.operator)}{by} {d.action} [{d.state}]{batch}: {safe(d.reason)}")
        if d.proposed:
            who = (
                "a person's second (an AI assistant proposed it)"
                if d.assistant
                else "a second operator (another account)"
            )
            print(
                f"          waiting for {who} until {d.expires_at}:"
                f" phasegate decide {safe(v.run_id)} second --decision {d.id} --reason ..."
            )
    for ev in v.claims:
        print(f"claim     {ev.at} {ev.kind} by {safe(ev.operator)} (account {safe(ev.account)})")
    for r in v.runbooks:
        where = f" in {safe(r['phase'])}" if r.get("phase") else ""
        print(f"runbook   {safe(r['kind'])}{where}: {printable(r['runbook'])}")


def _json_line(value: object) -> str:
    """A stored value as one line of JSON, its text through the safe-text rule."""
    return safe_json(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _print_waits(v: RunView) -> None:
    """What a waiting run waits for, an operator's hold, and the questions it asked."""
    w = v.waiting or {}
    until = w.get("until")
    when = iso(until) if isinstance(until, int | float) else None
    if w.get("kind") == "timer":
        print(f"waiting   timer {safe(w.get('name'))} until {when}; a worker resumes it then")
    elif w.get("kind") == "retry_later":
        tried = f" (attempt {w.get('attempt')} of {w.get('of')})" if w.get("attempt") else ""
        print(f"waiting   until {when}: rate limited: {safe(w.get('reason'))}{tried}; a worker retries it then")
    elif w.get("kind") == "message":
        deadline = f"; none by {when} raises NoAnswer" if when else ""
        print(f"waiting   a message on topic {safe(w.get('topic'))} (phase {safe(w.get('phase'))}){deadline}")
        if w.get("schema") is not None:
            print(f"schema    {_json_line(w.get('schema'))[:400]}")
        print(f"          send: phasegate send {safe(v.run_id)} {safe(w.get('topic'))} --value JSON --reason ...")
    for m in v.messages:
        where = f" by {safe(m.phase)}" if m.phase else ""
        said = {"delivered": f"delivered{where}", "refused": f"refused{where}: {safe(m.refused)}"}.get(m.state, m.state)
        print(
            f"message   {m.id} on {safe(m.topic)} from {safe(m.operator)} at {iso(m.at)} {said}:"
            f" {_json_line(m.value)[:200]} ({safe(m.reason)[:100]})"
        )
    for q in v.questions:
        if q.state == "open":
            deadline = f"; no answer by {iso(q.deadline)} raises NoAnswer" if q.deadline is not None else ""
            print(f"question  {safe(q.name)} (phase {safe(q.phase)}): {safe(q.prompt)}{deadline}")
            if q.payload is not None:
                print(f"payload   {_json_line(q.payload)[:400]}")
            if q.schema is not None:
                print(f"schema    {_json_line(q.schema)[:400]}")
            print(
                f"          answer: phasegate decide {safe(v.run_id)} answer --question {safe(q.name)}"
                " --value JSON --reason ..."
            )
        else:
            said = (
                f"answered by {safe(q.answered_by)}: {_json_line(q.answer)[:200]}"
                if q.state == "answered"
                else "timed out"
            )
            print(f"question  {safe(q.name)} (phase {safe(q.phase)}) {said}")
    h = v.held
    if h:
        verb = "paused" if h.get("action") == "pause" else "cancelled"
        at = iso(h.get("at")) if isinstance(h.get("at"), int | float) else None
        if h.get("state") == "asked":
            print(
                f"stopping  a {safe(h.get('action'))} asked by {safe(h.get('by'))} at {at}: it stops at its next step"
            )
        elif verb == "paused":
            print(f"paused    by {safe(h.get('by'))} at {at}: {safe(h.get('reason'))}")
            print(f"          phasegate unpause {safe(v.run_id)} --reason ... lets it go on")
        else:
            print(f"cancelled by {safe(h.get('by'))} at {at}: {safe(h.get('reason'))} (final)")


def print_diffs(diffs: Sequence[CodeDiff]) -> None:
    """`status RUN --diff`: the code changes behind a drift, saved against current."""
    if not diffs:
        print("no code change blocks this run")
    for d in diffs:
        print()
        print(f"code of {safe(d.phase)} changed; ran the old code: {safe(', '.join(d.ran_old_code))}")
        if d.missing:
            print(f"  no stored source for {safe(', '.join(d.missing))} (written before phasegate kept sources)")
        for line in d.lines:
            print(line)


def print_preview(pv: Preview, head: str = "", indent: str = "  ") -> None:
    """What a decision would do (`decide --dry-run`), for one run or as one run of a group."""
    print(head + safe(pv.summary))
    for label, items in (
        ("accepts", pv.accepts),
        ("re-runs", pv.rerun),
        ("may call again", pv.effects_again),
        ("sets aside", pv.discarded),
        ("keeps", pv.kept),
    ):
        if items:
            print(f"{indent}{label}: {safe(', '.join(items))}")
    if pv.env_hash:
        print(f"{indent}env hash: {pv.env_hash} (decide ... --expect-env {pv.env_hash} refuses if the world moved)")


def overrides(held: ClaimView, now: float, indent: str) -> str:
    """A dry run's word on someone else's claim that --force overrides."""
    return f"{indent}--force overrides: {held.said(now, name_width=_CLAIMER_WIDTH)}"
