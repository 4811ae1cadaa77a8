"""Where a phase's output goes when it leaves the store, and how it comes back.

An archive counts only once its bytes are on disk as written (fsync, then
read back and compare), and an archived output is handed to a phase only if
its bytes still hash to what the run's chain says.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from .. import _json
from ..safefiles import CREATE_NEW, own_folder


class Missing:
    """An archived output that cannot be had: gone, unreadable or altered."""


MISSING = Missing()


def archive_dir(db_path: Path | None, configured: str | None) -> Path:
    """Where archives go, as an absolute path: it is stored with each archived
    output, and a relative one would mean another folder to a process started
    elsewhere (its output then missing, and its phase silently re-run)."""
    if configured:
        return Path(configured).expanduser().absolute()
    base = db_path if db_path is not None else Path("phasegate")
    return base.with_name(base.name + ".archive").absolute()


def write_archive(folder: Path, name: str, payload: dict[str, Any]) -> tuple[Path, str]:
    """Write, fsync, then read back and compare: the archive counts only once
    its bytes are known to be on disk as written. `folder` (a run's folder in
    the archive root) and the root are phasegate's own (`own_folder`)."""
    # The root's parents get the default mode; the root and the run's folder
    # are made private here, or checked to be.
    folder.parent.parent.mkdir(parents=True, exist_ok=True)
    own_folder(folder.parent)
    own_folder(folder)
    text = _json.dumps(payload).encode("utf-8")
    digest = hashlib.sha256(text).hexdigest()
    path = folder / name
    tmp = path.with_suffix(".tmp")
    # A leftover of a crashed write (or anything at that name) is removed,
    # not followed: unlink acts on a link itself.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, CREATE_NEW, 0o600)
    try:
        os.write(fd, text)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)  # a rename: replaces a link at `path`, never writes through it
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        back = hashlib.sha256(fh.read()).hexdigest()
    if back != digest:
        raise OSError(f"archive {path} read back with hash {back}, wrote {digest}")
    return path, digest


def safe_name(run_id: str) -> str:
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:60]
    return f"{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:10]}"


def archive_name(row: Any) -> str:
    return f"{row.epoch}.{row.seq}-{row.phase}.json"


def restore(path: Path, output_hash: str | None) -> Any:
    """An archived output, only if its bytes still hash to what the chain
    says; `MISSING` otherwise."""
    text = restore_text(path, output_hash)
    if text is MISSING:
        return MISSING
    try:
        return _json.loads(text)
    except ValueError:
        return MISSING


def restore_text(path: Path, output_hash: str | None) -> Any:
    """An archived output's JSON text, only if it still hashes to what the
    chain says; `MISSING` otherwise."""
    try:
        doc = _json.loads(path.read_bytes())
        text = doc["output_json"]
    except (OSError, ValueError, KeyError, TypeError):
        return MISSING
    if not isinstance(text, str) or _json.sha256(text) != output_hash:
        return MISSING
    return text


def why_lost(entry: Any) -> str | None:
    """Why a done phase's output cannot be had now (None when it can): its
    stored copy is gone, or its archive is gone or no longer hash-matches.
    Asked at the moment it matters (a prune, a verify), not trusted from the
    output's recorded state."""
    row = entry.row
    if row.output_state == "present":
        # A verified entry's stored output matched its hash (a verify that
        # does not parse outputs leaves `output_ok` False): only absence counts.
        return None if row.output_json is not None else "its stored copy is gone"
    if row.output_state == "archived":
        if not row.archive_path:
            return "it is marked archived but names no archive"
        if restore(Path(row.archive_path), entry.env.get("output_hash")) is MISSING:
            return f"its archive {row.archive_path} is gone or no longer matches its hash"
        return None
    return f"it was {row.output_state}" if row.output_state != "none" else "no copy was kept"
