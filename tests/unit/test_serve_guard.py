"""The admission rules of `phasegate serve`, one function each (no server)."""

from __future__ import annotations

import pytest

from phasegate.console.web import guard


def test_tokens_are_long_random_and_compared_whole() -> None:
    a, b = guard.new_token(), guard.new_token()
    assert a != b and len(a) >= 43
    assert guard.token_matches(a, a)
    assert not guard.token_matches(a[:-1], a)
    assert not guard.token_matches(a + "x", a)
    assert not guard.token_matches("", a)
    assert not guard.token_matches("é" * 43, a)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
        ("::", False),
        ("example.com", False),
        ("", False),
        (None, False),
    ],
)
def test_loopback(host: str | None, loopback: bool) -> None:
    assert guard.is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("origin", "host", "ok"),
    [
        ("http://127.0.0.1:8765", "127.0.0.1:8765", True),
        ("https://console.example.com", "console.example.com", True),
        ("https://Console.Example.com", "console.example.com", True),
        ("http://127.0.0.1:9999", "127.0.0.1:8765", False),
        ("http://localhost:8765", "127.0.0.1:8765", False),
        ("https://evil.example", "console.example.com", False),
        ("null", "127.0.0.1:8765", False),
        ("file://", "127.0.0.1:8765", False),
        ("http://127.0.0.1:8765/page", "127.0.0.1:8765", False),
        (None, "127.0.0.1:8765", False),
        ("http://127.0.0.1:8765", None, False),
    ],
)
def test_origin(origin: str | None, host: str | None, ok: bool) -> None:
    assert guard.origin_matches(origin, host) is ok


def test_operator_without_a_header_is_the_servers_login() -> None:
    assert guard.operator_for(header=None, value="mallory", peer="10.0.0.5", login="ops") == "web:ops"


def test_operator_header_is_believed_only_from_a_loopback_peer() -> None:
    kw = {"header": "X-Forwarded-User", "login": "ops"}
    assert guard.operator_for(value="ana@example.com", peer="127.0.0.1", **kw) == "ana@example.com"
    refused = guard.operator_for(value="ana@example.com", peer="10.0.0.5", **kw)
    assert isinstance(refused, guard.Refusal) and refused.status == 403
    assert isinstance(guard.operator_for(value="ana@example.com", peer=None, **kw), guard.Refusal)


@pytest.mark.parametrize("value", [None, "", "ana ops", "-ana", "ana\x1b[31m", "[b]ana[/b]", "a" * 129, "ана"])
def test_operator_header_values_that_are_not_plain_names_are_refused(value: str | None) -> None:
    refused = guard.operator_for(header="X-Forwarded-User", value=value, peer="127.0.0.1", login="ops")
    assert isinstance(refused, guard.Refusal)


@pytest.mark.parametrize(
    ("name", "ok"), [("X-Forwarded-User", True), ("Remote-User", True), ("X User", False), ("", False)]
)
def test_header_names(name: str, ok: bool) -> None:
    assert guard.valid_header_name(name) is ok
