"""The one rule of "another operator" (engine/oversight/identity.py), and the served
console passing a proxy-authenticated user on, and nothing else."""

from __future__ import annotations

import pytest

from phasegate.oversight.identity import Who, different_operators, same_person, whoami


def test_another_operator_is_another_account_never_another_name() -> None:
    ada, ada_as_bob = Who("ada", "ada"), Who("bob", "ada")
    assert not different_operators(ada, ada_as_bob, web_account=None)
    assert different_operators(ada, Who("ada", "bob"), web_account=None)


def test_web_users_count_only_under_the_policys_web_account() -> None:
    ann, bob = Who("ann", "www/web:ann"), Who("bob", "www/web:bob")
    assert not different_operators(ann, bob, web_account=None)
    assert not different_operators(ann, bob, web_account="other")
    assert different_operators(ann, bob, web_account="www")
    assert not different_operators(ann, Who("ann", "www/web:ann"), web_account="www")
    # A session without an authenticated user is the server's account alone.
    assert not different_operators(ann, Who("x", "www"), web_account="www")


def test_a_claim_is_someone_elses_when_the_name_or_the_account_differs() -> None:
    assert same_person(Who("ada", "ada"), Who("ada", "ada"))
    assert not same_person(Who("ada", "ops"), Who("bob", "ops"))
    assert not same_person(Who("ada", "ada"), Who("ada", "root"))


def test_whoami_takes_the_name_given_and_the_web_user_from_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHASEGATE_OPERATOR", "env-name")
    monkeypatch.delenv("PHASEGATE_WEB_USER", raising=False)
    me = whoami()
    assert me.operator == "env-name" and me.web_user is None and "/" not in me.account
    assert whoami("given").operator == "given"
    monkeypatch.setenv("PHASEGATE_WEB_USER", "ann")
    assert whoami().web_user == "ann" and whoami().os_account == me.account


def test_the_served_console_passes_only_an_authenticated_user(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual_serve")
    from phasegate.console.web.process import ConsoleProcess

    async def nothing(*_a: object) -> None:
        return None

    monkeypatch.setenv("PHASEGATE_WEB_USER", "forged")  # the server's own environment is not passed on
    plain = ConsoleProcess(["x"], operator="web:root", write_bytes=nothing, write_str=nothing, close=nothing)
    assert "PHASEGATE_WEB_USER" not in plain._build_environment()
    proxied = ConsoleProcess(
        ["x"], operator="ann", web_user="ann", write_bytes=nothing, write_str=nothing, close=nothing
    )
    assert proxied._build_environment()["PHASEGATE_WEB_USER"] == "ann"
