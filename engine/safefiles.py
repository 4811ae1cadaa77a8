"""Files phasegate writes beside a store, where someone else may have been
first: a folder of its own, and in it only files it makes new.

In a folder another account can write, a link planted at the name about to
be written turns the write into one through the link, onto any file this
account can write (a root-owned log, a key). So the folder must be this
account's own and writable by nobody else, and a file is opened only as a
new one, never through a link (`O_EXCL | O_NOFOLLOW`). The archives
(`history/archive.py`) and the console's resume logs are made so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

#: Never through a link, never onto a file that is already there.
CREATE_NEW = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def own_folder(folder: Path) -> None:
    """Make `folder` private (0700), or check that the one already there is
    this user's own and writable by nobody else.

    Args:
        folder: The folder; its parent must exist.

    Raises:
        OSError: It is a link, not a folder, another user's, or writable by
            others (the message is one line naming it), or it cannot be made.
    """
    try:
        os.mkdir(folder, 0o700)
        return
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):
        raise OSError(f"{folder} is a symbolic link, not a folder of phasegate's own")
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{folder} is not a folder")
    if st.st_uid != os.geteuid():
        raise OSError(f"{folder} belongs to user id {st.st_uid}, not to this user ({os.geteuid()})")
    if st.st_mode & 0o022:
        raise OSError(f"{folder} can be written by others (mode {stat.S_IMODE(st.st_mode):o})")


def new_private_file(folder: Path, name: str) -> BinaryIO:
    """A new file `name` (0600) in `folder`, made private first (`own_folder`).

    Args:
        folder: The folder to write in: made, or checked to be this user's own.
        name: A plain file name (no separator).

    Returns:
        The file, open for writing.

    Raises:
        OSError: The folder is refused (see `own_folder`), or something
            (a file, a link) is at `name` already: `FileExistsError`.
    """
    if os.sep in name or name in ("", ".", ".."):
        raise OSError(f"{name!r} is not a file name")
    own_folder(folder)
    fd = os.open(folder / name, CREATE_NEW, 0o600)
    return os.fdopen(fd, "wb")


__all__ = ["CREATE_NEW", "new_private_file", "own_folder"]
