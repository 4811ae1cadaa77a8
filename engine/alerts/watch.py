"""`phasegate watch`: tell someone when a run stops.

It follows the store with the console's change feed (`feed.watch_store`) and,
for each stop of a run (blocked or failed), sends one event through the
hooks. Which stops were announced is kept in the store (`phasegate_alerts`),
claimed row by row before sending: a restarted watch does not repeat
itself, a stop made while no watch ran is sent at the next start, and two
watches on one store never both send (the claim is the table's primary key).
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._host import new_owner
from ..assistants import assistant_of
from ..authoring import runbooks as _runbooks
from ..authoring.sources import printable
from ..engine import Engine
from ..errors import ExitCode, StoreError
from ..history import stops as _stops
from ..history.stops import stop_key
from ..observe import hooks as observing
from ..observe import logs
from ..safetext import safe
from ..store import _rowcheck
from ..store.store import Duplicate
from ..timefmt import iso
from ..views import feed
from ..views.codeview import code_view
from . import hooks, signing

log = logging.getLogger("phasegate.watch")
#: "Already announced" lines: shown with -v only (a restart would list every old stop).
skip_log = logging.getLogger("phasegate.watch.skip")

#: The statuses that are a stop worth telling someone about (a waiting run
#: only when it waits for a person's answer, not for a time).
STOPS = ("blocked", "failed", "waiting")
#: A claim older than this whose watch never settled it (killed mid-send) is
#: taken over. A watch renews its claim while it sends (`hooks.KEEPALIVE_EVERY`),
#: so only a claim whose watch died ages this far.
CLAIM_SECONDS = 300.0
_CHUNK = 500


def event(row: Any, where: str) -> dict[str, Any]:
    """What a hook receives about one stop; the fields are the contract.

    Every text in it was read from the store, which someone else wrote (a
    workflow's names, a phase's error, an edited row) and is read at the far
    end by a person (a mail, a pager, a chat): each goes through the one
    safe-text rule (`safetext.safe`), so no control character, bidi override
    or invisible one reaches them as itself."""
    blocked = _json.loads(row.blocked_json or "[]")
    error = _json.loads(row.error_json) if row.error_json else None
    shape = _json.loads(row.shape_json)
    books = _runbooks.for_stop(shape, blocked, error, row.frontier_phase)
    texts = list(dict.fromkeys(b["runbook"] for b in books))
    summary = f"{row.run_id} ({row.workflow}) {row.status}: {row.attention or 'no reason recorded'}"
    question = _stops.asking(row)
    asked = None
    if question is not None:
        summary = f"{row.run_id} ({row.workflow}) needs a person: {question.get('prompt')!s}"
        asked = {
            "name": safe(str(question.get("name"))),
            "phase": safe(str(question.get("phase"))),
            "prompt": safe(printable(str(question.get("prompt")).replace("\n", " "))[:400]),
            "answer": safe(
                f"phasegate decide --db {shlex.quote(where)} {shlex.quote(row.run_id)} answer"
                f" --question {shlex.quote(str(question.get('name')))} --value JSON --reason ..."
            ),
        }
    out: dict[str, Any] = {
        "run_id": safe(row.run_id),
        "workflow": safe(row.workflow),
        "status": safe(row.status),
        "kinds": [safe(str(b.get("kind"))) for b in blocked],
        "summary": safe(printable(summary.replace("\n", " "))[:400]),
        "frontier": {
            "phase": None if row.frontier_phase is None else safe(row.frontier_phase),
            "index": int(row.frontier_index),
            "of": int(row.phase_count),
        },
        "since": iso(row.updated_at),
        # Causes (issue #13) are not recorded yet; the field is kept so
        # receivers need not change when they are.
        "cause": None,
        "runbook": safe("; ".join(texts)) if texts else None,
        "console": safe(f"phasegate console --db {shlex.quote(where)} --run {shlex.quote(row.run_id)}"),
    }
    code = code_view(getattr(row, "code_json", None))
    if code is not None:
        # Issue 41: the code the run started under and the code its latest
        # attempt ran, so a stop right after a deploy says so (only for a run
        # that recorded them: an older run's event keeps the fields it had).
        out["code"] = code.alert()
    if asked is not None:
        # A run that asks a person (`ctx.ask`): its question, and how to answer
        # it (only then: a stop's event keeps the fields it always had).
        out["question"] = asked
    awaited = _stops.awaiting(row)
    if awaited is not None:
        # A run parked on `ctx.recv` (`watch --messages`): the topic, and how to send it.
        topic = str(awaited.get("topic"))
        out["summary"] = safe(printable(f"{row.run_id} ({row.workflow}) waits for a message on {topic}")[:400])
        out["message"] = {
            "topic": safe(topic),
            "phase": safe(str(awaited.get("phase"))),
            "until": iso(awaited.get("until")) if isinstance(awaited.get("until"), int | float) else None,
            "send": safe(
                f"phasegate send --db {shlex.quote(where)} {shlex.quote(row.run_id)} {shlex.quote(topic)}"
                " --value JSON --reason ..."
            ),
        }
    return out


def proposal_event(run: Any, decision: Any, where: str) -> dict[str, Any]:
    """What a hook receives about an AI assistant's proposal (`phasegate mcp`):
    the fields of a stop's event, status "proposed", kind "assistant_proposal",
    and `proposal`, with the reason the assistant gave and the command a person
    runs to second it. Every text made safe, as a stop's."""
    rid, did = str(decision.run_id), int(decision.id)
    second = f"phasegate decide --db {shlex.quote(where)} {shlex.quote(rid)} second --decision {did} --reason ..."
    summary = (
        f"{rid} ({run.workflow}): {decision.operator}, an AI assistant, proposed {decision.action}"
        f" (decision {did}): {decision.reason}; nothing happens until a person seconds it"
    )
    return {
        "run_id": safe(rid),
        "workflow": safe(run.workflow),
        "status": "proposed",
        "kinds": ["assistant_proposal"],
        "summary": safe(printable(summary.replace("\n", " "))[:400]),
        "frontier": {
            "phase": None if run.frontier_phase is None else safe(run.frontier_phase),
            "index": int(run.frontier_index),
            "of": int(run.phase_count),
        },
        "since": iso(decision.at),
        "cause": None,
        "runbook": None,
        "console": safe(f"phasegate console --db {shlex.quote(where)} --run {shlex.quote(rid)}"),
        "proposal": {
            "decision": did,
            "action": safe(decision.action),
            "proposer": safe(decision.operator),
            "assistant": True,
            "reason": safe(printable(str(decision.reason).replace("\n", " "))[:400]),
            "phase": None if decision.phase is None else safe(decision.phase),
            "effect": None if decision.effect_key is None else safe(decision.effect_key),
            "expires_at": iso(decision.expires_at),
            "second": safe(second),
        },
    }


