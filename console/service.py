"""The console's only door to the store: blocking calls on the engine's public
API, run from worker threads. Nothing here imports Textual."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

from phasegate import (
    Action,
    ClaimView,
    DecisionView,
    Engine,
    PhasegateError,
    Preview,
    RunStatus,
    RunSummary,
    RunView,
    UsageError,
)
from phasegate.ops import correctable_effects, new_private_file, safe

from ._format import size
from .actions import BY_NAME, ActionRequest, ActionResult, Choice

#: The status filter cycle: label -> stored statuses to ask for (None = all).
STATUS_FILTERS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("all", None),
    # "waiting" for the runs waiting for an answer (a timer's are dropped below).
    ("needs attention", ("blocked", "failed", "running", "waiting")),
    ("blocked", ("blocked",)),
    ("running", ("running",)),
    ("failed", ("failed",)),
    ("completed", ("completed",)),
)


@dataclass(frozen=True)
class StartAt:
    """A deep link: the run whose detail opens first, and the list's filters."""

    run_id: str | None = None
    filter_index: int = 0
    text: str = ""


def show_index(name: str) -> int:
    """`--show NAME` -> a status filter; one clear error for anything else."""
    want = name.strip().lower().replace("-", " ").replace("_", " ")
    if want == "attention":
        want = "needs attention"
    for i, (label, _statuses) in enumerate(STATUS_FILTERS):
        if label == want:
            return i
    raise UsageError(f"--show {name!r}: one of {', '.join(label.replace(' ', '-') for label, _s in STATUS_FILTERS)}")


def start_at(engine: Engine, run_id: str | None, show: str | None, text: str | None) -> StartAt:
    """Check a deep link before the screen takes the terminal: a run that is
    not there is one line on stderr, not an empty detail."""
    if run_id is not None:
        engine.status(run_id)  # raises RunNotFound
    return StartAt(run_id, show_index(show) if show is not None else 0, (text or "").strip())


@dataclass(frozen=True)
class RunsPage:
    rows: list[RunSummary]
    offset: int
    """Where the page starts in the list (kept by the screen as it pages; a
    change before it since is not counted)."""
    fetched: int
    """Rows the store returned (before dropping live/dead runs the filter excludes)."""
    total: int
    counts: dict[str, int]
    workers: int | None = None
    """Workers alive now (by their heartbeats), read with the page."""
    has_previous: bool = False
    has_next: bool = False
    first_key: tuple[Any, ...] | None = None
    """The sort key of the page's first row as read: a reload starts there."""
    last_key: tuple[Any, ...] | None = None
    """The sort key of its last row as read: the next page starts after it."""
    claims: dict[str, ClaimView] = field(default_factory=dict)
    """Who is looking at the page's runs: one query by the page's run ids."""
    proposals: dict[str, list[DecisionView]] = field(default_factory=dict)
    """Decisions of the page's runs waiting for a second operator (one query too)."""


def workers_alive(engine: Engine) -> int:
    """How many `phasegate worker` processes are alive (`phasegate workers`)."""
    return sum(1 for w in engine.workers() if w.alive)


#: Which page to read: the first; the one after `anchor`; the one before it;
#: the same page again (from `anchor`, inclusive); the last.
Where = Literal["first", "next", "previous", "reload", "last"]


