"""An AI assistant's identity (issue 39): which recorded decisions are an
assistant's, the name a client is given, and the one rule of "another
operator" with assistants in it; what `phasegate mcp` returns made safe, its
cursors checked, its bearer token compared."""

from __future__ import annotations

import pytest

from phasegate.assistants import assistant_of, client_name
from phasegate.errors import UsageError
from phasegate.mcp import shaping
from phasegate.mcp.http import authorized
from phasegate.oversight.identity import Who, different_operators, shown


def test_a_client_is_named_in_the_assistants_namespace() -> None:
    assert client_name("claude-ai") == "mcp:claude-ai"
    assert client_name("Visual Studio Code") == "mcp:Visual-Studio-Code"
    assert client_name("\x1b[31m/web:ada\u202e") == "mcp:31m-web-ada"
    assert client_name("") == client_name(None) == client_name("///") == "mcp:unknown"
    assert len(client_name("x" * 500)) == len("mcp:") + 64


def test_which_records_are_an_assistants() -> None:
    assert assistant_of("mcp:claude-ai", "ada/mcp:claude-ai") == "mcp:claude-ai"
    assert assistant_of("triage-bot", "ada/mcp:triage-bot") == "triage-bot"
    assert assistant_of("MCP:x", "ada") == "MCP:x"  # the namespace, whatever the account
    assert assistant_of("ada", "ada") is None
    assert assistant_of("ada", "www/web:ada") is None
    assert assistant_of(None, None) is None


ADA = Who("ada", "ada")
BOT = Who("mcp:claude-ai", "ada/mcp:claude-ai")


@pytest.mark.parametrize(
    ("proposer", "second", "different"),
    [
        (BOT, ADA, True),  # a person under the same account seconds an assistant
        (BOT, Who("bob", "bob"), True),
        (BOT, Who("mcp:claude-ai", "ada"), False),  # a person typing the assistant's name
        (BOT, Who("MCP:Claude-AI", "bob"), False),
        (BOT, Who("mcp:other", "ada/mcp:other"), False),  # an assistant never seconds
        (Who("bot", "ada/mcp:bot"), Who("bot", "bob"), False),
        (ADA, BOT, False),  # nor seconds a person
        (ADA, Who("mcp:x", "bob"), False),
        (ADA, Who("ada", "ada"), False),  # the rule without assistants is unchanged
        (ADA, Who("bob", "bob"), True),
    ],
)
def test_another_operator_with_assistants(proposer: Who, second: Who, different: bool) -> None:
    assert different_operators(proposer, second, web_account=None) is different


def test_a_person_cannot_take_an_assistants_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from phasegate.oversight.identity import whoami

    for name in ("mcp:claude-ai", "MCP:x"):
        with pytest.raises(UsageError, match="is an AI assistant's"):
            whoami(name)
    monkeypatch.setenv("PHASEGATE_OPERATOR", "mcp:bot")
    with pytest.raises(UsageError):
        whoami()
    assert whoami("ada").operator == "ada"


def test_an_assistants_os_account_and_its_words() -> None:
    assert BOT.os_account == "ada" and BOT.web_user is None and BOT.assistant == "mcp:claude-ai"
    assert ADA.assistant is None
    assert shown(BOT) == "mcp:claude-ai (an AI assistant through phasegate mcp, account ada)"


def test_results_are_made_safe_keeping_lines() -> None:
    got = shaping.clean({"k\x1b": ["a\x1b[2Jb", "line\nnext\tcol\r", 3, None, True], "n": 1.5})
    assert got == {"k\\x1b": ["a\\x1b[2Jb", "line\nnext\tcol\\x0d", 3, None, True], "n": 1.5}
    assert shaping.clean("\u202eabc") == "<U+202E>abc"


def test_a_cursor_is_a_short_list_of_scalars() -> None:
    key = [0, "2026-12-07T11:00:00Z", "r1", None, 1.5]
    assert shaping.key_of(shaping.cursor_of(key)) == key
    for bad in ("", "x", "{}", "[]", "[{}]", "[[1]]", "[" + ",".join(["1"] * 9) + "]", "[" * 10000):
        with pytest.raises(UsageError):
            shaping.key_of(bad)


def test_the_bearer_token_is_the_whole_header() -> None:
    assert authorized(b"Bearer s3cret", "s3cret")
    for bad in (None, b"", b"s3cret", b"Bearer s3cre", b"Bearer s3cret ", b"bearer s3cret", b"Basic s3cret"):
        assert not authorized(bad, "s3cret")
