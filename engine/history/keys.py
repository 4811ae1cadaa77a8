"""The seal key: what makes a seal something only phasegate can write.

Without a key a seal is a plain SHA-256 of a record's canonical fields: it
catches damage and mistakes, but whoever can write the store can recompute
it. With `PHASEGATE_SEAL_KEY_FILE` naming a private file (mode 0600, owned
by this user, outside the store) every seal (checkpoints, effect records,
decisions, policy changes) is an HMAC-SHA256 under that key, so an edit by
anyone without the key is found even when every hash was recomputed.

A keyed seal names its key (`k1.<key id>.<hmac>`: the id is a hash of the
key, which says nothing about it), so `verify` can say which kind of seal a
store carries and a rotation can tell old seals from new.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

KEY_FILE_ENV = "PHASEGATE_SEAL_KEY_FILE"
"""The environment variable naming the key file."""

_MIN_BYTES = 32
"""A key shorter than 256 bits is refused: a short one could be guessed."""
_MAX_BYTES = 4096
_PREFIX = "k1."


@dataclass(frozen=True)
class SealKey:
    """A loaded seal key."""

    secret: bytes = b""
    """The key's bytes (never shown, never stored)."""
    key_id: str = ""
    """A public name of the key: 16 hex digits of a hash over it."""

    def mac(self, data: bytes) -> str:
        """The keyed seal of `data`.

        Args:
            data: The canonical bytes the seal covers.

        Returns:
            `k1.<key id>.<HMAC-SHA256 hex>`.
        """
        return f"{_PREFIX}{self.key_id}.{hmac.new(self.secret, data, hashlib.sha256).hexdigest()}"


def key_id(secret: bytes) -> str:
    """The public name of a key (what `verify` shows and the store records)."""
    return hashlib.sha256(b"phasegate seal key id\0" + secret).hexdigest()[:16]


def describe_seal(stored: str | None, mine: SealKey | None) -> str:
    """Which kind of seal a store carries, in the line `phasegate verify` prints.

    Args:
        stored: The id of the key the store is sealed under; None: plain hashes.
        mine: The key this process holds, or None.

    Returns:
        Plain hashes, or HMACs under a key (its id), and whether `mine` is that key.
    """
    if stored is None:
        extra = f"; {KEY_FILE_ENV} names key {mine.key_id}, not this store's" if mine else ""
        return f"plain SHA-256 hashes (no seal key): they catch damage, not a forger who recomputes them{extra}"
    if mine is not None and mine.key_id == stored:
        return f"keyed: HMAC-SHA256 under key {stored} (checked with {KEY_FILE_ENV})"
    held = f"{KEY_FILE_ENV} names key {mine.key_id}" if mine else f"{KEY_FILE_ENV} is not set"
    return f"keyed: HMAC-SHA256 under key {stored}; {held}, so the keyed seals were not checked"


def is_keyed(seal: str | None) -> bool:
    """Whether a stored seal is keyed (else a plain hash, or none)."""
    return bool(seal) and str(seal).startswith(_PREFIX)


def id_of(seal: str | None) -> str | None:
    """The key id a keyed seal names (None for a plain hash)."""
    if not is_keyed(seal):
        return None
    parts = str(seal).split(".")
    return parts[1] if len(parts) == 3 else None


def load(path: str | os.PathLike[str], name: str = KEY_FILE_ENV) -> SealKey:
    """Read a key file, refusing one that others could read or write.

    Args:
        path: The key file.
        name: What named it, for the refusal (the variable, or a flag such
            as `watch --webhook-secret-file`, whose secret is read the same way).

    Returns:
        The key.

    Raises:
        UsageError: the file is missing, not a regular file, not this user's,
            readable or writable by group or others, or
            shorter than 32 bytes.
    """
    p = Path(path)
    where = f"{name} {str(p)!r}"
    try:
        # O_NOFOLLOW: a link planted in the key's place is not followed.
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"{where}: cannot open it ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{where} is not a regular file")
        if st.st_uid != os.geteuid():
            raise UsageError(f"{where} belongs to uid {st.st_uid}, not this user: a key must be your own")
        if st.st_mode & 0o077:
            raise UsageError(f"{where} has mode {stat.S_IMODE(st.st_mode):04o}; a key file must be 0600 (chmod 600)")
        secret = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    secret = secret.strip()
    if len(secret) < _MIN_BYTES:
        raise UsageError(f"{where} holds {len(secret)} bytes; a key needs at least {_MIN_BYTES}")
    if len(secret) > _MAX_BYTES:
        raise UsageError(f"{where} is larger than {_MAX_BYTES} bytes: not a key file")
    return SealKey(secret, key_id(secret))


_active: tuple[str, SealKey] | None = None
_suspended = False


def suspend(yes: bool) -> None:
    """Check and make seals as if no key were given (`yes`), or as `active`
    says again. The store opened last says which: one whose seals are not
    under this process's key is read with its keyed seals left unchecked
    (they cannot be checked) rather than every one reported as damage, and
    is never written (store.py)."""
    global _suspended
    _suspended = yes


def active() -> SealKey | None:
    """The key this process seals under: `PHASEGATE_SEAL_KEY_FILE`'s, else
    None (plain hashes). Read once per path named.

    Returns:
        The key, or None.

    Raises:
        UsageError: the file named is not a usable key file (`load`).
    """
    global _active
    path = os.environ.get(KEY_FILE_ENV) or ""
    if not path or _suspended:
        return None
    if _active is None or _active[0] != path:
        _active = (path, load(path))
    return _active[1]


def load_for(store_file: Path | None) -> SealKey | None:
    """`active`, refusing a key file that is the store itself.

    Args:
        store_file: The SQLite store (None on PostgreSQL).

    Returns:
        The key, or None.

    Raises:
        UsageError: the file named is not a usable key file (`load`).
    """
    key = active()
    path = os.environ.get(KEY_FILE_ENV) or ""
    if key is not None and store_file is not None:
        try:
            if os.path.samefile(path, store_file):
                raise UsageError(f"{KEY_FILE_ENV} {path!r} is the store itself; keep the key outside the store")
        except OSError:
            pass
    return key


def digest(data: bytes, key: SealKey | None) -> str:
    """A seal over `data`: keyed under `key`, else a plain SHA-256.

    Args:
        data: The canonical bytes sealed.
        key: The key, or None.

    Returns:
        The seal text.
    """
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return key.mac(data)
