"""Building the search index and keeping it current, in short reads.

The lovia file is read in chunks by row id through its own read-only
connection; each statement is sized to take ~25 ms (never more than a few
rows of 50 ms), so in rollback-journal mode a writer waits at most that long,
and in WAL mode not at all. Every chunk is committed to the index with the
new high-water mark: a build stopped anywhere resumes where it was.

Rows above the high-water mark are new; what was deleted or rewritten
below it is found by :mod:`~lovia_tui.core.search.sync`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lovia_tui.core.entries import UnreadableError, parse_entries
from lovia_tui.core.search.index import (
    BATCH,
    KEY_SHIFT,
    SEGMENT,
    IndexFile,
    IndexState,
    stored_id,
    stored_id_sql,
)
from lovia_tui.core.search.sync import Resync
from lovia_tui.core.search.text import entry_fields
from lovia_tui.core.search.words import Words
from lovia_tui.core.store.database import sqlite_uri
from lovia_tui.core.store.table_shape import TABLES_SQL
from lovia_tui.core.stored import decode_text

TARGET_SECONDS = 0.025
"""What one read of the lovia file should take; rows per read adapt to it."""
MAX_ROWS = 2_000
READ_BYTES = 4_000_000
"""At most about this much stored JSON a read brings into memory."""
COMMIT_SECONDS = 0.5
"""Chunks are committed to the index together for about this long: a build
stopped anywhere loses at most that much work."""
COMMIT_POSTINGS = 5_000
"""...or this many entries (up to 20 MB of text at ENTRY_CAP, ~4 MB typically):
what a transaction holds in memory stays bounded."""


@dataclass(frozen=True)
class BuildProgress:
    """Rows indexed out of the rows in the file (segments and batches)."""

    indexed: int
    total: int
    listing: bool = False
    """The rows are all indexed, the index's words still being listed (prefixes
    are spelled the slow way until then): see :mod:`~lovia_tui.core.search.words`."""

    @property
    def done(self) -> bool:
        return self.indexed >= self.total and not self.listing

    @property
    def fraction(self) -> float:
        return 1.0 if not self.total else min(1.0, self.indexed / self.total)


KEYS = {"session_runs": "id", "snapshot_turns": "rowid"}


def rows_above(table: str, where: str = "", *, ranged: bool = False) -> str:
    """The statement reading a chunk of rows above an id (?1), ``where`` narrowing
    them, at most the last parameter: (id, session_id, run_id, entries_json) of
    segments, (rowid, run_id, seq, entries_json) of checkpoint batches.
    ``ranged`` adds a ceiling (?2): with a filter that keeps few rows, the limit
    alone would let one statement read on to the end of the file."""
    key = KEYS[table]
    columns = "id, session_id, run_id" if key == "id" else "rowid, run_id, seq"
    ceiling = f" AND {key} <= ?" if ranged else ""
    return (
        f"SELECT {columns}, entries_json FROM {table} "
        f"WHERE {key} > ?{ceiling}{where} ORDER BY {key} LIMIT ?"
    )


def open_reader(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    """A read-only connection to a lovia file: it can write no byte of it."""
    conn = sqlite3.connect(
        sqlite_uri(path, "ro", immutable=immutable),
        uri=True,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.text_factory = decode_text
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


class ChunkReader:
    """Reads a lovia file in statements of about ``TARGET_SECONDS``: the rows
    per statement halve after a slow one and double after a quick one."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.rows = 64

    def read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """Run ``sql`` with ``params`` and the row limit as its last parameter
        (rows end with their stored JSON, whose size bounds the next read too)."""
        return self._timed(sql, (*params, self.rows), ranged=False)

    def read_range(
        self, sql: str, after: int, params: tuple[Any, ...], most: int
    ) -> tuple[list[Any], int]:
        """Run a ``rows_above(..., ranged=True)`` statement over the ids
        (after, after + rows], at most ``most`` of them, whatever share its
        filter keeps; the rows and the ceiling read up to."""
        ceiling = after + min(self.rows, most)
        return self._timed(
            sql, (after, ceiling, *params, self.rows), ranged=True
        ), ceiling

    def _timed(self, sql: str, params: tuple[Any, ...], *, ranged: bool) -> list[Any]:
        started = time.perf_counter()
        rows = self.conn.execute(sql, params).fetchall()
        took = time.perf_counter() - started
        size = sum(len(row[-1]) for row in rows if isinstance(row[-1], str | bytes))
        if took > TARGET_SECONDS * 1.5 or size > READ_BYTES:
            self.rows = max(1, self.rows // 2)
        elif (
            took < TARGET_SECONDS / 2
            and (ranged or len(rows) == self.rows)
            and size < READ_BYTES / 2
        ):
            self.rows = min(MAX_ROWS, self.rows * 2)
        return rows


class Builder(Resync):
    """Brings one :class:`IndexFile` up to date with one lovia file."""

    def __init__(self, index: IndexFile, reader: sqlite3.Connection) -> None:
        self.index = index
        self.reader = reader
        self.chunks = ChunkReader(reader)
        self.words = Words(index.conn)
        self._units: list[tuple[Any, ...]] = []
        self._postings: list[tuple[Any, ...]] = []
        self._flats: dict[Any, int | None] = {}
        """Next flat index of each session with segments added but not committed."""
        self.deferred: set[str] = set()
        self.last: BuildProgress | None = None
        """What the last :meth:`progress` found (searches show it uncounted)."""

    def tables(self) -> set[str]:
        return {row[0] for row in self.reader.execute(TABLES_SQL)}

    def progress(self) -> BuildProgress:
        """Rows indexed against rows stored (two fast counts from lovia's indexes)."""
        tables, state = self.tables(), self.index.state()
        total = 0
        if "session_runs" in tables:
            total += self.reader.execute(
                "SELECT COUNT(*) FROM session_runs"
            ).fetchone()[0]
        if "snapshot_turns" in tables:
            total += self.reader.execute(
                "SELECT COUNT(*) FROM snapshot_turns"
            ).fetchone()[0]
        indexed = min(total, state.seg_count + state.turn_count)
        self.last = BuildProgress(
            indexed, total, listing=indexed >= total and not self.words.ready
        )
        return self.last

    def unindexed(self, state: IndexState) -> int:
        """Rows above ``state``'s marks: what a search scans (counting them
        costs less than the scan itself)."""
        tables = self.tables()
        return sum(
            self.count_above(table, high)
            for table, high in (
                ("session_runs", state.seg_high),
                ("snapshot_turns", state.turn_high),
            )
            if table in tables
        )

    def count_above(self, table: str, high: int) -> int:
        """Rows of ``table`` (session_runs or snapshot_turns) above id ``high``."""
        key = "id" if table == "session_runs" else "rowid"
        return self.reader.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {key} > ?", (high,)
        ).fetchone()[0]

    def sync(self, deadline: float | None = None) -> BuildProgress:
        """Index what is new and drop what is gone, until done or ``deadline``
        (``time.monotonic()``); returns how far it got."""
        tables, self.deferred = self.tables(), set()
        steps = (
            ("session_runs", self._segment_chunk, self.check_segments),
            ("snapshot_turns", self._batch_chunk, self.check_batches),
        )
        for table, chunk, check in steps:
            if table not in tables:
                continue
            check()
            while self._commit_chunks(chunk, deadline):
                if deadline is not None and time.monotonic() > deadline:
                    return self.progress()
        for table, _, check in steps:
            if table in self.deferred:
                check()  # the end of a long build: now it is cheap
        if not self.words.ready:  # every row found is indexed: list their words
            self.words.fill(deadline)
        return self.progress()

    def _commit_chunks(
        self, chunk: Callable[[IndexState], IndexState | None], deadline: float | None
    ) -> bool:
        """At least one chunk, and more for ~``COMMIT_SECONDS`` or ``COMMIT_POSTINGS`` (not past
        ``deadline``), in one transaction of the index: FTS5 writes a segment
        per commit, and fewer, larger ones merge less. Whether there may be more."""
        until = time.monotonic() + COMMIT_SECONDS
        until = until if deadline is None else min(until, deadline)
        with self.index.transaction():
            state = self.index.state()
            more = True
            while more:
                after = chunk(state)
                more, state = after is not None, after or state
                if time.monotonic() >= until or len(self._postings) > COMMIT_POSTINGS:
                    break
            self._commit(state)
        return more

    # ----- new rows -----

    def _segment_chunk(self, state: IndexState) -> IndexState | None:
        """The next rows of ``session_runs`` added (None: there were none)."""
        rows = self.chunks.read(rows_above("session_runs"), (state.seg_high,))
        if not rows:
            return None
        flats = self._flats
        for row_id, session_id, run_id, stored in rows:
            first = (
                flats[session_id]
                if session_id in flats
                else self._next_flat(session_id)
            )
            state = self._add(
                state, SEGMENT, row_id, (session_id, run_id, None), stored, first
            )
            count, first = self._units[-1][6:8]
            flats[session_id] = None if first is None or count < 0 else first + count
        return replace(
            state, seg_high=rows[-1][0], seg_count=state.seg_count + len(rows)
        )

    def _batch_chunk(self, state: IndexState) -> IndexState | None:
        """The next rows of ``snapshot_turns`` added (None: there were none)."""
        rows = self.chunks.read(rows_above("snapshot_turns"), (state.turn_high,))
        if not rows:
            return None
        for rowid, run_id, seq, stored in rows:
            state = self._add(state, BATCH, rowid, (None, run_id, seq), stored, None)
        return replace(
            state, turn_high=rows[-1][0], turn_count=state.turn_count + len(rows)
        )

    # ----- writing postings -----

    def _add(
        self,
        state: IndexState,
        kind: int,
        source: int,
        names: tuple[Any, Any, int | None],
        stored: Any,
        first_index: int | None,
    ) -> IndexState:
        """Index one stored row as a new unit (inside a transaction); ``names``
        is its (session_id, run_id, seq)."""
        session_id, run_id, seq = names
        try:
            entries = parse_entries(stored) if isinstance(stored, str) else None
        except UnreadableError:
            entries = None
        key = state.next_key
        self._units.append(
            (
                key,
                kind,
                source,
                session_id,
                run_id,  # as stored, of any type (the column has none)
                seq,
                -1 if entries is None else len(entries),
                first_index if entries is not None else None,
                len(stored) if isinstance(stored, str | bytes) else 0,
            )
        )
        if entries:
            self._postings.extend(
                ((key << KEY_SHIFT) | offset, *fields)
                for offset, fields in enumerate(entry_fields(entries[: 1 << KEY_SHIFT]))
            )
        return replace(state, next_key=key + 1)

    def _commit(self, state: IndexState) -> None:
        """Write the units and postings added, and ``state`` (in a transaction)."""
        conn = self.index.conn
        conn.executemany(
            "INSERT INTO units (key, kind, source, session_id, run_id, seq, entries, "
            f"first_index, size) VALUES (?1, ?2, ?3, {stored_id_sql(4)}, "
            f"{stored_id_sql(6)}, ?8, ?9, ?10, ?11)",
            [
                (*unit[:3], *stored_id(unit[3]), *stored_id(unit[4]), *unit[5:])
                for unit in self._units
            ],
        )
        conn.executemany(
            "INSERT INTO fts (rowid, body, tool, tag) VALUES (?, ?, ?, ?)",
            self._postings,
        )
        self.words.add(self._postings)
        self._units, self._postings, self._flats = [], [], {}
        self.index.save_state(state)

    def _next_flat(self, session_id: Any) -> int | None:
        """The flat index after the session's last indexed segment (None once
        a segment of it could not be read: never guessed)."""
        row = self.index.conn.execute(
            "SELECT first_index, entries FROM units "
            f"WHERE session_id = {stored_id_sql(1)} AND kind = 0 "
            "ORDER BY source DESC LIMIT 1",
            stored_id(session_id),
        ).fetchone()
        if row is None:
            return 0
        first, count = row
        return None if first is None or count < 0 else first + count

    def _drop(self, state: IndexState, key: int, entries: int) -> IndexState:
        """Forget one unit: its postings no longer join (inside a transaction)."""
        self.index.conn.execute("DELETE FROM units WHERE key = ?", (key,))
        return replace(state, dead=state.dead + max(0, entries))

    def rebuild(self) -> None:
        """Forget everything indexed: the next chunks start from the first row."""
        with self.index.transaction() as conn:
            conn.execute("DELETE FROM units")
            conn.execute("INSERT INTO fts (fts) VALUES ('delete-all')")
            self.words.forget()
            self.index.save_state(IndexState())
