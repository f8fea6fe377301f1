"""Connecting to a lovia file: never creating it, never reading it but through
SQLite, and never showing under ``--readonly`` what was not committed.

``--readonly`` opens with ``mode=ro``. Only a WAL database whose ``-shm``
cannot be made (a read-only directory) needs ``immutable=1``, which reads the
main file alone, takes no lock and sees no one else's commits: it is used
only where that still shows every commit (no ``-wal`` holding any), and it
is named. A hot journal (a rollback-journal writer interrupted mid-
transaction) can only be rolled back by a connection that may write: under
``--readonly`` that file is refused, never read past its journal.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG
from time import perf_counter
from typing import Any
from urllib.parse import quote

import aiosqlite

from lovia_tui.core.errors import DamagedError, OpenError
from lovia_tui.core.store.pace import Cut, StatementCut
from lovia_tui.core.store.read_errors import (
    hot_journal_text,
    is_damage,
    is_hot_journal,
    sqlite_reason,
)
from lovia_tui.core.stored import decode_text

BUSY_TIMEOUT_MS = 5_000
QUICK_CHECK_AT_OPEN_BYTES = 16 << 20
"""Files up to this size are checked by ``PRAGMA quick_check`` as they open
(about 1 ms a MB here): a damaged small file is refused at once, not shown
with rows missing. Larger ones are checked by ``doctor --integrity``."""

HELD_CACHE_KIB = 128 << 10
"""Page cache (an upper bound, in KiB) of a connection that writes: an
action's check under the write lock reads its rows, and lovia's change reads
them again; SQLite's default 2 MB held less than a 2,000-run session (~5 MB),
and the reread from the OS held lovia's writers ~8 ms longer."""

HELD_MMAP_BYTES = 1 << 40
"""Memory-mapped reads (SQLite caps it: 2 GB on Debian's build) for a
connection that writes. Another process's commit empties a connection's page
cache, so an action's check, run again under the lock after a lovia writer
committed, read a 5,000-run session from the OS again: 21-28 ms, 9-10 ms
mapped. SQLite maps the file read-only and writes through the file as
before; a disk error while reading a mapped page kills the process (as
SIGKILL would: SQLite rolls the open transaction back)."""

IMMUTABLE_NOTICE = "opened immutable (its -shm cannot be made here): commits made after this are not seen"


def wal_path(path: Path) -> Path:
    """The ``-wal`` companion SQLite keeps beside ``path``."""
    return path.with_name(path.name + "-wal")


