"""The scan of what the index has not reached yet, with the index's meaning.

Rows above the index's high-water marks are read in timed chunks, narrowed
in SQLite by ``LIKE`` on each ASCII word (a superset: the tokenizer keeps
diacritics, so such a word's tokens are substrings of the stored JSON), and
the survivors' entries go through an in-memory FTS5 table with the same
tokenizer and the same MATCH: a scanned row is found exactly when the index
would have found it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lovia_tui.core.entries import UnreadableError, parse_entries
from lovia_tui.core.search.build import KEYS, READ_BYTES, ChunkReader, rows_above
from lovia_tui.core.search.index import BATCH, SEGMENT, TOKENIZER, IndexState
from lovia_tui.core.search.query import Query
from lovia_tui.core.search.text import entry_fields
from lovia_tui.core.stored import stored_key


@dataclass(frozen=True)
class RawHit:
    """One matching entry, wherever it came from (index or scan)."""

    kind: int
    source: int
    session_id: str | None
    run_id: str
    offset: int


def _like(word: str) -> str | None:
    return f"%{word}%" if word.isascii() else None


class RestScan:
    """Scans the rows above ``state``'s marks for ``query`` (see module doc)."""

    def __init__(
        self,
        reader: sqlite3.Connection,
        query: Query,
        marks: Callable[[], IndexState] | None = None,
    ) -> None:
        self.chunks = ChunkReader(reader)
        self.query = query
        self.marks = marks
        """The index's current marks: rows a build indexes while the scan runs
        are left to the lookup that follows it, not read twice."""
        self.memory = sqlite3.connect(":memory:")
        self.memory.execute(
            f"CREATE VIRTUAL TABLE fts USING fts5(body, tool, tag, tokenize='{TOKENIZER}')"
        )

    def hits(self, state: IndexState, tables: set[str]) -> Iterator[RawHit]:
        """Every matching entry above the marks, newest rows first within each
        chunk's order (oldest chunk first)."""
        likes = [like for like in map(_like, self.query.words) if like]
        narrow = "".join(" AND entries_json LIKE ?" for _ in likes)
        for table, high, kind in (
            ("session_runs", "seg_high", SEGMENT),
            ("snapshot_turns", "turn_high", BATCH),
        ):
            # A checkpoint is not known to belong to any session.
            if table in tables and (kind == SEGMENT or self.query.session_id is None):
                where, params = self._filters(segment=kind == SEGMENT)
                sql = rows_above(table, where + narrow, ranged=True)
                after = getattr(state, high)
                yield from self._scan(
                    table, sql, (after, high), (*params, *likes), kind
                )

    def _filters(self, *, segment: bool) -> tuple[str, tuple[Any, ...]]:
        where, params = "", tuple[Any, ...]()
        if segment and self.query.session_id is not None:
            where, params = " AND session_id = ?", (self.query.session_id,)
        if self.query.run_id is not None:
            where += " AND run_id = ?"
            params += (self.query.run_id,)
        return where, params

    def _scan(
        self,
        table: str,
        sql: str,
        mark: tuple[int, str],
        params: tuple[Any, ...],
        kind: int,
    ) -> Iterator[RawHit]:
        after, high = mark
        # Up to the newest row, then on while rows keep being appended.
        top = self._top(table)
        most = self._ids_per_read(top)
        while after < top:
            rows, after = self.chunks.read_range(sql, after, params, most)
            yield from self._matches(rows, kind)
            if self.marks is not None:
                after = max(after, getattr(self.marks(), high))
            if after >= top:
                top = self._top(table)

    def _top(self, table: str) -> int:
        sql = f"SELECT max({KEYS[table]}) FROM {table}"
        (top,) = self.chunks.conn.execute(sql).fetchone()
        return top or 0

    def _ids_per_read(self, top: int) -> int:
        """Ids per statement so that one reads about ``READ_BYTES`` even cold
        (the filter keeps few rows: the time of a warm read says little of a
        cold one), taking every page of the file as this table's."""
        (pages,) = self.chunks.conn.execute("PRAGMA page_count").fetchone()
        (size,) = self.chunks.conn.execute("PRAGMA page_size").fetchone()
        return max(1, READ_BYTES * top // max(1, pages * size))

    def _matches(self, rows: list[Any], kind: int) -> Iterator[RawHit]:
        """The entries of ``rows`` that match, through the in-memory index."""
        places: list[tuple[Any, int]] = []
        docs: list[tuple[int, str, str, str]] = []
        for row in rows:
            try:
                entries = parse_entries(row[3]) if isinstance(row[3], str) else []
            except UnreadableError:
                continue
            for offset, fields in enumerate(entry_fields(entries)):
                docs.append((len(places), *fields))
                places.append((row, offset))
        if not docs:
            return
        self.memory.executemany(
            "INSERT INTO fts (rowid, body, tool, tag) VALUES (?, ?, ?, ?)", docs
        )
        found = self.memory.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid",
            (self.query.match,),
        ).fetchall()
        self.memory.execute("DELETE FROM fts")
        for (position,) in found:
            row, offset = places[position]
            session_id, run_id = (row[1], row[2]) if kind == SEGMENT else (None, row[1])
            yield RawHit(
                kind,
                row[0],
                None if session_id is None else stored_key(session_id),
                stored_key(run_id),
                offset,
            )

    def close(self) -> None:
        self.memory.close()