def read_page(
    engine: Engine,
    *,
    limit: int,
    filter_index: int,
    text: str,
    order: str,
    where: Where = "first",
    anchor: tuple[Any, ...] | None = None,
    offset: int = 0,
) -> RunsPage:
    """One page of the runs list, by keyset (`Engine.runs(after=...)`): the
    last page costs what the first does. `offset` is where the caller's page
    was; the page read says where it is."""
    label, statuses = STATUS_FILTERS[filter_index]
    texts = text or None
    total = engine.count_runs(statuses=statuses, text=texts)
    if anchor is None and where in ("next", "previous", "reload"):
        where = "first"
    if where == "last":
        # The last page holds what is left after whole pages, as an offset would.
        size = total - (total - 1) // limit * limit if total else limit
        rows = engine.runs(limit=size, statuses=statuses, text=texts, order=order, backward=True)
        has_previous, has_next, start = len(rows) < total, False, max(0, total - len(rows))
    elif where == "previous":
        rows = engine.runs(limit=limit + 1, statuses=statuses, text=texts, order=order, after=anchor, backward=True)
        has_previous = len(rows) > limit
        rows = rows[-limit:] if has_previous else rows
        has_next, start = True, max(0, offset - len(rows)) if has_previous else 0
    else:
        rows = engine.runs(
            limit=limit + 1,
            statuses=statuses,
            text=texts,
            order=order,
            after=anchor if where != "first" else None,
            inclusive=where == "reload",
        )
        has_next = len(rows) > limit
        rows = rows[:limit]
        start = {"first": 0, "next": offset, "reload": offset}[where]
        has_previous = start > 0
    fetched = len(rows)
    first_key = rows[0].sort_key if rows else None
    last_key = rows[-1].sort_key if rows else None
    # Stored "running" covers both live runs and interrupted ones (a dead
    # holder); the engine tells them apart with the clock, so this filter does.
    if label == "needs attention":
        rows = [r for r in rows if r.needs_attention]
    elif label == "running":
        rows = [r for r in rows if r.status is RunStatus.RUNNING]
    ids = [r.run_id for r in rows]
    return RunsPage(
        rows,
        start,
        fetched,
        total,
        engine.counts(),
        workers_alive(engine),
        has_previous,
        has_next,
        first_key,
        last_key,
        engine.oversight.claims(ids),
        engine.oversight.proposals(ids),
    )


def waiting_words(proposals: list[DecisionView]) -> str:
    """The runs list's words for a run's proposals: "waiting for a second operator: reset by ada"."""
    said = ", ".join(f"{d.action} by {d.operator}" for d in proposals)
    return f"waiting for a second operator: {said}" if said else ""


HOLDS: tuple[str, ...] = ("pause", "unpause", "cancel")
"""The operator's holds on a run: they fit a running run too (it stops at its next step)."""


def allowed(engine: Engine, view: RunView) -> list[str]:
    """The console actions that fit this run now (decisions, holds, prune)."""
    names = [str(a) for a in engine.allowed_actions(view)] if view.status is not RunStatus.RUNNING else []
    for hold in HOLDS:
        try:
            engine.preview(view, hold)
        except PhasegateError:
            continue
        names.append(hold)
    if view.status is RunStatus.RUNNING:
        return names
    if secondable(engine, view):
        names.append("second")
    if view.prune_candidates:
        names.append("prune")
    return names


def secondable(engine: Engine, view: RunView) -> list[DecisionView]:
    """The proposals on this run that this console's operator may second."""
    return engine.oversight.secondable(view)


def claimed_by_other(engine: Engine, view: RunView) -> bool:
    """Someone else claimed the run (a decision on it then asks to be confirmed)."""
    return engine.oversight.claimed_by_other(view)


def proposal_line(d: DecisionView) -> str:
    """The console's words for a proposal: "waiting for a second operator:
    reset proposed by ada, decision 7, until ...: reason" (the account is in
    `phasegate status`)."""
    what = d.action + (f" {d.effect}" if d.effect else "") + (f" from {d.phase}" if d.phase else "")
    return (
        f"waiting for a second operator: {what} proposed by {d.operator},"
        f" decision {d.id}, until {str(d.expires_at or '-').replace('T', ' ').rstrip('Z')}: {d.reason}"
    )


def toggle_claim(engine: Engine, run_id: str) -> str:
    """Claim the run for this console's operator, or release their own claim.
    Someone else's claim is not taken over from here (`phasegate claim RUN --force`)."""
    view = engine.status(run_id)
    mine = view.claim is not None and not claimed_by_other(engine, view)
    held = engine.oversight.claim(run_id, release=mine)
    if held is None:
        return f"released the claim on {run_id}"
    return f"{run_id} claimed by {held.operator} until {str(held.expires_at).replace('T', ' ').rstrip('Z')}"


