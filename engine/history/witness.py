"""What a seal key's holder saw of a store's policy head, kept beside the key.

The policy's head is sealed (trail.py), but a seal vouches for a head
phasegate wrote, not for the newest: a copy of an earlier head, restored
with the changes after it deleted, seals true, and so does a store whose
whole policy is gone. Decisions fitted under the lost changes name them
(`trail.check_policy`'s `named`); a change no decision names yet needs an
anchor the store's writer cannot move back. That is this file: beside the
key file (`KEY.seen`, 0600, the key holder's own), the newest head each
store was seen with, by a process holding the key. A store whose head has
fewer changes than its key's holder saw was moved back.

Only where the key is held and its folder is writable: a plain store, or a
key mounted read-only, has no witness (a plain store's history can be
rewritten whole by anyone: history/seals.py). Recording the policy anew
(`phasegate policy`) is the operator's word for the head as it stands: a
store restored from a backup is reported once, then recorded anew.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import keys, trail

log = logging.getLogger(__name__)

SUFFIX = ".seen"
"""The witness file's name: the key file's, with this after it."""


def _file(key: keys.SealKey | None) -> Path | None:
    if key is None or not key.held or not key.source:
        return None
    return Path(key.source + SUFFIX)


def _read(fd: int) -> dict[str, Any]:
    os.lseek(fd, 0, os.SEEK_SET)
    text = b""
    while chunk := os.read(fd, 65536):
        text += chunk
    try:
        got = json.loads(text or b"{}")
    except ValueError:
        log.warning("the policy witness beside the seal key is unreadable; starting it again")
        return {}
    return got if isinstance(got, dict) else {}


def _open(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        log.debug("no policy witness at %s (%s)", path, exc.strerror)
        return None


def seen(key: keys.SealKey | None, where: str) -> tuple[int | None, int] | None:
    """The newest policy head (last change, count) the key's holder saw of
    store `where`, or None (none seen, or no witness here).

    Args:
        key: The store's seal key.
        where: The store, as `Store.where` names it.

    Returns:
        (last, count), or None.
    """
    path = _file(key)
    if path is None or not path.exists():
        return None
    fd = _open(path)
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        entry = _read(fd).get(where)
    finally:
        os.close(fd)
    if not isinstance(entry, dict):
        return None
    last, count = entry.get("last"), entry.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not (last is None or isinstance(last, int)):
        return None
    return last, count


def saw(key: keys.SealKey | None, where: str, last: int | None, count: int, *, anew: bool = False) -> None:
    """Keep `(last, count)` as the newest head of store `where` seen: only
    when it has more changes than the one kept, or `anew` (a change recorded
    now: the operator's word for the head as it stands).

    Args:
        key: The store's seal key (nothing is kept without its bytes).
        where: The store, as `Store.where` names it.
        last: The newest change's id.
        count: How many changes.
        anew: Replace what was kept whatever it was.
    """
    path = _file(key)
    if path is None:
        return
    fd = _open(path)
    if fd is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        got = _read(fd)
        kept = got.get(where)
        if not anew and isinstance(kept, dict) and isinstance(kept.get("count"), int) and kept["count"] >= count:
            return
        got[where] = {"last": last, "count": count}
        data = json.dumps(got, sort_keys=True).encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, data)
    except OSError as exc:
        log.debug("the policy witness %s was not written (%s)", path, exc.strerror)
    finally:
        os.close(fd)


def policy_damage(
    rows: Iterable[Any],
    head: int | None,
    count: int | None,
    head_seal: str | None,
    key: keys.SealKey | None,
    named: Iterable[int],
    where: str,
) -> list[trail.Damage]:
    """`trail.check_policy`, and the head against the newest one this key's
    holder saw: the one rule every reader of the policy asks (decide,
    verify, the start sequence). A whole head newer than the one kept is
    kept.

    Args:
        rows: Every policy row.
        head: The id of the last change, as the store's meta names it.
        count: How many changes the meta counts.
        head_seal: The head's seal.
        key: The store's seal key.
        named: The changes decisions name.
        where: The store, as `Store.where` names it.

    Returns:
        The damage found; empty when the policy's history is whole.
    """
    damage = trail.check_policy(rows, head, count, head_seal, key, named)
    kept = seen(key, where)
    if kept is not None and kept[1] > (count or 0):
        damage.append(
            trail.Damage(
                "policy",
                kept[0],
                "missing",
                f"the policy's head names {count or 0} change(s), but this key's holder saw {kept[1]} (the newest"
                f" {kept[0]}): an older head restored, or the policy deleted",
            )
        )
    elif not damage and count:
        saw(key, where, head, count)
    return damage
