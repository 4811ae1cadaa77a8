"""The run detail's panels as Rich renderables, built from a `RunView`.

Every value read from the store goes in as `Text` (never as a markup string)
made safe by `phasegate.ops.safe`, so a run id, an error or a probe value is shown
exactly as stored, escape sequences and bidi overrides as visible escapes."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from phasegate import RunStatus, RunView
from phasegate.ops import printable, safe, safe_json

from ._format import EFFECT_MARKS, hashes, marked, middle, plain, short, size, tone
from .progressbar import line as progress_line
from .requesting import proposal_line
from .waits import clock_time, wait_line

NONE = Text("none", style="dim")


def _table(*columns: str) -> Table:
    t = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=True, padding=(0, 1))
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def header(v: RunView, now: float) -> Text:
    """The detail's fixed first line: which run this is, however far down the
    operator has scrolled."""
    from ._format import age, run_status

    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(safe(v.run_id), style="bold")
    line.append(f"  ({safe(v.workflow)})  ")
    line.append_text(run_status(v.status.value, asking=v.asking is not None))
    since = None if v.last_checkpoint_at is None else now - v.last_checkpoint_at
    line.append(f"  last checkpoint {age(since)} ago" if since is not None else "  no checkpoint yet")
    return line


def summary(v: RunView, now: float, exact: float | None = None) -> Text:
    """Why the run stopped, who holds it (host:pid and its heartbeat's age,
    counted from `exact`, the unrounded now), who is looking at it, its
    runbooks and the decisions waiting (scrolls)."""
    line = Text()
    waiting = wait_line(v, now)  # what it waits for, times in local time
    if waiting:
        line.append(hashes(waiting))
    elif v.attention:
        line.append(hashes(safe(v.attention)))
    live = v.lease.liveness if v.lease is not None else None
    if live is not None and live.status == RunStatus.RUNNING.value:
        line.append("\n" if line else "")
        line.append(safe(live.said(now if exact is None else exact)), style="bold")
    if v.progress is not None:
        # The phase's bar, counts, pace and message (escaped), stalled in words.
        line.append("\n" if line else "")
        line.append_text(progress_line(v.progress, v.status, now if exact is None else exact))
    if v.claim is not None:
        line.append("\n" if line else "")
        line.append(v.claim.said(now), style="bold")
        line.append(f" (until {str(v.claim.expires_at).replace('T', ' ').rstrip('Z')})")
    for b in v.blocked[1:]:
        line.append("\n" if line else "")
        line.append(hashes(f"{safe(b.get('kind'))}: {safe(b.get('detail'))}"))
    for r in v.runbooks:
        # Beside the reasons and the action keys: what the workflow's owners
        # say to do. Stored text: shown literally, control characters escaped.
        line.append("\n" if line else "")
        where = " in " + safe(r["phase"]) if r.get("phase") else ""
        line.append(f"runbook ({safe(r.get('kind'))}{where}): ", style="bold")
        line.append(printable(str(r.get("runbook"))))
    for d in v.proposals:
        line.append("\n" if line else "")
        line.append(safe(proposal_line(d)), style="bold")
    if v.pending_decisions:
        for d in v.pending_decisions:
            line.append("\n" if line else "")
            line.append(
                f"waiting: {d.action} by {safe(d.operator)} (decision {d.id}) applies at the next run",
                style="italic",
            )
    if v.code is not None and (v.code.moved or v.code.current.label is not None):
        # Which code started the run and which its latest attempt ran: a
        # deploy under a waiting run shows here (`status` says the same). A
        # run whose attempts all ran the same unnamed code has nothing to
        # tell an operator here: its digest alone is in `status`.
        line.append("\n" if line else "")
        line.append("code ", style="bold")
        line.append(v.code.said())
        if v.code.moved:
            line.append(" [changed]", style="bold")
    if v.trace_id:
        # Where the latest attempt is in the team's trace back end (`status --json` says the same).
        line.append("\n" if line else "")
        line.append(f"trace {safe(v.trace_id)}")
    return line


def code(v: RunView) -> tuple[RenderableType, bool]:
    """The diff behind each code change that blocks the run (already numbered
    and escaped by the engine; shown as Text, never as markup)."""
    if not v.code_diffs:
        return NONE, True
    parts: list[RenderableType] = []
    for d in v.code_diffs:
        head = Text()
        head.append(f"code of {safe(d.phase)} changed", style="bold")
        head.append(f"; ran the old code: {safe(', '.join(d.ran_old_code))}")
        parts.append(head)
        if d.missing:
            parts.append(Text(f"no stored source for {safe(', '.join(d.missing))} (written before sources were kept)"))
        for line in d.lines:
            style = ""
            if line.startswith("@@"):
                style = "bold"
            elif line[12:14] == "+ ":
                style = tone("green")
            elif line[12:14] == "- ":
                style = tone("red")
            parts.append(Text(safe(line), style=style, no_wrap=True, overflow="ellipsis"))
    return Group(*parts), False


def question(v: RunView) -> tuple[RenderableType, bool]:
    """The questions the run asked (`ctx.ask`): the open one first, with its
    prompt and payload as stored (escaped JSON), then those answered."""
    if not v.questions:
        return NONE, True
    parts: list[RenderableType] = []
    for q in sorted(v.questions, key=lambda q: q.state != "open"):
        head = Text()
        head.append(f"{safe(q.name)} ({safe(q.phase)}): ", style="bold")
        answering = v.asking is not None and v.asking.name == q.name
        open_words = "?? waits for an answer" + (" (i answers it)" if answering else " (once the run waits again)")
        state = {"open": open_words, "answered": "answered", "timed_out": "timed out"}
        head.append(state.get(q.state, safe(q.state)), style=tone("bold yellow") if q.state == "open" else "")
        parts.append(head)
        parts.append(Text("  " + safe(q.prompt)))
        if q.payload is not None:
            parts.append(Text("  payload: " + safe_json(json.dumps(q.payload, ensure_ascii=False, sort_keys=True))))
        asked = f"  asked {clock_time(q.asked_at, q.asked_at)}"
        if q.deadline is not None:
            asked += f", no answer by {clock_time(q.deadline, q.asked_at)}: it goes on without one"
        parts.append(Text(asked, style="dim"))
        if q.state == "answered":
            said = safe_json(json.dumps(q.answer, ensure_ascii=False, sort_keys=True))
            parts.append(Text(f"  answer by {safe(q.answered_by)} (decision {q.decision}): {said}"))
    return Group(*parts), False


def messages(v: RunView) -> tuple[RenderableType, bool]:
    """The messages sent into the run (`phasegate send`): what it waits for
    first, then those still queued, then the rest, oldest first; each value
    as stored (escaped JSON), with who sent it and why."""
    w = v.waiting or {}
    waits = v.status is RunStatus.WAITING and w.get("kind") == "message"
    if not v.messages and not waits:
        return NONE, True
    parts: list[RenderableType] = []
    if waits:
        head = Text()
        head.append(f"?? waits for a message on {safe(w.get('topic'))}", style=tone("bold yellow"))
        head.append(f" ({safe(w.get('phase'))})")
        parts.append(head)
        parts.append(
            Text(f"  phasegate send {safe(v.run_id)} {safe(w.get('topic'))} --value JSON --reason ...", style="dim")
        )
    for m in sorted(v.messages, key=lambda m: not m.pending):
        line = Text()
        mark = {"queued": "> queued", "delivered": "ok delivered", "refused": "!! refused", "kept": "-- kept"}
        line.append(mark.get(m.state, "!! " + safe(m.state)), style=tone("bold red") if m.state == "damaged" else "")
        line.append(f" #{m.id} {safe(m.topic)} from {safe(m.operator)} at {clock_time(m.at, m.at)}")
        if m.phase:
            line.append(f" ({safe(m.phase)})", style="dim")
        parts.append(line)
        parts.append(Text("  " + safe_json(json.dumps(m.value, ensure_ascii=False, sort_keys=True))[:300]))
        said = f"  why: {safe(m.reason)}" + (f"; refused: {safe(m.refused)}" if m.refused else "")
        parts.append(Text(said[:300], style="dim"))
    return Group(*parts), False


def outputs(v: RunView) -> tuple[RenderableType, bool]:
    if not v.outputs:
        return NONE, True
    t = _table("phase", "size", "hash", "state")
    for o in v.outputs:
        ok = o.verified
        state = Text("verified" if ok else f"NOT verified ({safe(o.state)})", style="" if ok else tone("bold red"))
        t.add_row(plain(o.phase), Text(size(o.bytes)), plain(hashes(str(o.hash or "-"))), state)
    return t, False


def integrity(v: RunView) -> tuple[RenderableType, bool]:
    if not v.integrity:
        return NONE, True
    parts: list[RenderableType] = []
    for f in v.integrity:
        head = Text()
        head.append(f"checkpoint {f.get('seq')}", style="bold")
        if f.get("phase"):
            head.append(" (")
            head.append(safe(f["phase"]))
            head.append(phase_place(v, str(f["phase"])))
            head.append(")")
        head.append(f": {safe(f.get('what'))} failure: ")
        head.append(hashes(safe(f.get("message") or "")))
        parts.append(head)
        if f.get("expected") is not None or f.get("actual") is not None:
            parts.append(
                Text(hashes(f"  expected {safe(f.get('expected'))}\n  actual   {safe(f.get('actual'))}"), no_wrap=True)
            )
        parts.append(Text(f"  {safe(f.get('meaning') or '')}", style="italic"))
    return Group(*parts), False


def environment(v: RunView) -> tuple[RenderableType, bool]:
    rows = v.env
    changes = {c["probe"]: c for b in v.blocked if b["kind"] == "env_mismatch" for c in b.get("changes", [])}
    merged = {r["probe"]: r for r in rows}
    merged.update(changes)
    if not merged:
        return NONE, True
    t = _table("", "probe", "saved", "current", "declared by")
    for name, r in merged.items():
        changed = bool(r.get("changed"))
        mark = Text("CHANGED" if changed else "same", style=tone("bold yellow") if changed else "dim")
        style = "bold" if changed else ""
        current = Text(hashes(cell_value(r.get("current"))), style=style)
        saved = Text(hashes(cell_value(r.get("saved"))), style=style)
        if not changed and r.get("saved") is None and r.get("current") is not None:
            # No finished phase recorded it yet: not "same" as nothing.
            mark = Text("new", style="dim")
            saved = Text("not saved yet", style="italic dim")
        if not changed and (str(name).startswith("code:") or name == "shape"):
            # The console does not load the workflow's code: what the code is
            # now is known only to the next start, which compares it.
            mark = Text("?", style="dim")
            current = Text("checked at the next resume", style="italic dim", no_wrap=True, overflow="ellipsis")
        t.add_row(
            mark,
            plain(name),
            saved,
            current,
            plain(", ".join(r.get("phases") or []) or "-"),
        )
    said = [line for name, r in merged.items() if r.get("changed") for line in value_diff(str(name), r)]
    return (Group(t, *said) if said else t), False


def cell_value(value: Any, n: int = 30) -> str:
    """A probe's value in a table cell: an object as its `key=value` pairs
    (where it was read from left to the lines under the table), else as text."""
    if isinstance(value, dict):
        # Words before digests: "table=EU-2027-Q1 sha256=5484…" reads at 30 characters.
        items = sorted(
            ((k, v) for k, v in value.items() if k not in SOURCE_KEYS),
            key=lambda kv: isinstance(kv[1], str) and bool(_WHOLE_HASH.fullmatch(kv[1])),
        )
        pairs = [f"{k}={v if isinstance(v, str) else short(v, n)}" for k, v in items]
        return short(" ".join(pairs), n)
    return short(value, n)


#: Keys of a probe's value that say where it was read from.
SOURCE_KEYS = ("file", "path", "source", "url", "from")

_WHOLE_HASH = re.compile(r"(?:sha256:)?[0-9a-f]{12,}")


def value_diff(name: str, r: Mapping[str, Any]) -> list[Text]:
    """What changed in a probe's value, and where it came from: the keys that
    differ (an object), the lines that differ (text), both values (other text),
    or that only a hash was recorded (all the probe gives)."""
    saved, current = r.get("saved"), r.get("current")
    head = Text()
    head.append(f"{safe(name)} changed", style="bold")
    source = next(
        (v[k] for v in (current, saved) if isinstance(v, dict) for k in SOURCE_KEYS if isinstance(v.get(k), str)), None
    )
    head.append(
        f", read from {safe(source)}" if source else f" (read by {safe(', '.join(r.get('phases') or []) or '-')})"
    )
    out = [head]
    if isinstance(saved, dict) and isinstance(current, dict):
        for key in sorted(set(saved) | set(current), key=str):
            if key in SOURCE_KEYS and saved.get(key) == current.get(key):
                continue
            was, now = saved.get(key, "(absent)"), current.get(key, "(absent)")
            if was != now:
                out.append(Text(f"  {safe(key)}: {hashes(short(was, 60))} -> {hashes(short(now, 60))}"))
    elif isinstance(saved, str) and isinstance(current, str) and ("\n" in saved or "\n" in current):
        lines = list(
            difflib.unified_diff(saved.splitlines(), current.splitlines(), "saved", "current", lineterm="", n=1)
        )
        for line in lines[2 : 2 + DIFF_LINES]:
            style = tone("green") if line.startswith("+") else tone("red") if line.startswith("-") else ""
            out.append(Text("  " + safe(line), style=style, no_wrap=True, overflow="ellipsis"))
    elif all(isinstance(v, str) and _WHOLE_HASH.fullmatch(v) for v in (saved, current)):
        out.append(Text("  only a hash was recorded: the probe returns no values to compare", style="italic"))
    else:
        out.append(Text(f"  saved:   {hashes(short(saved, 200))}"))
        out.append(Text(f"  current: {hashes(short(current, 200))}"))
    return out


DIFF_LINES = 12
"""Lines of a text probe's diff the environment panel shows (the values are in `--json`)."""


