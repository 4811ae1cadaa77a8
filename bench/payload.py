"""The state every engine carries in the checkpoint figures: the same Python
object for all of them, a list of invoice-like records (what a billing phase
hands to the next), sized so its canonical JSON is close to the target bytes."""

from __future__ import annotations

from typing import Any

from phasegate import _json

SIZES: dict[str, int] = {"1KB": 1024, "64KB": 64 * 1024, "1MB": 1024 * 1024}


def state(nbytes: int) -> dict[str, Any]:
    def rec(i: int) -> dict[str, Any]:
        return {
            "id": f"inv-{i:07d}",
            "customer": f"cust-{i % 997:05d}",
            "amount": 100 + i % 9000,
            "currency": "EUR",
            "note": "x" * 160,
        }

    one = len(_json.dumps(rec(0))) + 1
    n = max(1, (nbytes - 12) // one)
    doc: dict[str, Any] = {"rows": [rec(i) for i in range(n)], "pad": ""}
    short = nbytes - len(_json.dumps(doc))
    if short > 0:
        doc["pad"] = "p" * short
    return doc


def text(nbytes: int) -> str:
    """The canonical JSON phasegate stores for `state(nbytes)`: the raw limit's bytes."""
    return _json.dumps(state(nbytes))
