"""One lovia SQLite file and our own short-lived read connection to it.

lovia's store classes take a write lock on first use and may change the
journal mode, so browsing never constructs them: it reads through aiosqlite
with its own connection. ``readonly`` opens with ``mode=ro`` (``immutable=1``
where SQLite needs it) and so performs no write of any kind.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any
from urllib.parse import quote

import aiosqlite

from lovia_tui.core.errors import LoviaTuiError, OpenError
from lovia_tui.core.store.schema import (
    CHAT_TABLES,
    STORE_TABLES,
    check_columns,
    check_versions,
)

BUSY_TIMEOUT_MS = 5_000


@dataclass(frozen=True)
class Stores:
    """Which lovia stores a file holds (tables appear on a store's first use)."""

    session: bool
    checkpoint: bool
    chat: bool

    @property
    def any(self) -> bool:
        return self.session or self.checkpoint


class Database:
    """An open lovia database file: its stores, journal mode and connection."""

    def __init__(
        self,
        path: Path,
        conn: aiosqlite.Connection,
        stores: Stores,
        *,
        readonly: bool,
        journal_mode: str,
        notice: str | None,
        immutable: bool = False,
    ) -> None:
        self.path = path
        self.conn = conn
        self.stores = stores
        self.readonly = readonly
        self.journal_mode = journal_mode
        self.notice = notice
        # Opened with immutable=1: SQLite will not see anyone else's commits.
        self.immutable = immutable

    @property
    def name(self) -> str:
        return self.path.name

    async def fetchall(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Run one short statement to its end in a single step of the connection.

        Every view reads through this one connection at the same time; a
        statement left open while another starts would pin both to its older
        WAL snapshot and hide other processes' commits (see :func:`_rows`).
        """
        with self._read_errors():
            return await _rows(self.conn, sql, params)

    def fetchall_in_thread(
        self, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()
    ) -> list[Any]:
        """:meth:`fetchall` on a :meth:`thread_connection`, blocking: for a scan
        that parses its rows in the thread that reads them, with no round trip
        through the event loop a statement."""
        with self._read_errors():
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if "decode" not in str(exc):
                    raise
            # Text that is not UTF-8 among these rows: decoded as the read layer
            # decodes it (C decoding, the default, is kept for the usual case).
            conn.text_factory = _decode_text
            try:
                return conn.execute(sql, params).fetchall()
            finally:
                conn.text_factory = str

    @contextlib.contextmanager
    def _read_errors(self) -> Iterator[None]:
        """A writer's lock past the busy timeout, or a page that does not read:
        one line naming the file."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            _raise_if_locked(self.path, exc)
            raise
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from exc

    async def fetchone(self, sql: str, params: tuple[Any, ...] = ()) -> Any | None:
        """The first row of a statement that yields at most a few (its own
        ``LIMIT``, a key, an aggregate): read like :meth:`fetchall`."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    def read_blob(self, table: str, column: str, rowid: int) -> bytes | None:
        """One stored value's bytes by SQLite's incremental blob I/O, which
        keeps no copy of it (a SELECT holds the value, and its CAST, beside
        ours: 600 MB for a 200 MB output). Blocking, for a thread. None if
        the row is gone or the value NULL."""
        with (
            contextlib.closing(self.thread_connection()) as conn,
            self._blob(conn, table, column, rowid) as blob,
        ):
            return None if blob is None else blob.read()

    def blob_sizes(self, table: str, column: str, rowids: list[int]) -> dict[int, int]:
        """Stored values' sizes in bytes, by row id, without reading them: from
        their record headers, in one read (SQLite's ``length()`` of a TEXT
        reads it whole: 145 ms and 128 MB of its memory for one 128 MB
        segment). Rows gone or NULL are left out. Blocking, for a thread."""
        sizes = {}
        with contextlib.closing(self.thread_connection()) as conn:
            conn.execute("BEGIN")  # one snapshot, and one read for all of them
            for rowid in rowids:
                with self._blob(conn, table, column, rowid) as blob:
                    if blob is not None:
                        sizes[rowid] = len(blob)
            conn.execute("COMMIT")
        return sizes

    def blob_chunks(
        self, table: str, column: str, rowid: int, chunk: int
    ) -> Iterator[bytes]:
        """One stored value ``chunk`` bytes at a time, each chunk in a read of
        its own (one blob read of a 128 MB value holds its read 114 ms, a
        4 MB chunk at its end 31 ms: SQLite walks the overflow pages to it).
        Blocking, iterated by one thread. Raises :class:`LoviaTuiError` if the
        row is gone or changes size between two chunks (a rewind or trim of
        it: lovia's segments change no other way)."""
        with contextlib.closing(self.thread_connection()) as conn:
            size, offset = None, 0
            while size is None or offset < size:
                with self._blob(conn, table, column, rowid) as blob:
                    if blob is None or size not in (None, len(blob)):
                        raise self.changed(table, rowid)
                    size = len(blob)
                    blob.seek(offset)
                    data = blob.read(chunk)
                if not data:
                    return
                offset += len(data)
                yield data

    def changed(self, table: str, rowid: int) -> LoviaTuiError:
        return LoviaTuiError(
            f"{self.name}: {table} row {rowid} changed while it was read; try again"
        )

    @contextlib.contextmanager
    def _blob(
        self, conn: sqlite3.Connection, table: str, column: str, rowid: int
    ) -> Iterator[sqlite3.Blob | None]:
        """A value opened for blob reads; None if the row is gone or the value NULL."""
        try:
            blob = conn.blobopen(table, column, rowid, readonly=True)
        except sqlite3.OperationalError as exc:
            if "no such rowid" in str(exc) or "of type null" in str(exc):
                yield None
                return
            _raise_if_locked(self.path, exc)
            raise
        with blob:
            yield blob

    def thread_connection(self) -> sqlite3.Connection:
        """A connection of its own for work in a thread (blob reads, scans that
        parse as they read), read-only (never writes, never creates: the
        file's URI in mode ro), used by one thread at a time: a stream of
        chunks abandoned in a worker thread is closed wherever it is collected
        (SQLite's serialized mode allows it; Python's check does not)."""
        uri = sqlite_uri(self.path, "ro", immutable=self.immutable)
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        return conn

    async def fetchrow(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The row of a statement that always yields one (an aggregate, a PRAGMA)."""
        row = await self.fetchone(sql, params)
        if row is None:
            raise LoviaTuiError(f"{self.name}: no row from {sql.split()[0]} statement")
        return row

    async def data_version(self) -> int:
        """SQLite's counter of commits made by other connections."""
        row = await self.fetchrow("PRAGMA data_version")
        return int(row[0])

    async def close(self) -> None:
        await self.conn.close()


def _raise_if_locked(path: Path, exc: sqlite3.OperationalError) -> None:
    """A writer held its lock past the busy timeout: one line, not a traceback."""
    if "locked" in str(exc):
        raise LoviaTuiError(f"{path}: {exc} by another process; try again") from exc


def _damaged(path: Path, exc: sqlite3.DatabaseError) -> LoviaTuiError:
    """A page that does not read (a damaged file): one line naming the file."""
    return LoviaTuiError(f"{path}: cannot read ({_sqlite_reason(exc)})")


def _decode_text(raw: bytes) -> str:
    # A row with invalid UTF-8 must not make the whole query fail.
    return raw.decode("utf-8", errors="replace")


def _check_file(path: Path) -> None:
    """What can be told of ``path`` without a descriptor on it: a database's
    bytes are read by SQLite alone. Closing any other descriptor of the file
    would drop the POSIX locks this process's SQLite connections hold on it
    (a resume opens a file the app already has open), and another process
    could then delete the ``-wal`` under them (SQLite's "How To Corrupt", 2.2).
    A file that is not SQLite is told by SQLite's own header check."""
    try:
        stat = path.stat()
    except FileNotFoundError as exc:
        raise OpenError(f"{path}: no such file") from exc
    except OSError as exc:
        raise OpenError(f"{path}: cannot read ({exc.strerror})") from exc
    if not S_ISREG(stat.st_mode):
        raise OpenError(f"{path}: not a regular file")
    if stat.st_size == 0 and not wal_path(path).exists():
        raise OpenError(f"{path}: empty file, not a lovia database")


def wal_path(path: Path) -> Path:
    """The ``-wal`` companion SQLite keeps beside ``path``."""
    return path.with_name(path.name + "-wal")


def sqlite_uri(path: Path, mode: str, *, immutable: bool = False) -> str:
    """A URI that opens ``path`` in ``mode`` (ro/rw) and never creates a file."""
    uri = f"file:{quote(str(path.resolve()))}?mode={mode}"
    return uri + "&immutable=1" if immutable else uri


async def _connect(path: Path, readonly: bool) -> tuple[aiosqlite.Connection, bool]:
    """Connect without ever creating a file; returns (connection, immutable)."""
    attempts = (
        [(sqlite_uri(path, "ro"), False)]
        if readonly
        else [(sqlite_uri(path, "rw"), False)]
    )
    if readonly:
        # A WAL database in a read-only directory without its -shm can only
        # be read as immutable.
        attempts.append((sqlite_uri(path, "ro", immutable=True), True))
    last: Exception | None = None
    for uri, immutable in attempts:
        conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
        try:
            conn.text_factory = _decode_text
            await _rows(conn, f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await _rows(conn, "SELECT name FROM sqlite_master LIMIT 1")
            return conn, immutable
        except sqlite3.Error as exc:
            await conn.close()
            last = exc
            if "locked" in str(exc):
                # Busy, not unreadable: immutable would read past a writer's lock.
                break
    raise OpenError(f"{path}: cannot open ({_sqlite_reason(last)})")


def _sqlite_reason(exc: Exception | None) -> str:
    text = str(exc) if exc else "unknown error"
    if "not a database" in text:
        return "not a SQLite database or corrupt"
    return text


async def _set_wal(conn: aiosqlite.Connection) -> tuple[str, str | None]:
    """Switch the file to WAL so our reads never block lovia's writers.

    The switch is sticky and needs a moment with no other lock held; when it
    cannot happen we carry on in the current mode and say so.
    """
    try:
        mode = await _pragma(conn, "PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        mode = await _pragma(conn, "PRAGMA journal_mode")
        return mode, f"could not switch to WAL ({exc}); reads may delay writers"
    if mode != "wal":
        return mode, f"journal mode is {mode}: WAL was refused; reads may delay writers"
    return mode, None


async def _pragma(conn: aiosqlite.Connection, sql: str) -> str:
    """A PRAGMA's one value, lower-cased (``journal_mode`` returns one row)."""
    rows = await _rows(conn, sql)
    return str(rows[0][0]).lower() if rows else ""


async def open_database(path: Path, *, readonly: bool = False) -> Database:
    """Open ``path`` as a lovia database or raise :class:`OpenError`."""
    _check_file(path)
    conn, immutable = await _connect(path, readonly)
    try:
        rows = await _rows(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {row[0] for row in rows}
        stores = Stores(
            session=STORE_TABLES["session"] <= tables,
            checkpoint=STORE_TABLES["checkpoint"] <= tables,
            chat=tables >= CHAT_TABLES,
        )
        if not stores.any:
            raise OpenError(
                f"{path}: not a lovia database (no session_runs or snapshot_heads table)"
            )
        for table in set().union(*STORE_TABLES.values()) & tables:
            columns = {
                row[1] for row in await _rows(conn, f"PRAGMA table_info({table})")
            }
            check_columns(path, table, columns)
        if "lovia_schema" in tables:
            versions = dict(
                await _rows(conn, "SELECT store, version FROM lovia_schema")
            )
            check_versions(path, versions)
        if readonly:
            mode = str((await _rows(conn, "PRAGMA journal_mode"))[0][0]).lower()
            notice = (
                "opened immutable: changes by others are not seen"
                if immutable
                else None
            )
        else:
            mode, notice = await _set_wal(conn)
    except OpenError:
        await conn.close()
        raise
    except sqlite3.Error as exc:
        await conn.close()
        raise OpenError(f"{path}: cannot read ({_sqlite_reason(exc)})") from exc
    return Database(
        path,
        conn,
        stores,
        readonly=readonly,
        journal_mode=mode,
        notice=notice,
        immutable=immutable,
    )


async def _rows(
    conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...] = ()
) -> list[Any]:
    """All of a statement's rows in one call on the connection's thread: the
    statement runs to its end before any other read of the app starts, so no
    read shares an older snapshot with one still open (aiosqlite's
    ``execute`` + ``fetch`` + ``close`` are three calls that others interleave)."""
    return list(await conn.execute_fetchall(sql, params))


NO_ID_ABOVE = 1 << 62
"""Above every row id (SQLite's are 64-bit): the open end of an id range."""


def is_missing_table(exc: sqlite3.Error) -> bool:
    """Whether a read failed because the file lacks that store (lovia creates tables lazily)."""
    return "no such table" in str(exc)
