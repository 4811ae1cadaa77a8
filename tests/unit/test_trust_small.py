"""Trust round 3 (#38), the smaller findings that are pure code: a webhook
timestamp is ASCII digits only (8), and a seal key is refused when it is not
one (5: a store, a repeated byte or pattern, filler)."""

from __future__ import annotations

import os

import pytest

from phasegate.alerts.signing import TIMESTAMP_HEADER, sign
from phasegate.history import keys
from phasegate.ops import verify_webhook

SECRET = os.urandom(32)


@pytest.mark.parametrize("ts", ["²", "1²", "١٧٠٠٠٠٠٠٠٠", "１７０００", "17 ", "-1", "+1", ""])
def test_a_timestamp_of_other_digits_is_refused_not_raised(ts: str) -> None:
    body = b"{}"
    headers = {**sign(SECRET, body, now=1_700_000_000), TIMESTAMP_HEADER: ts}
    assert verify_webhook(SECRET, body, headers, now=1_700_000_000) is False


def test_an_ascii_timestamp_still_verifies() -> None:
    body = b'{"a":1}'
    assert verify_webhook(SECRET, body, sign(SECRET, body, now=1_700_000_000), now=1_700_000_001)


@pytest.mark.parametrize(
    ("secret", "why"),
    [
        (b"a" * 32, "repeated"),
        (b"ab" * 24, "repeated"),
        (b"password" * 5, "repeated"),
        (b"abcdabcdabcdabcdabcdabcdabcdabcdX", "different bytes"),
        (b"SQLite format 3\x00" + bytes(range(16, 96)), "SQLite"),
        (b"aaaaaaaaaaaaaaaaaaaaaaaaaabcdefghij", "entropy"),
    ],
)
def test_what_is_not_a_key_is_named(secret: bytes, why: str) -> None:
    assert why in (keys.weakness(secret) or ""), keys.weakness(secret)


@pytest.mark.parametrize(
    "make", [lambda: os.urandom(32), lambda: os.urandom(32).hex().encode(), lambda: os.urandom(33)]
)
def test_real_keys_pass(make) -> None:
    secret = make()
    assert keys.weakness(secret) is None