def effect_key(key: str, run_id: str, width: int = 40) -> str:
    """An effect key as this run's detail shows it: without the run id it
    starts with (the screen names the run), then cut from the middle like a
    run id, so its distinctive end stays. The whole key is in `--json`."""
    if key.startswith(run_id + "/"):
        key = "…" + key[len(run_id) :]
    return middle(safe(key), width)


def effects(v: RunView) -> tuple[RenderableType, bool]:
    if not v.effects:
        return NONE, True
    t = _table("state", "effect", "key", "attempt")
    asked: list[Text] = []
    for e in v.effects:
        label = {"in_doubt": "IN DOUBT", "intent": "intent", "done": "done"}[e.state]
        t.add_row(
            marked(EFFECT_MARKS, e.state, label),
            plain(f"{e.name} ({e.phase})"),
            plain(effect_key(e.key, v.run_id)),
            Text(str(e.attempt)),
        )
        if e.reconcile is not None and e.state != "done":
            # What the outside system said when asked: why a person is needed.
            asked.append(plain(f"reconcile {e.name}: {e.reconcile.get('answer')}: {e.reconcile.get('why', '')}"))
    return (Group(t, *asked) if asked else t), False


def phase_place(v: RunView, name: str) -> str:
    """ ", phase 3 of 5": a phase's place, said the way the phase strip says it
    (one numbering of phases on screen; checkpoints keep their own number)."""
    names = [p.name for p in v.phases]
    return f", phase {names.index(name) + 1} of {len(names)}" if name in names else ""


