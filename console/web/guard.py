"""Who may open a session: the access token, the WebSocket's Origin, the
loopback rules and the operator's name. Pure functions of strings, so every
rule is answered in one place and tested without a server."""

from __future__ import annotations

import hmac
import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from phasegate.ops import is_loopback

#: What a forwarded user name may hold: it ends up in the decision's audit row
#: and on operators' screens, so no spaces, no control or markup characters.
_OPERATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")

#: An HTTP header name (RFC 9110 token characters).
_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}")


def new_token() -> str:
    """A URL-safe access token with 256 bits of randomness."""
    return secrets.token_urlsafe(32)


def token_matches(presented: str, expected: str) -> bool:
    """Compared in constant time, so the token cannot be guessed byte by byte."""
    return hmac.compare_digest(presented.encode("utf-8", "replace"), expected.encode("utf-8"))


def origin_matches(origin: str | None, host: str | None) -> bool:
    """A WebSocket is accepted only from a page of this server: its `Origin`
    must name the host the browser connected to. A page of another site open
    in the operator's browser sends its own origin (cross-site WebSocket
    hijacking); a missing Origin is refused too, since every browser sends one."""
    if not origin or not host:
        return False
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower() and not parts.path


def valid_header_name(name: str) -> bool:
    return _HEADER.fullmatch(name) is not None


@dataclass(frozen=True)
class Refusal:
    """Why a session was refused; the reason is safe to log (it never holds the token)."""

    status: int
    """The HTTP status the refusal is answered with."""
    reason: str
    """Why, in a line safe to log and to show."""


def operator_for(*, header: str | None, value: str | None, peer: str | None, login: str) -> str | Refusal:
    """The name decisions of this session record.

    With `header` (`--operator-header`), an authenticating proxy in front says
    who the user is; the header is believed only from a loopback peer (the
    proxy on this machine) and only when it is one plain name (a repeated or
    comma-joined header is refused: `value` is every copy joined by commas,
    as HTTP joins them). Anything else is
    refused rather than falling back to the server's own user, which would let
    a request that bypassed the proxy act under a name it did not prove."""
    if header is None:
        return f"web:{login}"
    if not is_loopback(peer):
        return Refusal(403, f"{header} is accepted only from a loopback proxy")
    if value is not None and "," in value:
        # A proxy that appends instead of replacing passes the browser's own
        # copy on: which name came from the proxy cannot be told, so neither is believed.
        return Refusal(403, f"{header} was sent more than once or names several users: the proxy must replace it")
    if value is None or _OPERATOR.fullmatch(value) is None:
        return Refusal(403, f"missing or invalid {header}")
    return value


__all__ = [
    "Refusal",
    "is_loopback",
    "new_token",
    "operator_for",
    "origin_matches",
    "token_matches",
    "valid_header_name",
]
