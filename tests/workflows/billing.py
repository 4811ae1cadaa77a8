"""A small billing workflow for tests, with a simulated gateway and kill points.

Environment knobs (read at call time, so a subprocess can be steered):
  PHASEGATE_TEST_KILL_AT   comma-separated points at which the process SIGKILLs
                           itself: start:<phase>, before:<effect>, after:<effect>,
                           step:<name>
  PHASEGATE_TEST_TRACE     a file that gets one line per phase start
  PHASEGATE_TEST_TAX       a file whose content is the `tax_table` probe
  PHASEGATE_TEST_SLOW      seconds to sleep in each charge (to kill from outside)
  PHASEGATE_TEST_RECONCILE the charge's reconcile hook: unset (none), "ledger" (looks
                           the key up in the gateway's ledger), "unknown", "raise"
                           or "hang" (never answers; PHASEGATE_TEST_RECONCILE_TIMEOUT)
The gateway's own ledger is `inputs["ledger"]`: one JSON line per charge that
reached it, so a test can count double charges independently of the store.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

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


def gateway_charge(ledger: str, key: str, amount: int, *, idempotent: bool) -> dict:
    """The outside world: appends to its own ledger. The non-idempotent
    gateway charges every call; the idempotent one deduplicates by key."""
    path = Path(ledger)
    if idempotent and path.exists():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["key"] == key:
                return {"charge_id": rec["charge_id"], "amount": rec["amount"], "replayed": True}
    charge_id = f"ch_{abs(hash((key, time.time_ns()))) % 10**8}"
    with path.open("a") as fh:
        fh.write(json.dumps({"key": key, "amount": amount, "charge_id": charge_id}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return {"charge_id": charge_id, "amount": amount, "replayed": False}


def ledger_keys(ledger: str) -> list[str]:
    path = Path(ledger)
    if not path.exists():
        return []
    return [json.loads(line)["key"] for line in path.read_text().splitlines()]


def reconciler(ledger: str):
    """The charge's reconcile hook, as PHASEGATE_TEST_RECONCILE chooses."""
    mode = os.environ.get("PHASEGATE_TEST_RECONCILE", "")
    if not mode:
        return None

    def lookup(key: str) -> Reconciled:
        trace(f"reconcile:{key}")
        if mode == "unknown":
            return Reconciled.unknown("the gateway's lookup is down")
        if mode == "raise":
            raise ConnectionError("gateway lookup refused the connection")
        if mode == "hang":
            time.sleep(3600)  # sleep: hangs here until the test kills it
        path = Path(ledger)
        for line in path.read_text().splitlines() if path.exists() else []:
            rec = json.loads(line)
            if rec["key"] == key:
                receipt = {"charge_id": rec["charge_id"], "amount": rec["amount"], "replayed": False}
                return Reconciled.done(receipt, why=f"the gateway has {rec['charge_id']}")
        return Reconciled.not_done(why="the gateway has no charge with this key")

    return lookup


wf = Workflow("test-billing")


@wf.probe("tax_table")
def tax_table() -> str:
    path = os.environ.get("PHASEGATE_TEST_TAX")
    return Path(path).read_text() if path and Path(path).exists() else "default"


@wf.phase()
def load(ctx) -> list[dict]:
    trace("start:load")
    kill_point("start:load")
    n = int(ctx.inputs.get("invoices", 3))
    return [{"id": f"inv-{i}", "amount": 100 + i} for i in range(n)]


def _price(rows: list[dict]) -> list[dict]:
    return [dict(r, total=r["amount"] * 2) for r in rows]


@wf.phase(needs=["load"], probes=["tax_table"])
def price(ctx, load) -> list[dict]:
    trace("start:price")
    kill_point("start:price")
    priced = ctx.step("price_all", _price, load, durable=True)
    kill_point("step:price_all")
    return priced


@wf.phase(needs=["price"])
def charge(ctx, price) -> list[dict]:
    trace("start:charge")
    kill_point("start:charge")
    idem = bool(ctx.inputs.get("idempotent", False))
    ledger = ctx.inputs["ledger"]
    slow = float(os.environ.get("PHASEGATE_TEST_SLOW", "0") or 0)
    out = []
    for row in price:
        name = f"charge:{row['id']}"

        def call(key: str, row: dict = row, name: str = name) -> dict:
            kill_point(f"before:{name}")
            if slow:
                time.sleep(slow)  # sleep: a slow gateway, so a test can act inside the charge
            res = gateway_charge(ledger, key, row["total"], idempotent=idem)
            kill_point(f"after:{name}")
            return res

        res = ctx.effect(
            name,
            call,
            idempotent=idem,
            reconcile=reconciler(ledger),
            reconcile_timeout=float(os.environ.get("PHASEGATE_TEST_RECONCILE_TIMEOUT", "30")),
        )
        out.append({"id": row["id"], "total": row["total"], "charge_id": res["charge_id"] if res else None})
    return out


@wf.phase(needs=["charge", "load"], floor=["charge"])
def report(ctx, charge, load=None) -> dict:
    trace("start:report")
    kill_point("start:report")
    return {
        "charged": len(charge),
        "total": sum(c["total"] for c in charge),
        "invoices": None if load is None else len(load),
        "missing": sorted(ctx.missing),
    }


# -- receipts: a workflow whose later phases read what the gateway answered ----
# The charge phase keeps each receipt's amount, and the report adds them up:
# what an operator confirms as an effect's result is what the run goes on with.

receipts = Workflow("test-receipts")


@receipts.phase()
def invoices(ctx) -> list[dict]:
    n = int(ctx.inputs.get("invoices", 3))
    return [{"id": f"inv-{i}", "amount": 100 + i} for i in range(n)]


@receipts.phase(needs=["invoices"])
def collect(ctx, invoices) -> list[dict]:
    ledger = ctx.inputs["ledger"]
    out = []
    for row in invoices:
        name = f"charge:{row['id']}"

        def call(key: str, row: dict = row, name: str = name) -> dict:
            kill_point(f"before:{name}")
            res = gateway_charge(ledger, key, row["amount"], idempotent=False)
            kill_point(f"after:{name}")
            return res

        receipt = ctx.effect(name, call)
        out.append({"id": row["id"], "charge_id": receipt["charge_id"], "amount": receipt["amount"]})
    return out


@receipts.phase(needs=["collect"])
def summary(ctx, collect) -> dict:
    return {"charged_total": sum(r["amount"] for r in collect), "charges": len(collect)}
