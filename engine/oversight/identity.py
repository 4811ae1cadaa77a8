"""Who is acting: the name an operator gives, and the account that proves it.

An `--operator` text (or `$PHASEGATE_OPERATOR`) is what the audit shows, but
anyone can type any name. What a second operator must differ in is what the
operating system vouches for: the process's account (its real uid's passwd
name). Behind `phasegate serve --operator-header` every session runs under the
server's one account; there the authenticated user the proxy named
(`$PHASEGATE_WEB_USER`, set by the server for that session's console) tells
two people apart, but only when the store's policy names that account as the
web server's (`phasegate policy --web-account`): any other account could set
the variable itself, so for it the variable proves nothing.
"""

from __future__ import annotations

import getpass
import os
import unicodedata
from dataclasses import dataclass

from ..assistants import MARK, PREFIX, assistant_of
from ..errors import UsageError

WEB_USER_ENV = "PHASEGATE_WEB_USER"
"""Set by `phasegate serve` for each session's console when a proxy
authenticated its user (`--operator-header`); trusted only for the account
the policy names (see the module's docstring)."""

_WEB = "/web:"
"""Joins an account and a web user in the stored `account` text ("www/web:ada");
a passwd name holds no "/"."""


@dataclass(frozen=True)
class Who:
    """Who records something: the name shown, and the account behind it."""

    operator: str
    """The name shown and recorded: `--operator`, `$PHASEGATE_OPERATOR` or the login name."""
    account: str
    """The OS account, with "/web:USER" appended for an authenticated web session."""

    @property
    def os_account(self) -> str:
        """The OS account alone, without a web session's user or an assistant's name."""
        return self.account.split(_WEB, 1)[0].split(MARK, 1)[0]

    @property
    def assistant(self) -> str | None:
        """The assistant's name when an AI assistant records this (`phasegate mcp`), or None for a person."""
        return assistant_of(self.operator, self.account)

    @property
    def web_user(self) -> str | None:
        """The authenticated user of a served web session, or None."""
        _acc, sep, user = self.account.partition(_WEB)
        return user if sep else None


def os_account() -> str:
    """The passwd name of this process's real uid (the uid itself when it has none)."""
    uid = os.getuid()
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):  # no passwd entry in some containers
        return f"uid:{uid}"


def login_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return "unknown"


def whoami(operator: str | None = None) -> Who:
    """The acting operator: `operator`, else `$PHASEGATE_OPERATOR`, else the
    login name; and this process's account (plus a served session's user).

    Args:
        operator: The name given (`--operator`), or None.

    Returns:
        Who the audit will record.

    Raises:
        UsageError: The name is in the AI assistants' namespace ("mcp:..."):
            a person decides, claims and seconds under their own name.
    """
    name = operator or os.environ.get("PHASEGATE_OPERATOR") or login_name()
    if assistant_of(name, None) is not None:
        raise UsageError(
            f"the operator name {name!r} is an AI assistant's (mcp:...): a person decides, claims and seconds"
            " under their own name; an assistant only proposes, through phasegate mcp"
        )
    account = os_account()
    web = os.environ.get(WEB_USER_ENV)
    if web:
        account = f"{account}{_WEB}{web}"
    return Who(name, account)


def assistant_who(name: str) -> Who:
    """Who an assistant behind `phasegate mcp` records as: its name, under
    this process's account marked as an assistant's.

    Args:
        name: The assistant's name ("mcp:claude-ai", or the server's `--operator`).

    Returns:
        The identity its proposals carry.
    """
    return Who(name, f"{os_account()}{MARK}{name.removeprefix(PREFIX)}")


def normal(name: str | None) -> str:
    """A name as identities compare it: NFKC-normalised and case-folded, so
    `Alice`, `alice` and a full-width `ａｌｉｃｅ` are one person.

    Args:
        name: An operator name or a web user (None: none).

    Returns:
        The comparable form ("" for None).
    """
    return unicodedata.normalize("NFKC", name or "").casefold()


def same_person(a: Who, b: Who) -> bool:
    """For claims: the same name under the same account (names compared as
    `normal` makes them). A claim is a note to colleagues, so a different
    name on a shared account counts as someone else."""
    return (
        normal(a.operator) == normal(b.operator)
        and a.os_account == b.os_account
        and normal(a.web_user) == normal(b.web_user)
    )


def different_operators(a: Who, b: Who, *, web_account: str | None) -> bool:
    """For a second: the one rule of "another operator". Never the same web
    identity (compared as `normal` makes it), whatever the accounts; then
    different OS accounts, or two web sessions of the policy's web account
    whose authenticated users differ. Never a different `--operator` text alone.
    With an AI assistant (`phasegate mcp`), `a` is the proposer and `b` the
    seconder: an assistant never seconds, and a person seconds an assistant's
    proposal under any account, but never under the assistant's name."""
    if b.assistant is not None:
        return False
    if a.assistant is not None:
        return normal(a.operator) != normal(b.operator)
    if a.web_user is not None and b.web_user is not None and normal(a.web_user) == normal(b.web_user):
        return False
    if a.os_account != b.os_account:
        return True
    if web_account is None or a.os_account != web_account:
        return False
    return a.web_user is not None and b.web_user is not None


def distinct(operator: str, account: str, other_operator: str, other_account: str, web_account: str | None) -> bool:
    """`different_operators` over stored names and accounts (the form
    history/trail.py takes the rule in, to check a recorded second)."""
    return different_operators(Who(operator, account), Who(other_operator, other_account), web_account=web_account)


def shown(who: Who) -> str:
    """ "ada (account ada)": the audit's way of naming both."""
    if who.assistant is not None:
        return f"{who.operator} (an AI assistant through phasegate mcp, account {who.os_account})"
    if who.web_user is not None:
        return f"{who.operator} (account {who.os_account}, web user {who.web_user})"
    return f"{who.operator} (account {who.account})"
