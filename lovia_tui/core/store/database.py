"""One lovia SQLite file and our own short-lived read connection to it.

lovia's store classes take a write lock on first use and may change the
journal mode, so browsing never constructs them: it reads through aiosqlite
with its own connection. ``readonly`` opens with ``mode=ro`` (``immutable=1``
where SQLite needs it) and so performs no write of any kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from lovia_tui.core.errors import DamagedError, LoviaTuiError, OpenError
from lovia_tui.core.store.connect import (
    BUSY_TIMEOUT_MS,
    IMMUTABLE_NOTICE,
    FileIdentity,
    check_file,
    connect,
    fetchall_decoded,
    quick_check_at_open,
    rows,
    set_wal,
    sqlite_uri,
)
from lovia_tui.core.store.pace import Cut
from lovia_tui.core.store.read_errors import is_damage, read_errors, sqlite_reason
from lovia_tui.core.store.schema import (
    CHAT_TABLES,
    LOVIA_VIEWS_SQL,
    STORE_TABLES,
    Stores,
    not_lovia,
    refusals,
)
from lovia_tui.core.store.table_shape import TABLES_SQL, columns_sql, folded

T = TypeVar("T")
FOREGROUND_WAIT = 0.5
"""Seconds a read that can wait gives way to a :meth:`Database.foreground` one."""


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
        identity: FileIdentity | None = None,
    ) -> None:
        self.path = path
        self.conn = conn
        self.stores = stores
        self.readonly = readonly
        self.journal_mode = journal_mode
        self.notice = notice
        # Opened with immutable=1: SQLite will not see anyone else's commits.
        self.immutable = immutable
        # The file the path named when it was opened (None: not known).
        self.identity = identity
        # Why SQLite calls the file damaged, once a fresh connection said so
        # too: the app's banner, and every action's refusal.
        self.damage: str | None = None
        self._foreground = 0
        self._no_foreground = asyncio.Event()
        self._no_foreground.set()
        # One statement at a time on the connection, so a cut statement's
        # clock is its own (aiosqlite queues them in the same order anyway).
        self._turn = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.path.name

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Reads a user is waiting on (a session being opened): while one is
        under way, :meth:`after_foreground` holds back reads that can wait.
        Every read shares one connection, in turn: the list's summaries read
        around a jump had put 30 ms of cold reads in front of the session's
        own (its open took 159-181 ms on a 9 GB file, 67-70 ms without)."""
        self._foreground += 1
        self._no_foreground.clear()
        try:
            yield
        finally:
            self._foreground -= 1
            if not self._foreground:
                self._no_foreground.set()

    async def after_foreground(self, most: float = FOREGROUND_WAIT) -> None:
        """Wait until no :meth:`foreground` read is under way (``most`` seconds at most)."""
        if self._foreground:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._no_foreground.wait(), most)

    async def fetchall(
        self, sql: str, params: tuple[Any, ...] = (), *, cut: Cut | None = None
    ) -> list[Any]:
        """Run one short statement to its end in a single step of the connection.

        Every view reads through this one connection at the same time; a
        statement left open while another starts would pin both to its older
        WAL snapshot and hide other processes' commits (see :func:`~lovia_tui.core.store.connect.rows`).
        A read SQLite calls damaged is tried once more on a new connection
        (a long-lived one can hold a stale view of a file others rewrote)
        before the file is called damaged. ``cut``: seconds after which the
        statement is interrupted and :class:`~lovia_tui.core.store.pace.StatementCut`
        raised (a walk's step, :func:`~lovia_tui.core.store.pace.paced`).
        """
        async with self._turn:
            try:
                with read_errors(self.path):
                    return await rows(self.conn, sql, params, cut)
            except DamagedError:
                if self.damage is not None:
                    raise
                await self.reconnect()
                with self._read_errors():
                    return await rows(self.conn, sql, params, cut)

    async def reconnect(self) -> None:
        """A new connection in place of the current one (the same URI); never
        to a file moved over the path (:meth:`replaced`)."""
        if self.replaced():
            raise LoviaTuiError(self.replaced_text)
        conn, _ = await connect(self.path, self.readonly, immutable=self.immutable)
        old, self.conn = self.conn, conn
        await old.close()

    def replaced(self) -> bool:
        """Whether the path now names another file than the one opened (a
        backup restored with ``mv``, a copy put in place). Our connection
        still reads the old one, and is never pointed at the new one: the
        ``-wal`` and ``-shm`` at the name are the old file's while anyone
        has it open, and SQLite would read (and checkpoint) them as the new
        file's (SQLite's "How To Corrupt", 2.4)."""
        if self.identity is None:
            return False
        try:
            stat = self.path.stat()
        except OSError:
            return False  # gone: nothing else to read
        return (stat.st_dev, stat.st_ino) != self.identity

    @property
    def replaced_text(self) -> str:
        return (
            f"{self.path} was replaced on disk while open: what is shown is the "
            "file it replaced; quit, and have every program that had the old "
            "file open stop too, before opening the new one"
        )

    async def recheck(self) -> None:
        """Read a file called damaged again, on a new connection (Ctrl+R): if
        it reads, :attr:`damage` is forgotten; if not, it stays."""
        if self.damage is None:
            return
        seen, self.damage = self.damage, None
        try:
            await self.reconnect()
            await self.fetchall("SELECT name FROM sqlite_master")
        except DamagedError as exc:
            self.damage = exc.reason or seen

    def fetchall_in_thread(
        self, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()
    ) -> list[Any]:
        """:meth:`fetchall` on a :meth:`thread_connection`, blocking: for a scan
        that parses its rows in the thread that reads them, with no round trip
        through the event loop a statement."""
        with self._read_errors():
            return fetchall_decoded(conn, sql, params)

    @contextlib.contextmanager
    def _read_errors(self) -> Iterator[None]:
        """A writer's lock past the busy timeout, or a damaged file: one line
        naming the file; a damage seen on a fresh connection is remembered
        (:attr:`damage`)."""
        try:
            with read_errors(self.path):
                yield
        except DamagedError as exc:
            if self.damage is None and exc.reason:
                self.damage = exc.reason
            raise

    async def fetchone(
        self, sql: str, params: tuple[Any, ...] = (), *, cut: Cut | None = None
    ) -> Any | None:
        """The first row of a statement that yields at most a few (its own
        ``LIMIT``, a key, an aggregate): read like :meth:`fetchall`."""
        rows = await self.fetchall(sql, params, cut=cut)
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
        segment). Rows gone or NULL are left out. Blocking, for a thread; on
        a connection of its own each time (blobs opened on one that lives on
        grew the doctor's peak memory by ~90 MB over a million segments)."""
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
        """A value opened for blob reads; None if the row is gone or the value
        NULL; opening or reading it fails as every read does (damage included)."""
        with self._read_errors():
            try:
                blob = conn.blobopen(table, column, rowid, readonly=True)
            except sqlite3.OperationalError as exc:
                if "no such rowid" in str(exc) or "of type null" in str(exc):
                    yield None
                    return
                raise
            with blob:
                yield blob

    def thread_connection(self) -> sqlite3.Connection:
        """A connection of its own for work in a thread (blob reads, scans that
        parse as they read), read-only (never writes, never creates: the
        file's URI in mode ro), used by one thread at a time: a stream of
        chunks abandoned in a worker thread is closed wherever it is collected
        (SQLite's serialized mode allows it; Python's check does not). Never
        to a file moved over the path (:meth:`replaced`)."""
        if self.replaced():
            raise LoviaTuiError(self.replaced_text)
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


async def in_thread(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a worker thread that uses a
    :meth:`Database.thread_connection`: a caller cancelled meanwhile still
    waits for the thread to let go of the connection before it closes it."""
    reading = asyncio.ensure_future(asyncio.to_thread(work, *args))
    try:
        return await asyncio.shield(reading)
    finally:
        if not reading.done():
            await asyncio.wait([reading])


async def open_database(
    path: Path, *, readonly: bool = False, check_integrity: bool = True
) -> Database:
    """Open ``path`` as a lovia database or raise :class:`OpenError`
    (:class:`DamagedError` for a file SQLite calls damaged; ``doctor
    --integrity`` opens it without that check, to say where)."""
    identity = check_file(path)
    conn, immutable = await connect(path, readonly)
    try:
        if check_integrity:
            await quick_check_at_open(conn, path)
        tables = dict(await rows(conn, TABLES_SQL))
        ours = sorted(set().union(CHAT_TABLES, *STORE_TABLES.values()) & tables.keys())
        columns: dict[str, set[str]] = {table: set() for table in ours}
        for table, column in await rows(conn, columns_sql(len(ours)), tuple(ours)):
            columns[table].add(folded(column))  # SESSION_ID is lovia's session_id
        versions: dict[object, object] = {}
        if "lovia_schema" in tables:
            # lovia reads the first row of a store (its own table allows one);
            # no ORDER BY rowid: another writer's table may have no rowid.
            for store, version in await rows(
                conn, "SELECT store, version FROM lovia_schema"
            ):
                versions.setdefault(store, version)
        refused = refusals(tables, columns, versions)
        stores = Stores.of(set(tables), frozenset(refused))
        if not stores.any:
            views = [name for (name,) in await rows(conn, LOVIA_VIEWS_SQL)]
            why = next(iter(refused.values()), None) or not_lovia(views)
            raise OpenError(f"{path}: {why}")
        if readonly:
            mode = str((await rows(conn, "PRAGMA journal_mode"))[0][0]).lower()
            notice = IMMUTABLE_NOTICE if immutable else None
        else:
            mode, notice = await set_wal(conn)
    except BaseException as exc:
        # Closed whatever went wrong: aiosqlite's thread would keep the process alive.
        await conn.close()
        if not isinstance(exc, sqlite3.Error):
            raise
        if is_damage(exc):
            raise DamagedError(path, sqlite_reason(exc)) from exc
        raise OpenError(f"{path}: cannot read ({sqlite_reason(exc)})") from exc
    return Database(
        path,
        conn,
        stores,
        readonly=readonly,
        journal_mode=mode,
        notice="; ".join(line for line in (*refused.values(), notice) if line) or None,
        immutable=immutable,
        identity=identity,
    )


NO_ID_ABOVE = 1 << 62
"""Above every row id (SQLite's are 64-bit): the open end of an id range."""


def is_missing_table(exc: sqlite3.Error) -> bool:
    """Whether a read failed because the file lacks that store (lovia creates tables lazily)."""
    return "no such table" in str(exc)