def _sections(pv: Preview, view: RunView, effect: str | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    if view.pending_decisions:
        # What this decision comes on top of: the operator must see it before overriding it.
        out.append(("already decided, pending", tuple(_pending(d) for d in view.pending_decisions)))
    if effect is not None and pv.action in ("confirm_effect", "retry_effect"):
        out.append(("check first", _check_first(view, effect)))
    confirmed = {d.effect for d in view.pending_decisions if d.action == "confirm_effect" and d.effect}
    again = [k for k in pv.effects_again if k not in confirmed]
    for label, items in (
        ("accepts", pv.accepts),
        ("re-runs", pv.rerun),
        ("may call again", again),
        ("sets aside", pv.discarded),
        ("keeps", pv.kept),
    ):
        if items:
            out.append((label, tuple(items)))
    if pv.env_hash:
        out.append(("env hash", (pv.env_hash,)))
    return tuple(out)


def _pending(d: DecisionView) -> str:
    what = d.action + (f" {d.effect}" if d.effect else "") + (f" from {d.phase}" if d.phase else "")
    return f"{what} by {d.operator} (decision {d.id}): {d.reason}"


def _check_first(view: RunView, key: str) -> tuple[str, ...]:
    """How to find out whether the effect happened, before answering for it:
    its key in the outside system, and the workflow's runbook for it."""
    eff = next((e for e in view.effects if e.key == key), None)
    lines = [f"look key {key} up in the target system"]
    if eff is not None and eff.reconcile is not None:
        answer = eff.reconcile
        why = f": {answer.get('why')}" if answer.get("why") else ""
        lines.append(f"its reconcile hook last answered {answer.get('answer')}{why}")
    if eff is not None and not eff.idempotent:
        lines.append("its target does not deduplicate: a retry of a charge that happened charges twice")
    lines += [str(b.get("runbook")) for b in view.runbooks if b.get("kind") == "in_doubt_effect" and b.get("runbook")]
    return tuple(lines)


def _typed_why(view: RunView, name: str, effect: str | None, claim: str = "") -> str:
    """Why the operator must type the run id to confirm; empty when Enter will do.
    `claim`: someone else's claim on the run, as the console says it."""
    if claim:
        return claim
    if name == "reset":
        return "this discards work"
    if name == "cancel":
        return "a cancel is final"
    if name == "retry_effect":
        eff = next((e for e in view.effects if e.key == effect), None)
        if eff is not None and not eff.idempotent:
            return "the target does not deduplicate"
    if view.pending_decisions:
        return "a decision is already pending"
    return ""


#: The console's actions that are decisions (a policy can ask a second for them).
DECISIONS: dict[str, Action] = {str(a): a for a in Action}


def proposal_words(engine: Engine, name: str, runs: int = 1) -> str:
    """What a modal says when the store's policy makes the decision `name` a
    proposal (empty when it applies as decided): before Enter, not after."""
    if name not in DECISIONS or not engine.oversight.policy().needs_second(DECISIONS[name]):
        return ""
    them = "it" if runs == 1 else "them"
    return (
        f"the store's policy needs a second operator for {name}: Enter records a PROPOSAL;"
        f" nothing happens to the run until another account seconds {them} (key 2 there)"
    )


def name_pattern(name: str) -> str:
    """An effect name with its varying part taken out: digits become "#" and
    what follows its last ":" or "/" goes ("charge:inv-7" -> "charge:")."""
    cut = max(name.rfind(":"), name.rfind("/"))
    return name[: cut + 1] if cut > 0 else re.sub(r"[0-9]+", "#", name)


def sibling_result(view: RunView, key: str) -> tuple[str, str] | None:
    """The result a sibling of effect `key` recorded (same phase, same name
    pattern, done), the latest first: what a confirmation's result usually
    looks like. (its name, JSON text), or None when no sibling recorded one."""
    eff = next((e for e in view.effects if e.key == key), None)
    if eff is None:
        return None
    pattern = name_pattern(eff.name)
    done = [
        e
        for e in view.effects
        if e.key != key
        and e.phase == eff.phase
        and e.state == "done"
        and e.result_text is not None
        and name_pattern(e.name) == pattern
    ]
    if not done:
        return None
    last = max(done, key=lambda e: e.done_at or "")
    return last.name, str(last.result_text)


def build_request(engine: Engine, run_id: str, name: str, now: float = 0.0) -> ActionRequest:
    """What the modal for `name` on `run_id` will say, from a fresh read
    (`now`: the console's clock, for how long ago someone claimed the run)."""
    request = _build_request(engine, run_id, name, now)
    proposal = proposal_words(engine, name)
    return replace(request, proposal=proposal) if proposal else request


def _build_request(engine: Engine, run_id: str, name: str, now: float) -> ActionRequest:
    spec = BY_NAME[name]
    view = engine.status(run_id)
    override = claimed_by_other(engine, view)
    held = view.claim
    claim = held.said(now) if override and held is not None else ""
    if name == "second":
        return _second_request(engine, view, claim)
    if name == "prune":
        cands = view.prune_candidates
        total = sum(c.bytes for c in cands)
        items = tuple(f"{c.what} ({size(c.bytes)}): {c.why_safe}" for c in cands)
        summary = f"Prune {len(cands)} item(s), {size(total)}, from this run. Archived items are read back and hash-matched first."
        return ActionRequest(spec, run_id, (Choice(None, "", summary, (("removes", items),)),))
    if name == "rewind":
        phases = [p.name for p in view.phases if p.done]
        choices = tuple(_choice(view, engine.preview(view, name, phase=p), p, p) for p in phases)
        why = _typed_why(view, name, None, claim)
        return ActionRequest(
            spec,
            run_id,
            choices,
            choose="phase",
            default=max(len(choices) - 1, 0),
            type_run_id=bool(why),
            typed_why=why,
            override_claim=override,
        )
    if name in ("confirm_effect", "retry_effect"):
        keys = [e.key for e in view.effects if e.state == "in_doubt"]
        # a damaged record the operator answers, and a person's confirmation
        # to correct (confirm) or take back (retry)
        keys += [
            str(b.get("effect"))
            for b in view.blocked
            if b["kind"] == "integrity" and b.get("what") == "effect" and b.get("effect", "?") != "?"
        ]
        keys += [k for k in correctable_effects(view) if k not in keys]
        ask = name == "confirm_effect"
        if len(keys) > 1:
            choices = tuple(_choice(view, engine.preview(view, name, effect=k), k, k, effect=k) for k in keys)
            # One typed confirmation covers every choice: ask it if any choice needs it.
            why = next((w for w in (_typed_why(view, name, k, claim) for k in keys) if w), "")
            return ActionRequest(
                spec,
                run_id,
                choices,
                choose="effect",
                type_run_id=bool(why),
                typed_why=why,
                ask_result=ask,
                override_claim=override,
            )
        only = keys[0] if keys else None
        why = _typed_why(view, name, only, claim)
        pv = engine.preview(view, name, effect=only)
        return ActionRequest(
            spec,
            run_id,
            (_choice(view, pv, only, only or "", effect=only),),
            type_run_id=bool(why),
            typed_why=why,
            ask_result=ask,
            override_claim=override,
        )
    pv = engine.preview(view, name)
    why = _typed_why(view, name, None, claim)
    choice = _choice(view, pv, None, "")
    if engine.oversight.policy().needs_second(Action(name)):
        # Said before the operator confirms, not only in the notice after.
        said = f"lists {name}: this is recorded as a proposal, and takes effect once another account seconds it"
        choice = Choice(choice.value, choice.label, choice.summary, (*choice.sections, ("the store's policy", (said,))))
    return ActionRequest(spec, run_id, (choice,), type_run_id=bool(why), typed_why=why, override_claim=override)


def _second_request(engine: Engine, view: RunView, claim: str) -> ActionRequest:
    """The modal of a second: each proposal this operator may second, with
    who proposed it and what it would do (previewed against the run now)."""
    props = secondable(engine, view)
    if not props:
        raise UsageError(f"run {view.run_id} has no proposal from another account to second")
    choices = []
    for d in props:
        try:
            pv = engine.preview(view, d.action, phase=d.phase, effect=d.effect)
            what, sections = pv.summary, _sections(pv, view, d.effect)
        except PhasegateError as exc:
            what, sections = f"it no longer fits the run ({exc.message}): seconding is refused", ()
        said = f"{proposal_line(d)}. {what}"
        choices.append(Choice(str(d.id), f"decision {d.id}: {d.action} by {d.operator}", said, sections))
    why = claim
    return ActionRequest(
        BY_NAME["second"],
        view.run_id,
        tuple(choices),
        choose="proposal" if len(choices) > 1 else "",
        type_run_id=bool(why),
        typed_why=why,
        override_claim=bool(why),
    )


def _choice(view: RunView, pv: Preview, value: str | None, label: str, *, effect: str | None = None) -> Choice:
    sibling = sibling_result(view, effect) if effect is not None and pv.action == "confirm_effect" else None
    return Choice(
        value,
        label,
        pv.summary,
        _sections(pv, view, effect),
        expect_env=pv.env_hash,
        template=sibling[1] if sibling else "",
        template_from=sibling[0] if sibling else "",
    )


def apply(engine: Engine, result: ActionResult) -> str:
    """Record the operator's decision; returns one line saying what landed."""
    name = result.spec.name
    if name == "prune":
        done = engine.prune(apply=True, run_id=result.run_id, reason=result.reason)
        return f"pruned {len(done)} item(s), {size(sum(c.bytes for c in done))}, from {result.run_id}"
    if name == "second":
        d = engine.oversight.second(
            result.run_id, int(result.choice or 0), reason=result.reason, override_claim=result.override_claim
        )
        return f"decision {d.id} ({d.action} by {d.operator}) on {result.run_id} seconded: it takes effect"
    d = engine.decide(
        result.run_id,
        name,
        reason=result.reason,
        override_claim=result.override_claim,
        phase=result.choice if name == "rewind" else None,
        effect=result.choice if name in ("confirm_effect", "retry_effect") else None,
        expect_env=result.expect_env if name == "approve" else None,
        **({"result": json.loads(result.result_json)} if result.result_json is not None else {}),
    )
    if d.state == "applied":
        when = "applied"
    elif name in HOLDS and d.state == "pending":
        when = "asked of its process: it stops at its next step"
    elif d.state == "proposed":
        when = "proposed; it waits for a second operator (another account)"
    elif workers_alive(engine):
        when = f"recorded; {WORKER_WILL}"
    else:
        # Nothing will pick it up on its own: say so, and what moves it now.
        when = "recorded; NO WORKER IS ALIVE, so it waits: press e to resume the run now (or start phasegate worker)"
    return f"{d.action} on {result.run_id} by {d.operator} {when} (decision {d.id})"


WORKER_WILL = "a worker is alive and carries it out at its next look"
"""What a decision's notice says while a worker is to carry it out (withdrawn once it has)."""


def can_resume(view: RunView) -> str:
    """Empty when `phasegate resume` would move this run on now; else why not."""
    if view.status is RunStatus.RUNNING:
        return "it is running (its process is alive)"
    if view.status is RunStatus.COMPLETED:
        return "it is completed"
    if view.status is RunStatus.CANCELLED:
        return "it is cancelled (final)"
    if view.status is RunStatus.PAUSED:
        return "it is paused: unpause it (p) and a worker takes it up"
    if view.status is RunStatus.WAITING and not view.pending_decisions:
        # (Answered, it can be resumed now: the answer is pending.)
        return "it is waiting: a worker resumes it once it is answered (i) or due"
    if not view.target:
        return "it has no stored target (it was run from code); resume it there"
    if view.status in (RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.RESET) or view.pending_decisions:
        return ""
    return "it is blocked with nothing decided: decide first"


@dataclass(frozen=True)
class Resumed:
    run_id: str
    pid: int
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)
    """The child, watched until it ends (`watch_resume`)."""


