"""Signed webhooks: what `watch --webhook-secret-file` adds to each POST, and
the check a receiver makes (`verify_webhook`).

The scheme: with `T` the POST's time as whole Unix seconds and `BODY` the
request's bytes as sent, the watch sends

- `X-Phasegate-Timestamp: T`
- `X-Phasegate-Signature: v1=<hex HMAC-SHA256 under the secret of "T.BODY">`

A receiver recomputes the HMAC over the timestamp header, a dot and the raw
body, compares in constant time, and refuses a timestamp more than five
minutes from its own clock: a captured request replayed later is refused even
though its signature is good. The secret file is read as the seal key is
(mode 0600, this user's, no link followed, at least 32 bytes).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

from ..history import keys

TIMESTAMP_HEADER = "X-Phasegate-Timestamp"
"""The header holding the POST's time, whole Unix seconds."""
SIGNATURE_HEADER = "X-Phasegate-Signature"
"""The header holding `v1=` and the signature's hex digits."""
TOLERANCE = 300.0
"""Seconds a receiver accepts between the timestamp and its own clock (five minutes)."""
_VERSION = "v1="


def load_secret(path: str) -> bytes:
    """The webhook secret, read as a seal key is (`history.keys.load`).

    Args:
        path: The secret file.

    Returns:
        The secret's bytes.

    Raises:
        UsageError: the file is missing, not this user's, readable by others, or too short.
    """
    return keys.load(path, name="--webhook-secret-file").secret


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """The signature header's value for one POST.

    Args:
        secret: The shared secret.
        timestamp: The POST's time, whole Unix seconds.
        body: The request body, as sent.

    Returns:
        `v1=` and 64 hex digits.
    """
    mac = hmac.new(secret, str(int(timestamp)).encode("ascii") + b"." + body, hashlib.sha256)
    return _VERSION + mac.hexdigest()


def sign(secret: bytes, body: bytes, now: float | None = None) -> dict[str, str]:
    """The two headers a signed POST carries.

    Args:
        secret: The shared secret.
        body: The request body, as sent.
        now: The time to sign at (default: now).

    Returns:
        Header name -> value.
    """
    ts = int(time.time() if now is None else now)
    return {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: signature(secret, ts, body)}


def verify_webhook(
    secret: bytes,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float | None = None,
    tolerance: float = TOLERANCE,
) -> bool:
    """A receiver's check of a POST from `phasegate watch --webhook-secret-file`.

    Args:
        secret: The shared secret (the file's content, stripped of surrounding whitespace).
        body: The request body exactly as received (before any JSON parsing).
        headers: The request's headers; names are matched without regard to case.
        now: The receiver's time (default: now).
        tolerance: Seconds the timestamp may be from `now` (default five minutes).

    Returns:
        True only when the signature matches and the timestamp is recent:
        a replay older than `tolerance` is False even with a good signature.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ts_text = lower.get(TIMESTAMP_HEADER.lower(), "")
    sent = lower.get(SIGNATURE_HEADER.lower(), "")
    # ASCII digits only: str.isdigit also says yes to "²" (which int() refuses)
    # and to other scripts' digits (which int() reads): neither is a timestamp we sent.
    if not (ts_text.isascii() and ts_text.isdigit()) or len(ts_text) > 12:
        return False
    ts = int(ts_text)
    at = time.time() if now is None else now
    if abs(at - ts) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, ts, body).encode(), sent.encode("utf-8", "replace"))


__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "TOLERANCE", "load_secret", "sign", "signature", "verify_webhook"]
