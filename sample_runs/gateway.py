"""A small simulated payment gateway that keeps its own ledger file.

The ledger (`ledger.jsonl`, one JSON line per charge the gateway accepted) is
the outside world's memory, independent of phasegate's store: after a crash it
is what an operator checks to answer "did this charge happen?".

Two flavours, as in real life: an idempotent gateway deduplicates by the
idempotency key it is given (a repeated call returns the first charge), and a
plain one charges every call it receives.

    python -m phasegate.sample_runs.gateway DIR [--key KEY]

prints the ledger in DIR (only the charges for KEY with `--key`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "ledger-v3"
"""The ledger's record format, written to `SCHEMA` beside it and probed by billing."""

DECLINED_SUFFIX = "0002"
"""Cards ending in these digits are declined, like a test card."""


class GatewayUnavailable(ConnectionError):
    """The gateway's lookup API does not answer (the demo's outage)."""


class Gateway:
    """The gateway's view of one merchant account: a folder with its ledger."""

    def __init__(self, root: str | Path, *, idempotent: bool) -> None:
        self.root = Path(root)
        self.idempotent = idempotent
        self.ledger = self.root / "ledger.jsonl"

    @classmethod
    def create(cls, root: str | Path, *, idempotent: bool) -> Gateway:
        gw = cls(root, idempotent=idempotent)
        gw.root.mkdir(parents=True, exist_ok=True)
        (gw.root / "SCHEMA").write_text(SCHEMA_VERSION + "\n")
        gw.ledger.touch()
        return gw

    def schema_version(self) -> str:
        return (self.root / "SCHEMA").read_text().strip()

    def records(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines() if line.strip()]

    def find(self, key: str) -> list[dict[str, Any]]:
        """Every charge the gateway accepted under `key` (more than one means a double charge)."""
        return [r for r in self.records() if r["key"] == key]

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The charge made under `key`, as `charge` returned it, or None: the
        lookup a reconcile hook asks. Raises GatewayUnavailable while the
        lookup is down (a `LOOKUP_DOWN` file in the gateway's folder)."""
        if (self.root / "LOOKUP_DOWN").exists():
            raise GatewayUnavailable("the gateway's lookup API is not answering (503)")
        seen = self.find(key)
        return {**seen[0], "replayed": False} if seen else None

    def set_lookup_down(self, down: bool) -> None:
        flag = self.root / "LOOKUP_DOWN"
        if down:
            flag.write_text("503\n")
        else:
            flag.unlink(missing_ok=True)

    def charge(self, key: str, card: str, amount_cents: int, currency: str = "EUR") -> dict[str, Any]:
        """Charge a card. The record is on the gateway's disk before this returns."""
        if self.idempotent:
            seen = self.find(key)
            if seen:
                return {**seen[0], "replayed": True}
        n = len(self.records())
        charge_id = "ch_" + hashlib.sha256(f"{key}:{n}".encode()).hexdigest()[:14]
        status = "declined" if card.endswith(DECLINED_SUFFIX) else "succeeded"
        record = {
            "key": key,
            "charge_id": charge_id,
            "card": "**** " + card[-4:],
            "amount_cents": amount_cents,
            "currency": currency,
            "status": status,
            "at": round(time.time(), 3),
        }
        with self.ledger.open("a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return {**record, "replayed": False}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m phasegate.sample_runs.gateway", description="Show a simulated gateway's ledger."
    )
    p.add_argument("dir", help="the gateway folder (has ledger.jsonl)")
    p.add_argument("--key", default=None, help="only the charges made under this idempotency key")
    args = p.parse_args(argv)
    gw = Gateway(args.dir, idempotent=False)
    rows = gw.find(args.key) if args.key else gw.records()
    for r in rows:
        print(
            f"{r['charge_id']}  {r['status']:<9} {r['amount_cents'] / 100:>10.2f} {r['currency']}  {r['card']}  {r['key']}"
        )
    if args.key:
        print(f"{len(rows)} charge(s) under {args.key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