def sqlite_uri(path: Path, mode: str, *, immutable: bool = False) -> str:
    """A URI that opens ``path`` in ``mode`` (ro/rw) and never creates a file."""
    uri = f"file:{quote(str(path.resolve()))}?mode={mode}"
    return uri + "&immutable=1" if immutable else uri


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection of its own (never writes, never creates), closed
    after: a look from a worker thread, outside the workspace's connections."""
    conn = sqlite3.connect(sqlite_uri(path, "ro"), uri=True, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def read_rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """A statement's rows on a :func:`read_only` connection."""
    with read_only(path) as conn:
        return conn.execute(sql, params).fetchall()


def write_connection(
    path: Path, factory: type[sqlite3.Connection] = sqlite3.Connection
) -> Any:
    """A plain connection that may write ``path`` (never creating it), in
    autocommit: its caller begins and ends each transaction.

    ``secure_delete=FAST``: removed text is zeroed where that writes nothing
    more; a page freed whole keeps it until reused, as lovia's own deletes
    leave it on most SQLite builds. Zeroing every freed page (Debian's
    default) made a 1,000-run rewind's commit write 4 MB of zeros, 14 ms of
    lovia's writers waiting; the removed rows are in the journal anyway,
    until it is pruned."""
    conn = sqlite3.connect(
        sqlite_uri(path, "rw"), uri=True, isolation_level=None,
        check_same_thread=False, factory=factory,
    )  # fmt: skip
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA cache_size=-{HELD_CACHE_KIB}")
    conn.execute(f"PRAGMA mmap_size={HELD_MMAP_BYTES}")
    conn.execute("PRAGMA secure_delete=FAST")
    return conn


FileIdentity = tuple[int, int]
"""(device, inode): which file a path named when it was opened."""


def check_file(path: Path) -> FileIdentity:
    """What can be told of ``path`` without a descriptor on it: a database's
    bytes are read by SQLite alone. Closing any other descriptor of the file
    would drop the POSIX locks this process's SQLite connections hold on it
    (a resume opens a file the app already has open), and another process
    could then delete the ``-wal`` under them (SQLite's "How To Corrupt", 2.2).
    A file that is not SQLite is told by SQLite's own header check. Returns
    the file's identity, taken before any connection: a file moved over the
    path afterwards is then seen as another (:meth:`Database.replaced`)."""
    try:
        stat = path.stat()
    except FileNotFoundError as exc:
        raise OpenError(f"{path}: no such file") from exc
    except OSError as exc:
        raise OpenError(f"{path}: cannot read ({exc.strerror})") from exc
    if not S_ISREG(stat.st_mode):
        raise OpenError(f"{path}: not a regular file")
    if stat.st_nlink > 1:
        # SQLite finds a hot journal only by the name it opens: through
        # another name it reads past a writer's unfinished transaction, and a
        # write there is undone over by the rollback that comes later.
        raise OpenError(
            f"{path} has {stat.st_nlink} names (hard links): SQLite would miss an "
            "unfinished write made through another name (reading what was never "
            "committed, or corrupting the file); open a copy, or remove the other names"
        )
    if stat.st_size == 0:
        wal = wal_path(path)
        if wal.is_file() and wal.stat().st_size > 0:
            # SQLite writes page 1 before any WAL frame: this is a truncated
            # copy. Connecting would discard the -wal, even read-only.
            raise DamagedError(
                path,
                f"the file is empty beside a {wal.stat().st_size:,}-byte -wal; "
                "not opened, which would discard that -wal: copy both first",
            )
        raise OpenError(f"{path}: empty file, not a lovia database")
    return stat.st_dev, stat.st_ino


def fetchall_decoded(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()
) -> list[Any]:
    """A statement's rows on a plain ``sqlite3`` connection; text that is not
    UTF-8 among them decoded as the read layer decodes it (C decoding, the
    default, is kept for the usual case)."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "decode" not in str(exc):
            raise
    conn.text_factory = decode_text
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.text_factory = str


def as_stored(column: str, rowid: str, read: str) -> str:
    """SQL for ``session_runs.column`` exactly as stored in the row whose id is
    the parameter ``rowid``, or the parameter ``read`` (the value as read) if
    that row is gone. A key that is not UTF-8 cannot be bound as the text it
    is (:class:`~lovia_tui.core.stored.NonTextKey` binds its bytes): a keyset
    walk continued from it got the same row for ever."""
    return f"COALESCE((SELECT {column} FROM session_runs WHERE id = {rowid}), {read})"


async def rows(
    conn: aiosqlite.Connection,
    sql: str,
    params: tuple[Any, ...] = (),
    cut: Cut | None = None,
) -> list[Any]:
    """All of a statement's rows in one call on the connection's thread: the
    statement runs to its end before any other read of the app starts, so no
    read shares an older snapshot with one still open (aiosqlite's
    ``execute`` + ``fetch`` + ``close`` are three calls that others interleave).

    ``cut``: when SQLite interrupts it and
    :class:`~lovia_tui.core.store.pace.StatementCut` is raised; the caller
    sees that no other statement is queued on ``conn`` meanwhile (the clock
    would run on it)."""
    if cut is None:
        return list(await conn.execute_fetchall(sql, params))
    until = [math.inf]
    await conn.set_progress_handler(lambda: perf_counter() > until[0], cut.every)
    try:
        until[0] = perf_counter() + cut.seconds
        return list(await conn.execute_fetchall(sql, params))
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode == sqlite3.SQLITE_INTERRUPT:
            raise StatementCut(sql) from exc
        raise
    finally:
        await conn.set_progress_handler(None, 0)  # type: ignore[arg-type]


async def _attempt(uri: str) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
    try:
        conn.text_factory = decode_text
        await rows(conn, f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        await rows(conn, "SELECT name FROM sqlite_master LIMIT 1")
    except BaseException:
        await conn.close()
        raise
    return conn


def _refusal(path: Path, exc: sqlite3.Error) -> OpenError:
    if is_damage(exc):
        return DamagedError(path, sqlite_reason(exc))
    return OpenError(f"{path}: cannot open ({sqlite_reason(exc)})")


async def connect(
    path: Path, readonly: bool, *, immutable: bool = False
) -> tuple[aiosqlite.Connection, bool]:
    """Connect without ever creating a file; returns (connection, immutable).

    ``immutable`` asks for that mode at once (a reconnect of a file first
    opened so)."""
    if not readonly:
        try:
            return await _attempt(sqlite_uri(path, "rw")), False
        except sqlite3.Error as exc:
            raise _refusal(path, exc) from exc
    if not immutable:
        try:
            return await _attempt(sqlite_uri(path, "ro")), False
        except sqlite3.Error as exc:
            if is_hot_journal(exc):
                raise OpenError(hot_journal_text(path)) from exc
            if "locked" in str(exc) or is_damage(exc):
                # Busy or damaged, not unreadable: immutable would read past
                # a writer's lock or a damaged page.
                raise _refusal(path, exc) from exc
            wal = wal_path(path)
            if wal.is_file() and wal.stat().st_size > 0:
                raise OpenError(
                    f"{path}: its -wal holds commits that a read-only open "
                    "cannot see without a -shm, which cannot be made here "
                    f"({sqlite_reason(exc)}); open it where its directory is "
                    "writable"
                ) from exc
    try:
        return await _attempt(sqlite_uri(path, "ro", immutable=True)), True
    except sqlite3.Error as exc:
        raise _refusal(path, exc) from exc


async def quick_check_at_open(conn: aiosqlite.Connection, path: Path) -> None:
    """Refuse a small file SQLite finds damaged (see :data:`QUICK_CHECK_AT_OPEN_BYTES`)."""
    [(size,)] = await rows(
        conn, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size"
    )
    if int(size) > QUICK_CHECK_AT_OPEN_BYTES:
        return
    problems = [
        line
        for row in await rows(conn, "PRAGMA quick_check(3)")
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("*** in database")
    ]
    if problems != ["ok"]:
        raise DamagedError(path, "; ".join(problems[:2])[:300])


async def set_wal(conn: aiosqlite.Connection) -> tuple[str, str | None]:
    """Switch the file to WAL so our reads never block lovia's writers.

    The switch is sticky and needs a moment with no other lock held; when it
    cannot happen we carry on in the current mode and say so.
    """
    try:
        mode = await pragma(conn, "PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        mode = await pragma(conn, "PRAGMA journal_mode")
        return mode, f"could not switch to WAL ({exc}); reads may delay writers"
    if mode != "wal":
        return mode, f"journal mode is {mode}: WAL was refused; reads may delay writers"
    return mode, None


async def pragma(conn: aiosqlite.Connection, sql: str) -> str:
    """A PRAGMA's one value, lower-cased (``journal_mode`` returns one row)."""
    found = await rows(conn, sql)
    return str(found[0][0]).lower() if found else ""
