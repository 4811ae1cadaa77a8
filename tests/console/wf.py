"""The workflow behind the console's fixture store: a small billing job whose
tests can interrupt it at a phase or inside an effect (KeyboardInterrupt, the
way Ctrl-C or a deploy's SIGINT stops a real one) and change its probe."""

from __future__ import annotations

from typing import Any

from phasegate import Workflow

#: Steering from the builder: where to interrupt, and the probed tax table.
HOOKS: dict[str, Any] = {"interrupt": None, "tax": "tax-2026-01", "fail": None}

wf = Workflow("billing")


def _maybe_stop(point: str) -> None:
    if HOOKS["interrupt"] == point:
        raise KeyboardInterrupt(point)


@wf.probe("tax_table")
def tax_table() -> str:
    return str(HOOKS["tax"])


@wf.phase(rederivable=False)
def fetch(ctx) -> list[dict]:
    """Reads invoices from a ledger that moves on: a lost copy cannot be re-fetched."""
    _maybe_stop("fetch")
    return [{"id": f"inv-{i}", "amount": 100 + i} for i in range(int(ctx.inputs.get("invoices", 2)))]


def _price(rows: list[dict]) -> list[dict]:
    return [dict(r, total=r["amount"] * 2) for r in rows]


@wf.phase(needs=["fetch"], probes=["tax_table"])
def price(ctx, fetch) -> list[dict]:
    _maybe_stop("price")
    return ctx.step("price_all", _price, fetch, durable=True)


@wf.phase(needs=["price"])
def charge(ctx, price) -> list[dict]:
    _maybe_stop("charge")
    if HOOKS["fail"]:
        raise RuntimeError(HOOKS["fail"])
    out = []
    for row in price:
        name = f"charge:{row['id']}"

        def call(key: str, row: dict = row, name: str = name) -> dict:
            _maybe_stop(f"effect:{name}")
            return {"charge_id": f"ch-{row['id']}", "amount": row["total"]}

        res = ctx.effect(name, call)
        out.append({"id": row["id"], "charge_id": res["charge_id"]})
    return out


@wf.phase(needs=["charge", "fetch"], floor=["charge"])
def report(ctx, charge, fetch=None) -> dict:
    _maybe_stop("report")
    return {"charged": len(charge), "missing": sorted(ctx.missing)}
