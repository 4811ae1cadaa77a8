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
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError

KEY_FILE_ENV = "PHASEGATE_SEAL_KEY_FILE"
"""The environment variable naming the key file."""
RESEAL_KEY_FLAG = "reseal --key-file"
"""The flag naming a new key file, as a refusal names it."""

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
    source: str = field(default="", compare=False)
    """The file it was read from ("" when none): its holder's own place,
    where what it saw of a store's policy is kept (history/witness.py)."""

    def mac(self, data: bytes) -> str:
        """The keyed seal of `data`.

        Args:
            data: The canonical bytes the seal covers.

        Returns:
            `k1.<key id>.<HMAC-SHA256 hex>`.
        """
        if not self.secret:
            raise ValueError(f"the key {self.key_id} is not held here: nothing may be sealed under it")
        return f"{_PREFIX}{self.key_id}.{hmac.new(self.secret, data, hashlib.sha256).hexdigest()}"

    @property
    def held(self) -> bool:
        """Whether this process holds the key's bytes (else it knows only its
        id: the store is keyed under it, its keyed seals cannot be checked
        here, and nothing may be sealed)."""
        return bool(self.secret)

    @classmethod
    def unheld(cls, key_id: str) -> SealKey:
        """The key a store is sealed under, known by its id alone.

        Args:
            key_id: The id the store's records (or meta) name.

        Returns:
            A key that checks a seal's kind and key id, never its HMAC, and seals nothing.
        """
        return cls(b"", key_id)


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
    return SealKey(secret, key_id(secret), str(p))


_SQLITE_HEADER = b"SQLite format 3\x00"
"""Every SQLite file's first bytes: a store (or any database) is no key,
since every store begins with the same bytes."""
_MIN_DISTINCT = 8
"""Fewer different bytes than this is filler, not a key."""
_MIN_BITS = 96.0
"""The least entropy a key's bytes may show (Shannon, over its byte counts)."""


def weakness(secret: bytes) -> str | None:
    """Why `secret` is not a key (None when it may be one): a database
    file, a repeated byte or pattern, filler of too few different bytes.

    Args:
        secret: The key file's bytes, stripped.

    Returns:
        None, or the reason in a few words.
    """
    if secret.startswith(_SQLITE_HEADER[:15]):
        return "is an SQLite database (a store?), not a key: every store begins with the same bytes"
    n = len(secret)
    for period in range(1, n // 2 + 1):
        if n % period == 0 and secret[:period] * (n // period) == secret:
            return f"is {secret[:period][:8]!r}... repeated, not a key"
    counts = [secret.count(bytes([b])) for b in set(secret)]
    if len(counts) < _MIN_DISTINCT:
        return f"holds only {len(counts)} different bytes: filler, not a key"
    bits = -sum(c * math.log2(c / n) for c in counts)
    if bits < _MIN_BITS:
        return (
            f"shows about {bits:.0f} bits of entropy; a key needs at least {_MIN_BITS:.0f}"
            " (make one with `head -c 32 /dev/urandom | base64`)"
        )
    return None


def load_seal_key(path: str | os.PathLike[str], name: str = KEY_FILE_ENV) -> SealKey:
    """`load` a seal key, refusing what is not one: a store or SQLite file,
    a repeated byte or pattern, printable filler (`weakness`).

    Args:
        path: The key file.
        name: What named it (`PHASEGATE_SEAL_KEY_FILE`, `reseal --key-file`).

    Returns:
        The key.

    Raises:
        UsageError: the file is not a usable key file (`load`), or not a key.
    """
    key = load(path, name)
    if (why := weakness(key.secret)) is not None:
        raise UsageError(f"{name} {str(path)!r} {why}")
    return key


_loaded: dict[str, SealKey] = {}
"""Key files read, by path: a file is read once; which key a store uses is
the store's own (`Store.seal_key`), never a process-wide choice."""


def from_env() -> SealKey | None:
    """The key `PHASEGATE_SEAL_KEY_FILE` names, else None. The file is read
    once per path; the key is handed to the store that opens with it, and
    nothing else keeps it.

    Returns:
        The key, or None.

    Raises:
        UsageError: the file named is not a usable key file (`load`).
    """
    path = os.environ.get(KEY_FILE_ENV) or ""
    if not path:
        return None
    if path not in _loaded:
        _loaded[path] = load_seal_key(path)
    return _loaded[path]


def load_for(store_file: Path | None) -> SealKey | None:
    """`from_env`, refusing a key file that is the store itself.

    Args:
        store_file: The SQLite store (None on PostgreSQL).

    Returns:
        The key, or None.

    Raises:
        UsageError: the file named is not a usable key file (`load`).
    """
    key = from_env()
    path = os.environ.get(KEY_FILE_ENV) or ""
    if key is not None and store_file is not None and same_file(path, store_file):
        raise UsageError(f"{KEY_FILE_ENV} {path!r} is the store itself; keep the key outside the store")
    return key


def same_file(path: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file (False when either cannot be looked at)."""
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


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