@dataclass(frozen=True)
class ResumeEnded:
    """How a resume the console started ended."""

    run_id: str
    pid: int
    code: int
    """Its exit status (negative: the signal that ended it)."""
    last_line: str
    """Its log's last line, made safe (what it said last, an error's message)."""
    log: Path


def resume_command(db: Path, run_id: str) -> list[str]:
    """The argv of a resume the console starts: our own command, an argv
    list (no shell); "--" so a run id that starts with "-" is a run id, never
    an option; `-P` so that a folder named `phasegate` (a clone) in the
    working directory cannot shadow the installed package."""
    return [sys.executable, "-P", "-m", "phasegate", "resume", "--db", str(db), "--", run_id]


def resume_now(engine: Engine, run_id: str) -> Resumed:
    """Start `phasegate resume RUN` detached from the console (it goes on if
    the console quits), its output appended to a log beside the store. It
    starts in the store's folder, not the operator's: nothing there is on
    its path (`-P`), and a relative path it writes lands beside the store."""
    db = engine.db_file
    if db is None:
        raise UsageError(f"resume from the console needs an SQLite store; run: phasegate resume {run_id}")
    db = db.resolve()
    logs = db.parent / f"{db.name}.logs"
    log, out = _new_log(logs, run_id)
    with out:
        proc = subprocess.Popen(
            resume_command(db, run_id),
            cwd=db.parent,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the console's Ctrl-C or its exit
        )
    return Resumed(run_id, proc.pid, log, proc)


