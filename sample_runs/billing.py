"""Invoice billing: a month's invoices are loaded, priced, charged, receipted
and archived.

What it shows:
- a costly durable step: each invoice is priced once (`price:<id>`); a
  process killed half-way through pricing keeps the invoices it had priced;
- effects against a simulated payment gateway that keeps its own ledger
  (`phasegate.sample_runs.gateway`). With `idempotent: true` the gateway deduplicates by
  the effect's key, so a charge interrupted mid-call is simply repeated; with
  `idempotent: false` it charges every call, so a process killed between the
  charge and its record leaves an in-doubt effect for an operator to settle
  (the gateway's ledger says whether it happened);
- environment probes: the tax-rate config file's hash (the `price` phase
  depends on it), the gateway ledger's schema version, the code version.

Inputs: `workdir` (made by `prepare`), `customer`, `batch`, `idempotent`, `pace`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from phasegate import PhaseContext, Reconciled, Workflow

from . import __version__
from ._points import nap, pause_point
from .gateway import Gateway, GatewayUnavailable

wf = Workflow(
    "billing",
    # What on-call should do, shown by `status`, the console and `watch` alerts.
    runbooks={
        "env_mismatch": "Tax rates or ledger schema moved: check the finance change log, then approve or rewind to price.",
        "in_doubt_effect:charge": "The gateway's lookup could not say: look the charge key up in the gateway "
        "dashboard; confirm_effect --result with its receipt if it is there, retry_effect if not.",
        "failed": "https://wiki.example.com/runbooks/billing#failed",
    },
)


class Line(BaseModel):
    sku: str
    qty: int
    unit_cents: int
    rate: str = "standard"


class Invoice(BaseModel):
    id: str
    customer: str
    card: str
    lines: list[Line]


class Priced(BaseModel):
    id: str
    card: str
    net_cents: int
    tax_cents: int
    total_cents: int


class Charge(BaseModel):
    id: str
    total_cents: int
    charge_id: str
    status: str
    replayed: bool = False


def _workdir(inputs: dict[str, Any]) -> Path:
    return Path(inputs["workdir"])


# -- probes: what the checkpoints were written against -----------------------


@wf.probe("tax_rates")
def tax_rates_hash(inputs: dict[str, Any]) -> dict[str, str]:
    """The tax-rate table prices were computed with: which file, the table it
    names and its hash, so an operator sees what changed, not only that
    something did (#28)."""
    data = (_workdir(inputs) / "config" / "tax_rates.json").read_bytes()
    try:
        table = str(json.loads(data).get("table", "?"))
    except (ValueError, AttributeError):
        table = "unreadable"
    return {"file": "config/tax_rates.json", "table": table, "sha256": hashlib.sha256(data).hexdigest()[:16]}


@wf.probe("ledger_schema")
def ledger_schema(inputs: dict[str, Any]) -> str:
    """The gateway ledger's record format."""
    return Gateway(_workdir(inputs) / "gateway", idempotent=True).schema_version()


@wf.probe("code_version")
def code_version() -> str:
    return f"sample_runs {__version__}"


# -- phases --------------------------------------------------------------------


@wf.phase()
def load_invoices(ctx: PhaseContext) -> list[Invoice]:
    """Read the batch's invoices (cheap; redone if interrupted)."""
    by_id: dict[str, Invoice] = {}
    with (_workdir(ctx.inputs) / "invoices.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            inv = by_id.setdefault(
                row["invoice"], Invoice(id=row["invoice"], customer=row["customer"], card=row["card"], lines=[])
            )
            inv.lines.append(
                Line(sku=row["sku"], qty=int(row["qty"]), unit_cents=int(row["unit_cents"]), rate=row["rate"])
            )
    return list(by_id.values())


def price_invoice(inv: Invoice, rates: dict[str, float], inputs: dict[str, Any]) -> Priced:
    nap(inputs, 0.15)  # the pricing service is slow: this is why the step is durable
    net = sum(line.qty * line.unit_cents for line in inv.lines)
    tax = sum(round(line.qty * line.unit_cents * rates[line.rate]) for line in inv.lines)
    return Priced(id=inv.id, card=inv.card, net_cents=net, tax_cents=tax, total_cents=net + tax)


@wf.phase(needs=["load_invoices"], probes=["tax_rates"])
def price(ctx: PhaseContext, load_invoices: list[Invoice]) -> list[Priced]:
    """Price every invoice with the current tax rates, one durable step each."""
    rates = json.loads((_workdir(ctx.inputs) / "config" / "tax_rates.json").read_text())["rates"]
    out = []
    for inv in load_invoices:
        out.append(ctx.step(f"price:{inv.id}", price_invoice, inv, rates, ctx.inputs, durable=True))
        pause_point(f"priced:{inv.id}")
    return out


def _reconciler(gw: Gateway) -> Any:
    """Asks the gateway's ledger whether a charge in doubt went through: a
    resume settles it without a person unless the lookup itself is down."""

    def reconcile(key: str) -> Reconciled:
        try:
            seen = gw.lookup(key)
        except GatewayUnavailable as exc:
            return Reconciled.unknown(str(exc))
        if seen is None:
            return Reconciled.not_done(why="the gateway's ledger has no charge under this key")
        return Reconciled.done(seen, why=f"the gateway's ledger has {seen['charge_id']}")

    return reconcile


@wf.phase(needs=["price"])
def charge(ctx: PhaseContext, price: list[Priced]) -> list[Charge]:
    """Charge each card once: an effect per invoice, keyed by run, phase and invoice."""
    pause_point("start:charge")
    gw = Gateway(_workdir(ctx.inputs) / "gateway", idempotent=bool(ctx.inputs.get("idempotent", True)))
    out = []
    for p in price:

        def call(key: str, p: Priced = p) -> dict[str, Any]:
            nap(ctx.inputs, 0.05)
            res = gw.charge(key, p.card, p.total_cents)
            # The gateway has the charge on its disk; our record of it is not written yet.
            pause_point(f"charged:{p.id}")
            return res

        res = ctx.effect(f"charge:{p.id}", call, idempotent=gw.idempotent, reconcile=_reconciler(gw))
        out.append(
            Charge(
                id=p.id,
                total_cents=p.total_cents,
                charge_id=res["charge_id"],
                status=res["status"],
                replayed=bool(res.get("replayed")),
            )
        )
    return out


@wf.phase(needs=["charge", "load_invoices"])
def send_receipts(ctx: PhaseContext, charge: list[Charge], load_invoices: list[Invoice]) -> list[str]:
    """Email a receipt for each successful charge. The outbox file is named by
    the effect's key, so sending again overwrites rather than duplicates."""
    outbox = _workdir(ctx.inputs) / "outbox"
    outbox.mkdir(exist_ok=True)
    customers = {inv.id: inv.customer for inv in load_invoices}
    sent = []
    for c in charge:
        if c.status != "succeeded":
            continue

        def send(key: str, c: Charge = c) -> str:
            path = outbox / (hashlib.sha256(key.encode()).hexdigest()[:16] + ".eml")
            path.write_text(
                f"To: billing@{customers[c.id]}.example\nSubject: Receipt {c.id}\n\n"
                f"We charged {c.total_cents / 100:.2f} EUR ({c.charge_id}).\n"
            )
            return path.name

        sent.append(ctx.effect(f"receipt:{c.id}", send, idempotent=True))
    return sent


@wf.phase(needs=["price", "charge", "send_receipts"])
def archive(ctx: PhaseContext, price: list[Priced], charge: list[Charge], send_receipts: list[str]) -> dict[str, Any]:
    """Write the batch summary to the archive folder (rewriting it is harmless)."""
    summary = {
        "batch": ctx.inputs.get("batch"),
        "customer": ctx.inputs.get("customer"),
        "invoices": len(price),
        "charged_cents": sum(c.total_cents for c in charge if c.status == "succeeded"),
        "declined": [c.id for c in charge if c.status != "succeeded"],
        "receipts": len(send_receipts),
    }
    folder = _workdir(ctx.inputs) / "archive"
    folder.mkdir(exist_ok=True)
    tmp = folder / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2))
    os.replace(tmp, folder / "summary.json")
    return summary


