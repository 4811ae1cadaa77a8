"""Signed webhooks, as [Standard Webhooks](https://www.standardwebhooks.com/)
says: what `watch --webhook-secret-file` adds to each POST, and the check a
receiver makes (`verify_webhook`). Any Standard Webhooks library (svix's,
`standardwebhooks`) verifies them.

With `ID` the delivery's id, `T` the POST's time as whole Unix seconds and
`BODY` the request's bytes as sent, each POST carries

- `webhook-id: ID`: one alert's delivery, the same on every retry (and when
  another watch re-sends an alert whose sending was cut short), so a
  receiver drops a duplicate;
- `webhook-timestamp: T`: each attempt its own;
- `webhook-signature: v1,<base64 HMAC-SHA256 under the key of "ID.T.BODY">`.

The key: a secret file holding `whsec_` and base64 (what Standard Webhooks
libraries generate and take) is that base64 decoded; any other secret file
is its bytes as they are (the secret `whsec_` + base64 of those bytes, for a
Standard Webhooks library). The file is read as the seal key is (mode 0600,
this user's, no link followed, at least 32 bytes).

A receiver recomputes the HMAC, compares in constant time, and refuses a
timestamp more than five minutes from its own clock: a captured request
replayed later is refused even though its signature is good.

For one release the POST also carries phasegate's earlier headers,
`X-Phasegate-Timestamp: T` and `X-Phasegate-Signature: v1=<hex HMAC-SHA256 of "T.BODY">`
(deprecated; `verify_webhook` no longer reads them).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping

from ..errors import UsageError
from ..history import keys

ID_HEADER = "webhook-id"
"""The header holding the delivery's id, the same on each retry."""
TIMESTAMP_HEADER = "webhook-timestamp"
"""The header holding the POST's time, whole Unix seconds."""
SIGNATURE_HEADER = "webhook-signature"
"""The header holding `v1,` and the signature in base64 (space-separated, when several)."""
LEGACY_TIMESTAMP_HEADER = "X-Phasegate-Timestamp"
"""Deprecated: the earlier scheme's timestamp header, still sent for one release."""
LEGACY_SIGNATURE_HEADER = "X-Phasegate-Signature"
"""Deprecated: the earlier scheme's `v1=<hex>` over `T.BODY`, still sent for one release."""
TOLERANCE = 300.0
"""Seconds a receiver accepts between the timestamp and its own clock (five minutes)."""
SECRET_PREFIX = "whsec_"
"""How a Standard Webhooks secret begins: the rest is the key in base64."""
MIN_KEY_BYTES = 24
"""The shortest key a `whsec_` secret may decode to (Standard Webhooks asks 24 to 64 bytes)."""
_VERSION = "v1,"
#: How long a timestamp header may be (digits): beyond any clock's.
_MAX_TS_DIGITS = 12


