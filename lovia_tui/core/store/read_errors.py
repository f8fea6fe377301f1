"""What a failed read means, said in one line naming the file: busy, or damaged.

SQLite reports a damaged page or header as ``SQLITE_CORRUPT`` or
``SQLITE_NOTADB``; a writer's lock held past the busy timeout as "locked".
Anything else keeps its own text, prefixed by the file.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from lovia_tui.core.errors import DamagedError, LoviaTuiError

SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
SQLITE_READONLY_ROLLBACK = 776
"""A read-only connection met a hot journal it may not roll back."""


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite says the file itself is damaged (not busy, not missing)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)
    return "malformed" in str(exc) or "not a database" in str(exc)


def sqlite_reason(exc: BaseException | None) -> str:
    text = str(exc) if exc else "unknown error"
    if "not a database" in text:
        return "not a SQLite database or corrupt"
    return text


def is_hot_journal(exc: BaseException) -> bool:
    """Whether a read-only connection stopped at a hot journal."""
    return getattr(exc, "sqlite_errorcode", None) == SQLITE_READONLY_ROLLBACK


def hot_journal_text(path: Path) -> str:
    return (
        f"{path}: a writer was interrupted mid-transaction (a hot -journal): "
        "its last commit can only be shown once SQLite rolls that back, which "
        "a read-only open (--readonly, the doctor) cannot do; open it once "
        "with lovia-tui without --readonly, or copy it with the sqlite3 shell"
    )


@contextlib.contextmanager
def read_errors(path: Path) -> Iterator[None]:
    """A read's failure as one line naming ``path``: :class:`DamagedError`
    for a damaged file, "locked … try again" for a writer's lock past the
    busy timeout, a hot journal met under ``--readonly`` as at open,
    "cannot read" for any other SQLite error but a plain
    operational one (a missing table is the caller's to handle)."""
    try:
        yield
    except sqlite3.Error as exc:
        if is_damage(exc):
            raise DamagedError(path, sqlite_reason(exc)) from exc
        if is_hot_journal(exc):  # one that appeared after the file was opened
            raise LoviaTuiError(hot_journal_text(path)) from exc
        if isinstance(exc, sqlite3.OperationalError):
            if "locked" in str(exc):
                raise LoviaTuiError(
                    f"{path}: {exc} by another process; try again"
                ) from exc
            raise
        raise LoviaTuiError(f"{path}: cannot read ({sqlite_reason(exc)})") from exc
