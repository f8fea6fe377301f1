"""Files lovia-tui keeps for itself: private, and never reached through a link.

The journal holds full rows of the user's conversations, the search index
their vocabulary, the caches what was learnt about the installation. They
live in directories only the user can write (created 0700; one that is a
symbolic link, belongs to another user, or is writable by group or others is
refused), as files created 0600 before SQLite opens them (SQLite gives its
``-journal``/``-wal``/``-shm`` companions the database's mode). No name is
followed as a symbolic link: a link planted at the journal's name would have
SQLite create the journal at its target, or add the journal's tables to the
file it points at (the user's lovia database included). Every refusal is
one line naming the file and the reason.

Checking a name and then connecting to it leaves a moment in which the name
could change. Only the user's own processes can write in a directory
accepted here, and a swap in that moment is caught by looking at the name
again once SQLite has opened the file, before its first statement reads or
writes a byte.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lovia_tui.core.errors import ActionError

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
COMPANIONS = ("-journal", "-wal", "-shm")
"""SQLite's files beside a database: they hold its pages too."""
DATABASE_NAMES = (".db", ".sqlite", ".sqlite3")
"""How a database's name ends: such a file is only ever opened by SQLite."""
APP_DIRECTORY = "lovia-tui"


class PrivateFileError(ActionError):
    """One of lovia-tui's own files or directories is refused: a link, someone
    else's, or open to other users (an action needing the journal stops)."""


def _xdg(variable: str, default: Path) -> Path:
    """An XDG base directory: the variable when it is an absolute path (the
    specification ignores a relative one), else the default under home."""
    value = os.environ.get(variable, "")
    return Path(value) if os.path.isabs(value) else Path.home() / default


def state_dir() -> Path:
    """``$XDG_STATE_HOME/lovia-tui`` (default ``~/.local/state/lovia-tui``)."""
    return _xdg("XDG_STATE_HOME", Path(".local", "state")) / APP_DIRECTORY


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/lovia-tui`` (default ``~/.cache/lovia-tui``)."""
    return _xdg("XDG_CACHE_HOME", Path(".cache")) / APP_DIRECTORY


def _owner_problem(status: os.stat_result) -> str | None:
    """Why a file or directory with this status is not the user's own, or None."""
    if status.st_uid != os.geteuid():
        return f"it belongs to another user (uid {status.st_uid})"
    return None


def private_directory(path: Path, *, own: bool) -> None:
    """Create ``path`` (and missing parents) 0700 and make sure only the user
    can write in it. ``own``: the directory is lovia-tui's own (under the XDG
    directories), so read access for others is taken away too; a directory
    the user chose (``$LOVIA_TUI_JOURNAL``'s) keeps its read bits."""
    missing = [p for p in (path, *path.parents) if not os.path.lexists(p)]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by another process meanwhile
            directory.mkdir(mode=DIRECTORY_MODE)
    status = os.lstat(path)
    if stat.S_ISLNK(status.st_mode):
        raise PrivateFileError(
            f"{path} is a symbolic link: lovia-tui keeps its files only in a real "
            "directory of yours"
        )
    if not stat.S_ISDIR(status.st_mode):
        raise PrivateFileError(f"{path} is not a directory")
    if problem := _owner_problem(status):
        raise PrivateFileError(
            f"{path}: {problem}; lovia-tui keeps its files only in a directory of yours"
        )
    mode = stat.S_IMODE(status.st_mode)
    if mode & 0o022:
        raise PrivateFileError(
            f"{path} can be written by other users (mode {mode:o}): they could plant "
            f"links there; run chmod 700 {path}"
        )
    if own and mode & 0o077:
        _tighten(path, mode, DIRECTORY_MODE)


def _tighten(path: Path, current: int, mode: int) -> None:
    """Drop group and other permissions from ``path``."""
    try:
        os.chmod(path, current & mode, follow_symlinks=False)
    except FileNotFoundError:
        return  # a companion SQLite (in another process) removed meanwhile
    except NotImplementedError:  # Linux changes no link's mode: one was put there
        raise PrivateFileError(
            f"{path} became a symbolic link: not followed, not used"
        ) from None
    except OSError as exc:
        raise PrivateFileError(
            f"{path} is open to other users (mode {current:o}) and cannot be made "
            f"private ({exc.strerror}); run chmod {mode:o} {path}"
        ) from exc


