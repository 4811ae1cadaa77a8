"""The one identity rule (#29 finding 3): names compared NFKC-normalised and
case-folded; a second never from the proposer's web identity, whatever the
accounts; the header guard refuses a repeated or comma-joined value."""

from __future__ import annotations

from phasegate.console.web import guard
from phasegate.oversight.identity import Who, different_operators, normal, same_person


def test_names_are_compared_normalised_and_case_folded() -> None:
    assert normal("Alice") == normal("alice") == normal("\uff41lice") == normal("ALICE")
    assert normal("alice") != normal("alicia")
    assert same_person(Who("Ada", "ada"), Who("ada", "ada"))
    assert not same_person(Who("ada", "ada"), Who("ada", "bob"))


def test_a_web_identity_seconds_neither_itself_nor_its_other_spellings() -> None:
    alice, alice2 = Who("web:alice", "www/web:alice"), Who("web:Alice", "www/web:Alice")
    assert not different_operators(alice, alice2, web_account="www")
    assert not different_operators(alice, Who("x", "www/web:\uff41lice"), web_account="www")
    # Another OS account claiming the proposer's web identity is still the proposer.
    assert not different_operators(alice, Who("x", "root/web:ALICE"), web_account="www")
    assert different_operators(alice, Who("web:bob", "www/web:bob"), web_account="www")


def test_the_header_guard_refuses_a_repeated_or_joined_value() -> None:
    for value in ("mallory,alice", "mallory, alice", "alice,alice"):
        got = guard.operator_for(header="X-Forwarded-User", value=value, peer="127.0.0.1", login="www")
        assert isinstance(got, guard.Refusal) and got.status == 403, value
    assert guard.operator_for(header="X-Forwarded-User", value="alice", peer="127.0.0.1", login="www") == "alice"
