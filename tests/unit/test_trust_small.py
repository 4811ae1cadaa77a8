"""Trust round 3 (#38), the smaller findings that are pure code: a seal key
is refused when it is not one (5: a store, a repeated byte or pattern,
filler). A webhook timestamp of other digits than ASCII (8) is refused by
Standard Webhooks' verifier: tests/engine/test_signed_webhooks.py."""

from __future__ import annotations

import os

import pytest

from phasegate.history import keys


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