#: The engine's "(checkpoint EPOCH.SEQ)" in a prune candidate's words.
_EPOCH_SEQ = re.compile(r"\(checkpoint (\d+)\.(\d+)\)")


def checkpoint_words(text: str) -> str:
    """A prune candidate's "(checkpoint 0.2)" as the rest of the screen numbers
    checkpoints, "(checkpoint 2)"; a reset's epoch only when there was one."""
    return _EPOCH_SEQ.sub(
        lambda m: f"(checkpoint {m[2]})" if m[1] == "0" else f"(checkpoint {m[2]} after reset {m[1]})", text
    )


def prune(v: RunView) -> tuple[RenderableType, bool]:
    if not v.prune_candidates:
        return NONE, True
    t = _table("what", "size", "why it is safe")
    for c in v.prune_candidates:
        t.add_row(plain(checkpoint_words(c.what)), Text(size(c.bytes)), plain(c.why_safe))
    return t, False


def decisions(v: RunView) -> tuple[RenderableType, bool]:
    """The run's audit: its decisions, and its claims (claimed, released,
    taken over, expired), in the order they happened."""
    if not v.decisions and not v.claims:
        return NONE, True
    t = _table("when", "who", "what", "state", "why")
    # (when, then, who, what, state, why): in the same second a claim event
    # comes first (one claims a run, then decides on it).
    rows: list[tuple[str, int, str, str, str, str]] = []
    for d in v.decisions:
        what = d.action + (f" {d.phase}" if d.phase else "") + (f" {d.effect}" if d.effect else "")
        # One of a group's decisions (decide --cause, or marked runs): its batch, shared with the others.
        what += f" (batch {d.batch_id})" if d.batch_id else ""
        who = f"{d.operator} (AI assistant)" if d.assistant else d.operator
        rows.append((str(d.at or "-"), 1, who, what, d.state, d.reason))
    rows += [(str(e.at or "-"), 0, e.operator, e.kind, "-", "-") for e in v.claims]
    for at, _then, who, what, state, why in sorted(rows, key=lambda r: r[:2]):
        t.add_row(plain(at.replace("T", " ").rstrip("Z")), plain(who), plain(what), plain(state), plain(why))
    return t, False


