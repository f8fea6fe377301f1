"""Files lovia-tui keeps for itself that hold the user's data: private.

The journal holds full rows of the user's conversations. It is created 0600
(before SQLite opens it, so it is never readable by others even for a moment;
SQLite gives its -journal/-wal/-shm companions the same mode), in directories
created 0700. A journal found with looser permissions is tightened, and when
it cannot be (another user owns it) the action stops and says so.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from lovia_tui.core.errors import ActionError

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
COMPANIONS = ("-journal", "-wal", "-shm")
"""SQLite's files beside a database: they hold its pages too."""


def _tighten(path: Path, mode: int) -> None:
    """Drop group and other permissions from ``path`` if it has any."""
    current = stat.S_IMODE(os.stat(path).st_mode)
    if current & 0o077:
        try:
            os.chmod(path, current & mode)
        except OSError as exc:
            raise ActionError(
                f"{path} is open to other users (mode {current:o}) and cannot be made "
                f"private ({exc.strerror}); run chmod {mode:o} {path}"
            ) from exc


def private_database(path: Path, *, own_directory: bool) -> None:
    """Make sure the SQLite file ``path`` (and its companions) is the user's only.

    Missing directories are created 0700. ``own_directory``: the directory is
    lovia-tui's own (the default location), so it is tightened too; a
    directory the user chose (``$LOVIA_TUI_JOURNAL``) is theirs to set.
    """
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by another process meanwhile
            directory.mkdir(mode=DIRECTORY_MODE)
    if own_directory:
        _tighten(path.parent, DIRECTORY_MODE)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    for name in (path, *(path.with_name(path.name + c) for c in COMPANIONS)):
        if name.exists():
            _tighten(name, FILE_MODE)