def watch_resume(started: Resumed, on_end: Callable[[ResumeEnded], None]) -> None:
    """Wait for the child from a thread of its own (so a long console session
    leaves no zombie behind) and say how it ended: its exit status and its
    log's last line."""
    proc = started.proc
    if proc is None:
        return

    def wait() -> None:
        code = proc.wait()
        on_end(ResumeEnded(started.run_id, started.pid, code, last_line(started.log), started.log))

    threading.Thread(target=wait, name=f"resume-{proc.pid}", daemon=True).start()


def last_line(log: Path, limit: int = 200) -> str:
    """The last non-empty line of a log, made safe and cut to `limit`
    characters (stored and child output alike: never sent raw to a terminal)."""
    try:
        with log.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            tail = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"(its log could not be read: {exc.strerror or exc})"
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    said = safe(lines[-1].strip()) if lines else "(its log is empty)"
    return said if len(said) <= limit else said[: limit - 3] + "..."


def _new_log(logs: Path, run_id: str) -> tuple[Path, BinaryIO]:
    """A new log file for one resume of `run_id`, in the store's logs folder.

    Made as archives are (`new_private_file`): the folder is this account's
    own, the file new and never opened through a link, so that another
    account cannot turn the log's write into one onto a file of its choosing.

    Raises:
        UsageError: The folder is refused (one line saying why).
    """
    # The run id is any printable text ("/" and ".." too): a slug and a hash
    # of it name the file, the time and a count tell its resumes apart.
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:60]
    stem = f"resume-{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:8]}-{time.strftime('%Y%m%dT%H%M%S')}"
    for n in range(100):
        name = f"{stem}.log" if n == 0 else f"{stem}.{n}.log"
        try:
            return logs / name, new_private_file(logs, name)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(f"no resume log written: {exc.strerror or exc}", title="resume") from None
    raise UsageError(f"no resume log written: {logs} holds 100 logs named {stem}*", title="resume")