def _checked_file(path: Path, status: os.stat_result) -> None:
    """Refuse a file that is not a regular file of the user's alone; tighten
    its mode when others may read it."""
    if stat.S_ISLNK(status.st_mode):
        raise PrivateFileError(f"{path} is a symbolic link: not followed, not used")
    if not stat.S_ISREG(status.st_mode):
        raise PrivateFileError(f"{path} is not a regular file: not used")
    if problem := _owner_problem(status):
        raise PrivateFileError(f"{path}: {problem}; not used")
    if status.st_nlink > 1:
        raise PrivateFileError(
            f"{path} has {status.st_nlink} names (hard links): another file could "
            "be the same one; not used"
        )
    current = stat.S_IMODE(status.st_mode)
    if current & 0o077:
        _tighten(path, current, FILE_MODE)


def create_new_file(path: Path, mode: int = FILE_MODE) -> int:
    """A descriptor on a file created new at ``path`` with exactly ``mode``:
    never an existing file, never through a symbolic link (a planted link,
    dangling or not, makes it fail with ``FileExistsError``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, mode & FILE_MODE)
    try:
        os.fchmod(fd, mode)  # exact, whatever the umask
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private_file(path: Path, flags: int, *, own_directory: bool = True) -> int:
    """A descriptor on a private file of ours that is no database (a cache, a
    lock file), opened with ``flags`` (``os.O_RDONLY``, ``os.O_RDWR |
    os.O_CREAT``, ``... | os.O_EXCL`` for a temporary file): in a checked
    directory, never through a link, refused unless it is a regular file of
    the user's alone; a new one is 0600."""
    private_directory(path.parent, own=own_directory)
    try:
        fd = os.open(
            path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, FILE_MODE
        )
    except OSError:
        with contextlib.suppress(OSError):
            _checked_file(path, os.lstat(path))  # say why when it is a link
        raise
    try:
        os.set_blocking(fd, True)  # O_NONBLOCK only so a planted FIFO never hangs
        _checked_file(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_database(path: Path, *, own_directory: bool) -> tuple[int, int]:
    """Make sure the SQLite file ``path`` (created if missing) and its
    companions are regular files of the user's alone; returns the file's
    (device, inode). ``own_directory``: as ``own`` of :func:`private_directory`."""
    private_directory(path.parent, own=own_directory)
    # There already, or a link there (refused just below).
    with contextlib.suppress(FileExistsError):
        os.close(create_new_file(path))
    status = os.lstat(path)
    _checked_file(path, status)
    for name in (path.with_name(path.name + suffix) for suffix in COMPANIONS):
        with contextlib.suppress(FileNotFoundError):
            _checked_file(name, os.lstat(name))
    return status.st_dev, status.st_ino


def connect_private(
    path: Path,
    *,
    own_directory: bool,
    tables: frozenset[str] | None = None,
    **options: Any,
) -> sqlite3.Connection:
    """A ``sqlite3`` connection to our own database ``path`` (created private
    if missing), checked by :func:`private_database` before SQLite opens it
    and again after, before any statement. With ``tables``, a file holding
    any other table (a lovia database named by mistake) is refused as it is,
    its mode untouched. ``options`` go to ``connect``."""
    if tables is not None:
        _only_ours(path, tables)
    identity = private_database(path, own_directory=own_directory)
    # mode=rw: SQLite never creates the file (that was done above, without
    # following links). The last name is not resolved: a link there must show.
    uri = f"file:{quote(str(path.parent.resolve() / path.name))}?mode=rw"
    conn = sqlite3.connect(uri, uri=True, **options)
    try:
        status = os.lstat(path)
        if stat.S_ISLNK(status.st_mode) or (status.st_dev, status.st_ino) != identity:
            raise PrivateFileError(
                f"{path} was replaced while it was being opened: not used"
            )
    except BaseException:
        conn.close()
        raise
    return conn


def _only_ours(path: Path, tables: frozenset[str]) -> None:
    """Refuse an existing regular file at ``path`` that holds a table not in
    ``tables`` (read through SQLite, read-only; a link is refused later)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(status.st_mode) or status.st_nlink > 1 or not status.st_size:
        return  # refused (or created) as :func:`private_database` says
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            found = {
                name
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                    "AND name NOT LIKE 'sqlite!_%' ESCAPE '!'"
                )
            }
    except sqlite3.DatabaseError:
        return  # not SQLite: said by the first statement on it, as ever
    if others := sorted(found - tables):
        raise PrivateFileError(
            f"{path} holds tables that are not lovia-tui's ({', '.join(others[:4])}): "
            "another program's database, left as it is; not used"
        )