# -- a working directory for one run ---------------------------------------------


def prepare(
    workdir: str | Path,
    *,
    customer: str = "acme",
    batch: str = "2026-11",
    invoices: int = 4,
    idempotent: bool = True,
    pace: float = 0.0,
) -> dict[str, Any]:
    """Lay out a billing working directory and return a run's inputs for it."""
    root = Path(workdir).absolute()
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "tax_rates.json").write_text(
        json.dumps({"table": "EU-2026-Q4", "rates": {"standard": 0.20, "reduced": 0.055}}, indent=2) + "\n"
    )
    Gateway.create(root / "gateway", idempotent=idempotent)
    seed = int(hashlib.sha256(customer.encode()).hexdigest(), 16)
    with (root / "invoices.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["invoice", "customer", "card", "sku", "qty", "unit_cents", "rate"])
        for i in range(invoices):
            inv = f"INV-{1001 + i}"
            card = f"4242 4242 4242 {(seed >> (4 * i)) % 9000 + 1000}"
            for j in range(1 + (seed >> i) % 3):
                w.writerow(
                    [
                        inv,
                        customer,
                        card,
                        f"SKU-{(seed >> (i + j)) % 90 + 10}",
                        1 + (i + j) % 4,
                        500 + ((seed >> (2 * i + j)) % 20000),
                        "reduced" if j == 2 else "standard",
                    ]
                )
    return {"workdir": str(root), "customer": customer, "batch": batch, "idempotent": idempotent, "pace": pace}
