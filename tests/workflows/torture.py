"""The crash-torture workflow: five phases with ordinary and durable steps,
non-idempotent, idempotent and atomic effects, and a world outside the store.

Everything it returns is a pure function of its inputs, so a run killed and
resumed many times must end with the very bytes an uninterrupted run ends with.

Inputs:
  items    how many items flow through the phases
  ledger   the payment gateway's own ledger (JSON lines): a NON-idempotent
           gateway; every call that reaches it is a charge
  mailbox  an idempotent mailer's store (JSON lines): it deduplicates by key,
           and `mailbox + ".calls"` counts every call that reached it
  pace     seconds slept around each step and effect, so that kills at random
           instants land inside the windows that matter
  reconcile the charge's reconcile hook: "" (none), "ledger" or "unknown"

Environment knobs (read at call time so a forked or spawned child is steered):
  PHASEGATE_TEST_KILL_AT  comma-separated points where the process SIGKILLs
                          itself: start:<phase>, step:<i>, loop:charge:<i>,
                          before:charge:<i>, after:charge:<i>, after:mail:<i>,
                          before:book:<i>
  PHASEGATE_TEST_TRACE    a file that gets one line per phase start and per
                          durable step computed (fsynced before going on)
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from phasegate import Reconciled, Workflow


def kill_point(name: str) -> None:
    if name in os.environ.get("PHASEGATE_TEST_KILL_AT", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)


def trace(event: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(event + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def _append(path: str, record: dict[str, Any]) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_lines(path: str) -> list[dict[str, Any]]:
    """A ledger's records; a torn last line (a kill inside the write) is not a record."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def gateway_charge(ledger: str, key: str, amount: int) -> dict[str, Any]:
    """A non-idempotent payment gateway: every call is a new charge. The
    charge id is a pure function of what is charged, so results compare
    across runs; the key is what an operator looks up."""
    charge_id = "ch-" + hashlib.sha256(f"{key.split('/', 1)[-1]}:{amount}".encode()).hexdigest()[:12]
    _append(ledger, {"key": key, "amount": amount, "charge_id": charge_id})
    return {"charge_id": charge_id, "amount": amount}


def mailer_send(mailbox: str, key: str, to: str) -> dict[str, Any]:
    """An idempotent mailer: a repeated key is acknowledged, not re-sent."""
    _append(mailbox + ".calls", {"key": key})
    for rec in read_lines(mailbox):
        if rec["key"] == key:
            return {"message_id": rec["message_id"]}
    message_id = "m-" + hashlib.sha256(to.encode()).hexdigest()[:10]
    _append(mailbox, {"key": key, "message_id": message_id, "to": to})
    return {"message_id": message_id}


def _pace(ctx: Any) -> None:
    pace = float(ctx.inputs.get("pace", 0) or 0)
    if pace:
        time.sleep(pace)  # sleep: the workflow's pace, which the torture's kills land in


def _reconciler(ctx: Any) -> Any:
    """The charge's reconcile hook, as the run's `reconcile` input chooses:
    none, "ledger" (asks the gateway's ledger) or "unknown" (cannot say)."""
    mode = ctx.inputs.get("reconcile") or ""
    if not mode:
        return None
    ledger = ctx.inputs["ledger"]

    def lookup(key: str) -> Reconciled:
        if mode == "unknown":
            return Reconciled.unknown("the gateway's lookup is down")
        for rec in read_lines(ledger):
            if rec["key"] == key:
                return Reconciled.done({"charge_id": rec["charge_id"], "amount": rec["amount"]})
        return Reconciled.not_done()

    return lookup


wf = Workflow("test-torture")


@wf.phase()
def load(ctx) -> list[dict]:
    trace("start:load")
    kill_point("start:load")
    _pace(ctx)
    n = int(ctx.inputs.get("items", 3))
    return [{"id": f"it-{i}", "amount": 10 + 7 * i} for i in range(n)]


def _score(item: dict) -> int:
    return sum(ord(c) for c in item["id"]) * item["amount"] % 997


@wf.phase(needs=["load"])
def enrich(ctx, load) -> list[dict]:
    trace("start:enrich")
    kill_point("start:enrich")
    out = []
    for i, item in enumerate(load):

        def score(item: dict = item, i: int = i) -> int:
            trace(f"step:score:{i}")
            _pace(ctx)
            return _score(item)

        s = ctx.step("score", score, durable=True)
        kill_point(f"step:{i}")
        label = ctx.step("label", lambda s=s: f"tier-{s % 3}")
        out.append({**item, "score": s, "label": label})
    return out


@wf.phase(needs=["enrich"])
def charge(ctx, enrich) -> list[dict]:
    trace("start:charge")
    kill_point("start:charge")
    ledger = ctx.inputs["ledger"]
    out = []
    for i, item in enumerate(enrich):
        kill_point(f"loop:charge:{i}")

        def call(key: str, item: dict = item, i: int = i) -> dict:
            kill_point(f"before:charge:{i}")
            _pace(ctx)
            res = gateway_charge(ledger, key, item["amount"] + item["score"] % 5)
            kill_point(f"after:charge:{i}")
            _pace(ctx)
            return res

        res = ctx.effect(f"charge:{i}", call, reconcile=_reconciler(ctx))
        out.append({"id": item["id"], **res})
    return out


@wf.phase(needs=["charge"])
def notify(ctx, charge) -> list[dict]:
    trace("start:notify")
    kill_point("start:notify")
    mailbox = ctx.inputs["mailbox"]
    out = []
    for i, c in enumerate(charge):

        def send(key: str, c: dict = c, i: int = i) -> dict:
            _pace(ctx)
            res = mailer_send(mailbox, key, f"{c['id']}@example.test")
            kill_point(f"after:mail:{i}")
            return res

        mail = ctx.effect(f"mail:{i}", send, idempotent=True)

        def book(key: str, session: Any, c: dict = c, i: int = i) -> dict:
            # The application's own table, written in the transaction that
            # records the effect: both commit or neither.
            kill_point(f"before:book:{i}")
            session.execute(text("CREATE TABLE IF NOT EXISTS torture_books (key TEXT PRIMARY KEY, charge_id TEXT)"))
            session.execute(
                text("INSERT INTO torture_books (key, charge_id) VALUES (:k, :c)"), {"k": key, "c": c["charge_id"]}
            )
            return {"booked": c["charge_id"]}

        booked = ctx.effect(f"book:{i}", book, atomic=True)
        out.append({"id": c["id"], **mail, **booked})
    return out


@wf.phase(needs=["charge", "notify", "load"])
def report(ctx, charge, notify, load) -> dict:
    trace("start:report")
    kill_point("start:report")
    _pace(ctx)
    return {
        "items": len(load),
        "charged": sum(c["amount"] for c in charge),
        "charges": sorted(c["charge_id"] for c in charge),
        "mailed": sorted(n["message_id"] for n in notify),
    }


#: Every kill point this workflow has, for `items` items.
def kill_points(items: int) -> list[str]:
    pts = [f"start:{p.name}" for p in wf.phases]
    for i in range(items):
        pts += [
            f"step:{i}",
            f"loop:charge:{i}",
            f"before:charge:{i}",
            f"after:charge:{i}",
            f"after:mail:{i}",
            f"before:book:{i}",
        ]
    return pts