class Watch:
    """One watcher over one store."""

    def __init__(
        self,
        engine: Engine,
        hooks_: hooks.Hooks,
        stop: threading.Event,
        *,
        poll: float = 2.0,
        use_events: bool = True,
        claim_seconds: float = CLAIM_SECONDS,
        messages: bool = False,
    ) -> None:
        self.engine = engine
        self.messages = messages
        """Also announce a run parked waiting for a message (`ctx.recv`, `watch --messages`)."""
        self.store = engine.store
        self.hooks = hooks_
        self.stop = stop
        self.poll = poll
        self.use_events = use_events
        self.claim_seconds = claim_seconds
        self.owner = new_owner()
        #: Stops this process has seen settled (sent, failed, or sent by
        #: another watch): not asked about again.
        self._settled: set[str] = set()
        self.sent = 0
        self.unreadable = False
        """Whether the last look could not read (or write) the store: what
        `watch --once` exits with, so a cron job can tell."""

    def serve(self) -> int:
        """Until `stop` is set (SIGTERM): a first look at the whole store, then
        one after each change."""
        log.info("watching %s for stopped runs", self.store.where)
        feed.watch_store(
            self.store.path,
            self.engine.data_version,
            lambda _source: self.scan(),
            self.stop,
            poll=self.poll,
            use_events=self.use_events,
            on_start=self.scan,
        )
        log.info("watch stopped; %d alert(s) sent", self.sent)
        return 0

    def scan(self) -> int:
        """Announce every stop not yet announced; returns how many were sent.
        A store that cannot be read now is logged and looked at again at the
        next change: the watch itself does not stop."""
        try:
            sent = self._scan()
        except StoreError as exc:
            log.error("cannot read the store now: %s", exc.message)
            self.unreadable = True
            return 0
        self.unreadable = False
        return sent

    def _scan(self) -> int:
        with self.store.read() as conn:
            rows = self.store.runs.all(conn, statuses=list(STOPS), order="run_id")
        stops: dict[str, Any] = {}
        for r in rows:
            try:
                row = _rowcheck.check(r)
            except StoreError as exc:
                log.warning("a run row is damaged, not announced: %s", exc.message)
                continue
            if row is None or (row.status == "waiting" and not self._announced_wait(row)):
                continue  # a timer or a rate limit is no one's to answer
            key = stop_key(row)
            if key not in self._settled:
                stops[key] = row
        sent = 0
        keys = list(stops)
        for key, made in self._proposals().items():
            stops[key] = made
            keys.append(key)
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]
            with self.store.read() as conn:
                known = self.store.alerts.announced(conn, chunk)
            for key in chunk:
                if self.stop.is_set():
                    return sent
                sent += self._one(key, stops[key], known.get(key))
        return sent

    def _announced_wait(self, row: Any) -> bool:
        """Whether a waiting run is announced: a question for a person, and,
        with `messages`, a wait for a message someone must send."""
        return _stops.asking(row) is not None or (self.messages and _stops.awaiting(row) is not None)

    def _proposals(self) -> dict[str, _Proposal]:
        """The AI assistants' open proposals not yet announced, by alert key
        ("proposal:N"), each with its run's row."""
        with self.store.read() as conn:
            found = [
                d
                for d in self.store.decisions.every_open_proposal(conn, self.engine.clock())
                if assistant_of(d.operator, d.account) is not None and f"proposal:{int(d.id)}" not in self._settled
            ]
            runs = {d.run_id: self.store.runs.get(conn, d.run_id) for d in found}
        out: dict[str, _Proposal] = {}
        for d in found:
            try:
                run = _rowcheck.check(runs[d.run_id])
            except StoreError as exc:
                log.warning("a run row is damaged, its proposal not announced: %s", exc.message)
                continue
            if run is not None:
                out[f"proposal:{int(d.id)}"] = _Proposal(run, d, "proposed")
        return out

    def _one(self, key: str, row: Any, known: Any) -> int:
        now = self.engine.clock()
        if known is not None and known.state != "claimed":
            self._settled.add(key)
            skip_log.info("%s (%s): already announced (%s)", row.run_id, row.status, known.state)
            return 0
        if isinstance(row, _Proposal):
            ev = proposal_event(row.run, row.decision, self.store.where)
        else:
            ev = event(row, self.store.where)
        try:
            with self.store.write() as conn:
                if known is None:
                    self.store.alerts.claim(conn, key, row.run_id, row.status, self.owner, now, _json.dumps(ev))
                elif not self.store.alerts.reclaim(conn, key, self.owner, now, now - self.claim_seconds):
                    skip_log.info("%s (%s): being announced by another watch", row.run_id, row.status)
                    return 0
        except Duplicate:
            skip_log.info("%s (%s): claimed by another watch", row.run_id, row.status)
            return 0
        with logs.bound(run_id=row.run_id, workflow=getattr(row, "workflow", None)):
            result = hooks.deliver(
                self.hooks, ev, self.stop, keepalive=lambda: self._renew(key, row), msg_id=signing.delivery_id(key)
            )
        if not result.interrupted:
            observing.OBSERVER.alert(result.ok)
        with self.store.write() as conn:
            if result.interrupted:
                # Nothing is known to have arrived: let the next watch send it.
                self.store.alerts.release(conn, key, self.owner)
                return 0
            self.store.alerts.settle(
                conn,
                key,
                self.owner,
                {
                    "state": "sent" if result.ok else "failed",
                    "sent_at": self.engine.clock(),
                    "attempts": result.attempts,
                    "error": result.error,
                },
            )
        self._settled.add(key)
        if result.ok:
            self.sent += 1
            log.info("announced %s (%s): %s", row.run_id, row.status, ev["summary"])
            return 1
        return 0

    def _renew(self, key: str, row: Any) -> None:
        """The claim on an alert being sent, renewed: a claim left as old as
        `claim_seconds` reads as the claim of a watch that died mid-send, and
        another watch would send the alert again while this one still is."""
        try:
            with self.store.write() as conn:
                held = self.store.alerts.renew(conn, key, self.owner, self.engine.clock())
        except StoreError as exc:
            log.warning("cannot renew the claim on %s's alert now: %s", row.run_id, exc.message)
            return
        if not held:
            log.warning("%s (%s): another watch took over this alert's claim", row.run_id, row.status)


@dataclass(frozen=True)
class _Proposal:
    """An AI assistant's open proposal to announce, with its run's row."""

    run: Any
    decision: Any
    status: str

    @property
    def run_id(self) -> str:
        return str(self.decision.run_id)


def run_watch(
    engine: Engine,
    hooks_: hooks.Hooks,
    stop: threading.Event,
    *,
    poll: float,
    use_events: bool = True,
    once: bool = False,
    messages: bool = False,
) -> int:
    w = Watch(engine, hooks_, stop, poll=poll, use_events=use_events, messages=messages)
    if once:
        w.scan()
        # A look that could not read the store announced nothing: exit 2
        # (an unusable database), not 0, or a cron job takes it for "no stop".
        return ExitCode.USAGE if w.unreadable else ExitCode.OK
    return w.serve()


__all__: Sequence[str] = ["Watch", "event", "proposal_event", "run_watch", "stop_key"]