def key_of(secret: bytes | str) -> bytes:
    """The HMAC key a secret stands for: a `whsec_` secret's base64 decoded,
    any other secret's bytes as they are.

    Args:
        secret: The secret, as the file holds it (surrounding whitespace stripped).

    Returns:
        The key's bytes.

    Raises:
        UsageError: A `whsec_` secret whose rest is not base64, or decodes to fewer than 24 bytes.
    """
    raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    raw = raw.strip()
    if not raw.startswith(SECRET_PREFIX.encode()):
        return raw
    try:
        key = base64.b64decode(raw[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("the webhook secret starts with whsec_ but the rest is not base64") from None
    if len(key) < MIN_KEY_BYTES:
        raise UsageError(f"the webhook secret's key is {len(key)} bytes: whsec_ secrets need at least {MIN_KEY_BYTES}")
    return key


def standard_secret(secret: bytes | str) -> str:
    """The secret as a Standard Webhooks library takes it (`whsec_` and the key in base64).

    Args:
        secret: A `whsec_` secret or a raw one.

    Returns:
        `whsec_...`.

    Raises:
        UsageError: As `key_of`.
    """
    return SECRET_PREFIX + base64.b64encode(key_of(secret)).decode("ascii")


def load_secret(path: str) -> bytes:
    """The webhook key, from a secret file read as a seal key is (`history.keys.load`).

    Args:
        path: The secret file.

    Returns:
        The HMAC key (`key_of` the file's content).

    Raises:
        UsageError: the file is missing, not this user's, readable by others,
            too short, or a `whsec_` secret that is not base64.
    """
    return key_of(keys.load(path, name="--webhook-secret-file").secret)


def delivery_id(alert_key: str) -> str:
    """The `webhook-id` of one alert's delivery: derived from what the alert
    announces (its stop), so each retry and each watch sending it says the same.

    Args:
        alert_key: The alert's key in the store (the stop it announces).

    Returns:
        `msg_` and 32 hex digits.
    """
    return "msg_" + hashlib.sha256(alert_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def signature(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value for one POST.

    Args:
        key: The HMAC key (`key_of` the secret).
        msg_id: The delivery's id.
        timestamp: The POST's time, whole Unix seconds.
        body: The request body, as sent.

    Returns:
        `v1,` and the base64 HMAC-SHA256 of `ID.T.BODY`.
    """
    signed = msg_id.encode("utf-8") + b"." + str(int(timestamp)).encode("ascii") + b"." + body
    mac = hmac.new(key, signed, hashlib.sha256).digest()
    return _VERSION + base64.b64encode(mac).decode("ascii")


def sign(key: bytes, body: bytes, msg_id: str, now: float | None = None) -> dict[str, str]:
    """The headers a signed POST carries (the Standard Webhooks three, and the deprecated two).

    Args:
        key: The HMAC key (`key_of` the secret).
        body: The request body, as sent.
        msg_id: The delivery's id (`delivery_id`), the same on each retry.
        now: The time to sign at (default: now).

    Returns:
        Header name -> value.
    """
    ts = int(time.time() if now is None else now)
    legacy = hmac.new(key, str(ts).encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return {
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER: str(ts),
        SIGNATURE_HEADER: signature(key, msg_id, ts, body),
        LEGACY_TIMESTAMP_HEADER: str(ts),
        LEGACY_SIGNATURE_HEADER: "v1=" + legacy,
    }


def verify_webhook(
    secret: bytes | str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float | None = None,
    tolerance: float = TOLERANCE,
) -> bool:
    """A receiver's check of a POST from `phasegate watch --webhook-secret-file`,
    as Standard Webhooks says.

    Args:
        secret: The secret file's content: `whsec_` and base64, or a raw secret.
        body: The request body exactly as received (before any JSON parsing).
        headers: The request's headers; names are matched without regard to case.
        now: The receiver's time (default: now).
        tolerance: Seconds the timestamp may be from `now` (default five minutes).

    Returns:
        True only when one `v1,` signature in `webhook-signature` matches and
        the timestamp (ASCII digits only) is recent: a replay older than
        `tolerance` is False even with a good signature. A malformed secret is False too.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id = lower.get(ID_HEADER, "")
    ts_text = lower.get(TIMESTAMP_HEADER, "")
    sent = lower.get(SIGNATURE_HEADER, "")
    if not msg_id or not (ts_text.isascii() and ts_text.isdigit()) or len(ts_text) > _MAX_TS_DIGITS:
        return False
    ts = int(ts_text)
    at = time.time() if now is None else now
    if abs(at - ts) > tolerance:
        return False
    try:
        key = key_of(secret)
    except UsageError:
        return False
    want = signature(key, msg_id, ts, body).encode("ascii")
    ok = False
    for part in sent.split(" "):
        # Every candidate compared, in constant time each: no early exit tells which matched.
        ok |= hmac.compare_digest(want, part.encode("utf-8", "replace"))
    return ok


__all__ = [
    "ID_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "TOLERANCE",
    "delivery_id",
    "key_of",
    "load_secret",
    "sign",
    "signature",
    "standard_secret",
    "verify_webhook",
]