def error(v: RunView) -> tuple[RenderableType, bool]:
    """The error a failed run stopped on, each failed attempt before it
    (retries), and the run's notes (a retry that then succeeded, a probe the
    run went on past): stored text, shown as plain, escaped text."""
    e: Mapping[str, Any] | None = v.error
    if not e and not v.notes:
        return NONE, True
    line = Text()
    if e:
        line.append(f"in phase {safe(e.get('phase'))}: ", style="bold")
        line.append(f"{safe(e.get('type'))}: {safe(e.get('message'))}")
        tried = e.get("attempts")
        for a in tried if isinstance(tried, list) else []:
            if isinstance(a, Mapping):
                what = f"step {safe(a.get('step'))}" if a.get("step") is not None else "the phase"
                line.append(f"\n  {what}: attempt {safe(a.get('attempt'))} of {safe(a.get('of'))}: ", style="italic")
                line.append(safe(a.get("error")))
    for n in v.notes:
        if line:
            line.append("\n")
        line.append("note: ", style="bold")
        line.append(safe(n))
    frames = str((e or {}).get("traceback") or "").rstrip("\n")
    if not frames:
        return line, False
    # The last frames, as stored (escaped, never parsed): where it failed (#17).
    lines = [Text(safe(f), style="dim", no_wrap=True, overflow="ellipsis") for f in frames.splitlines()[-LAST_FRAMES:]]
    return Group(line, Text("last frames:", style="bold"), *lines), False


LAST_FRAMES = 12
"""Traceback lines the failed-run panel shows (all of them are in `--json`)."""
