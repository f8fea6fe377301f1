"""Where an export may write: never into a SQLite database's files.

An export replaces a file by renaming a new one over it, which is harmless
for an old export and ruinous for a database: a database replaced that way
keeps its ``-wal`` beside a file that is no longer it, and a ``-wal``,
``-shm`` or ``-journal`` replaced under a live connection loses or scrambles
its pages. So, with or without ``--force``, an export never writes the files
of the databases being read, a name SQLite would use beside any existing
file, or an existing file that is a SQLite database.

Deciding runs on ``stat`` alone, but for one look at the first bytes of an
existing file not named as a database, taken only when no descriptor of this
process is open on it: closing a descriptor of a file drops every POSIX lock
the process's SQLite connections hold on it (see
https://www.sqlite.org/howtocorrupt.html).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.private_files import COMPANIONS, DATABASE_NAMES

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""
SQLITE_SUFFIX = re.compile(r"(-journal|-wal2?|-shm|-mj[0-9A-F]{6}9[0-9A-F]{2})\Z")
"""Names SQLite gives files beside a database: its rollback journal, its
write-ahead log (``-wal2`` in SQLite's wal2 mode) and wal-index, and the
super-journal of a commit across attached databases."""


class ExportError(LoviaTuiError):
    """The export target is refused (it exists, or is a link, a directory or
    a file of a SQLite database)."""


def target_state(path: Path, databases: Iterable[Path] = ()) -> str:
    """``"free"``, ``"file"`` (a regular file: replaceable once confirmed), or
    ``"database"`` (a file of one of ``databases``, existing or not),
    ``"companion"`` (a name SQLite uses beside an existing file),
    ``"sqlite"`` (an existing SQLite database), ``"link"``, ``"other"``
    (never written to), ``"no folder"`` (nothing at the name, and no
    directory to hold it). Never follows a link at the name."""
    try:
        status: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        status = None
    if _of_a_database(path, status, databases):
        return "database"
    if companion_of(path) is not None:
        return "companion"
    if status is None:
        return "free" if os.path.isdir(path.parent) else "no folder"
    if stat.S_ISLNK(status.st_mode):
        return "link"
    if not stat.S_ISREG(status.st_mode):
        return "other"
    return "sqlite" if _a_database(path, status) else "file"


def _resolved(path: Path) -> str:
    """``path`` with its directory's links resolved (never its own name)."""
    return os.path.join(os.path.realpath(path.parent), path.name)


def _of_a_database(
    path: Path, status: os.stat_result | None, databases: Iterable[Path]
) -> bool:
    """Whether ``path`` is a database's file or one of its SQLite companions:
    by name (SQLite names companions after the resolved file), or, for an
    existing file, by being the same file under another name. Stat only."""
    name = _resolved(path)
    for database in databases:
        for suffix in ("", *COMPANIONS):
            companion = os.path.realpath(database) + suffix
            if name == companion:
                return True
            if status is not None and not stat.S_ISLNK(status.st_mode):
                try:
                    other = os.stat(companion)
                except OSError:
                    continue
                if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino):
                    return True
    return False


def companion_of(path: Path) -> tuple[str, str] | None:
    """(the existing file, the suffix) when ``path`` is named as a SQLite
    companion of a file that exists (a link there counts: SQLite follows
    it); else None. Stat only."""
    found = SQLITE_SUFFIX.search(path.name)
    if found is None or found.start() == 0:
        return None
    base = _resolved(path.with_name(path.name[: found.start()]))
    return (base, found.group()) if os.path.lexists(base) else None


def _a_database(path: Path, status: os.stat_result) -> bool:
    """Whether the regular file ``path`` is a SQLite database: one named as
    a database (never opened to look), with a companion beside it, or whose
    first bytes say so. Those bytes are read only when no descriptor of this
    process is open on the file; when that cannot be known, or the file is
    open here, it counts as a database."""
    if path.name.endswith(DATABASE_NAMES):
        return True
    if any(os.path.lexists(_resolved(path) + suffix) for suffix in COMPANIONS):
        return True
    if status.st_size < len(SQLITE_HEADER):
        return False
    if _open_here(status) is not False:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False  # unreadable here: creating the new file fails as well
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (status.st_dev, status.st_ino):
            return True  # swapped under us: not this file's to judge
        return os.pread(fd, len(SQLITE_HEADER), 0) == SQLITE_HEADER
    finally:
        os.close(fd)


def _open_here(status: os.stat_result) -> bool | None:
    """Whether a descriptor of this process is open on the file of
    ``status`` (``fstat`` of each: nothing is opened or closed); None where
    the process's descriptors cannot be listed."""
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(listing)
        except OSError:
            continue
        for name in names:
            try:
                other = os.fstat(int(name))
            except (OSError, ValueError):
                continue
            if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino):
                return True
        return False
    return None


def refusal(path: Path, state: str) -> ExportError:
    """Why nothing is written to ``path`` in ``state`` (:func:`target_state`)."""
    if state == "database":
        return ExportError(
            f"{path} is a file of a database being read: writing it would destroy "
            "its data; choose another name"
        )
    if state == "companion":
        base, suffix = companion_of(path) or (str(path), "companion")
        return ExportError(
            f"{path} is the name SQLite gives the {suffix} file of {base}: "
            "writing it could corrupt that database; choose another name"
        )
    if state == "sqlite":
        return ExportError(
            f"{path} is a SQLite database: an export never replaces one "
            "(it would destroy its data); choose another name"
        )
    if state == "link":
        return ExportError(f"{path} is a symbolic link: not followed, not replaced")
    if state == "file":
        return ExportError(f"{path} exists: not replaced without a confirmation")
    if state == "no folder":
        return ExportError(
            f"cannot write {path}: no directory {path.parent}; choose another name"
        )
    return ExportError(f"{path} exists and is not a regular file; choose another name")
