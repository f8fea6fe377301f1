"""Finding what was deleted or rewritten below the index's high-water marks.

Deletions (rewind, clear, a deleted checkpoint) change a table's count; then
each session's (count, last id), and each run's batches, are compared with
the index in keyset chunks of both, and the postings of rows gone are
dropped; the segment a rewind cut into is re-read. lovia only ever removes
text from a row it rewrites (rewind's cut, trim), so a stale posting can only
be a false hit: when a search finds a result's row changed in size (a trim, a
rewind inside the last segment), :meth:`Resync.recheck_session` compares that
session's segment sizes and re-indexes those that changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from lovia_tui.core.search.index import (
    BATCH,
    SEGMENT,
    IndexFile,
    IndexState,
    stored_id,
    stored_id_sql,
)

SYNC_CHUNK = 4_000
"""Sessions (or runs) compared per statement when looking for deletions."""
CHECK_SPAN = 20_000
"""Deletions are looked for once fewer than this many ids remain unindexed
(counting the rows above the mark reads them; at the end of a build it is cheap)."""
REBUILD_DEAD = 50_000
"""Dead postings beyond this and beyond the live ones: the index is rebuilt."""


class Resync:
    """The deletion half of :class:`~lovia_tui.core.search.build.Builder`."""

    index: IndexFile
    reader: sqlite3.Connection
    # Provided by the Builder: writing one unit's postings, and forgetting them.
    _add: Callable[..., IndexState]
    _drop: Callable[[IndexState, int, int], IndexState]
    _commit: Callable[[IndexState], None]
    deferred: set[str]
    """Tables whose deletions were not looked for yet (too much unindexed)."""
    rebuild: Callable[[], None]

    def _reindex_segment(self, state: IndexState, unit: tuple[Any, ...]) -> IndexState:
        """Re-read one indexed segment (``key, source, entries, first_index``)
        and replace its postings (inside a transaction)."""
        key, source, entries, first_index = unit
        row = self.reader.execute(
            "SELECT session_id, run_id, entries_json FROM session_runs WHERE id = ?",
            (source,),
        ).fetchone()
        state = self._drop(state, key, entries)
        if row is None:
            return replace(state, seg_count=state.seg_count - 1)
        return self._add(
            state, SEGMENT, source, (row[0], row[1], None), row[2], first_index
        )

    def _changed_since(self, table: str, high: int, count: int) -> bool:
        """Whether rows at or below ``high`` were deleted (or replaced)."""
        key = "id" if table == "session_runs" else "rowid"
        top = self.reader.execute(
            f"SELECT COALESCE(MAX({key}), 0) FROM {table}"
        ).fetchone()[0]
        if top - high > CHECK_SPAN:
            self.deferred.add(table)  # still building: checked when the rest is indexed
            return False
        # One statement, one snapshot: counted in two, a row a writer appended
        # between them read as a deletion, and every session was compared anew.
        # (The whole count reads the smallest index; the rows above, a few.)
        below = self.reader.execute(
            f"SELECT (SELECT COUNT(*) FROM {table}) - "
            f"(SELECT COUNT(*) FROM {table} WHERE {key} > ?)",
            (high,),
        ).fetchone()[0]
        return below != count

    def check_segments(self) -> None:
        state = self.index.state()
        if self._file_replaced(state) or self._mostly_dead(state):
            self.rebuild()
        elif self._changed_since("session_runs", state.seg_high, state.seg_count):
            self._resync(
                "SELECT session_id, COUNT(*), MAX(id) FROM session_runs "
                "WHERE id <= ?2 AND session_id > ?1 GROUP BY session_id "
                "ORDER BY session_id LIMIT ?3",
                SEGMENT,
                state.seg_high,
                self.recheck_session,
            )

    def _mostly_dead(self, state: IndexState) -> bool:
        """More postings dead than live (and many): cheaper to build anew."""
        if state.dead <= REBUILD_DEAD:
            return False
        live = self.index.conn.execute(
            "SELECT COALESCE(SUM(MAX(entries, 0)), 0) FROM units"
        ).fetchone()[0]
        return state.dead > live

    def _file_replaced(self, state: IndexState) -> bool:
        """The row at our high-water mark holds another session: not the file
        we indexed (copied over, restored from a backup)."""
        if not state.seg_high:
            return False
        ours = self.index.conn.execute(
            "SELECT session_id, run_id FROM units WHERE kind = 0 AND source = ?",
            (state.seg_high,),
        ).fetchone()
        theirs = self.reader.execute(
            "SELECT session_id, run_id FROM session_runs WHERE id = ?",
            (state.seg_high,),
        ).fetchone()
        return ours is not None and theirs is not None and tuple(ours) != tuple(theirs)

    def check_batches(self) -> None:
        state = self.index.state()
        ours = self.index.conn.execute(
            "SELECT run_id, seq FROM units WHERE kind = 1 AND source = ?",
            (state.turn_high,),
        ).fetchone()
        theirs = self.reader.execute(
            "SELECT run_id, seq FROM snapshot_turns WHERE rowid = ?", (state.turn_high,)
        ).fetchone()
        reused = (
            ours is not None and theirs is not None and tuple(ours) != tuple(theirs)
        )
        if reused or self._changed_since(
            "snapshot_turns", state.turn_high, state.turn_count
        ):
            self._resync(
                "SELECT run_id, COUNT(*), MAX(rowid) FROM snapshot_turns "
                "WHERE rowid <= ?2 AND run_id > ?1 GROUP BY run_id "
                "ORDER BY run_id LIMIT ?3",
                BATCH,
                state.turn_high,
                self.recheck_run,
            )

    def _resync(self, theirs_sql: str, kind: int, high: int, recheck) -> None:
        """Compare (count, last id) per session (or run) with lovia's, in keyset
        chunks of both, and recheck each one that differs."""
        column = "session_id" if kind == SEGMENT else "run_id"
        # No lower bound at first: ids of any type (numbers sort before text,
        # and no one value is below all of them in a TEXT column and in one
        # without a type) are compared too.
        first = theirs_sql.replace(f" AND {column} > ?1", " AND ?1 IS NULL")
        after: Any = None
        while True:
            theirs = self.reader.execute(
                first if after is None else theirs_sql, (after, high, SYNC_CHUNK)
            ).fetchall()
            last = theirs[-1][0] if len(theirs) == SYNC_CHUNK else None
            lower = "?2 IS NULL" if after is None else f"{column} > ?2"
            bound = "" if last is None else f"AND {column} <= ?3"
            ours = self.index.conn.execute(
                f"SELECT {column}, COUNT(*), MAX(source) FROM units "
                f"WHERE kind = ?1 AND {lower} {bound} GROUP BY {column}",
                (kind, after) + (() if last is None else (last,)),
            ).fetchall()
            known = {row[0]: tuple(row[1:]) for row in ours}
            for name, count, top in theirs:
                if known.pop(name, None) != (count, top):
                    recheck(name)
            for gone in known:
                recheck(gone)
            if last is None:
                return
            after = last

    def recheck_session(self, session_id: Any) -> None:
        """Drop a session's segments that are gone and re-index those whose
        size changed (a rewind's cut, a trim): one session's rows are read."""
        high = self.index.state().seg_high
        sizes: dict[int, int] = {}
        after = 0
        # length() reads each row whole: a few hundred rows a statement.
        while rows := self.reader.execute(
            "SELECT id, length(entries_json) FROM session_runs "
            f"WHERE session_id = {stored_id_sql(1)} AND id > ?3 AND id <= ?4 "
            "ORDER BY id LIMIT 200",
            (*stored_id(session_id), after, high),
        ).fetchall():
            sizes.update(rows)
            after = rows[-1][0]
        units = self.index.conn.execute(
            "SELECT key, source, entries, first_index, size FROM units "
            f"WHERE session_id = {stored_id_sql(1)} AND kind = 0 ORDER BY source",
            stored_id(session_id),
        ).fetchall()
        changed = [unit[:4] for unit in units if sizes.get(unit[1]) != unit[4]]
        if not changed:
            return
        with self.index.transaction():
            state = self.index.state()
            for unit in changed:
                state = self._reindex_segment(state, unit)
            self._commit(state)

    def recheck_run(self, run_id: Any) -> None:
        """Drop a checkpoint's batches that are gone; index those we lack below
        the mark (rowids SQLite handed out again after a delete)."""
        high = self.index.state().turn_high
        theirs = {
            row[0]: row
            for row in self.reader.execute(
                "SELECT rowid, run_id, seq, entries_json FROM snapshot_turns "
                f"WHERE run_id = {stored_id_sql(1)} AND rowid <= ?3",
                (*stored_id(run_id), high),
            )
        }
        with self.index.transaction():
            state = self.index.state()
            for key, source, seq, entries in self.index.conn.execute(
                "SELECT key, source, seq, entries FROM units "
                f"WHERE kind = 1 AND run_id = {stored_id_sql(1)}",
                stored_id(run_id),
            ).fetchall():
                row = theirs.pop(source, None)
                if row is None or row[2] != seq:
                    state = replace(
                        self._drop(state, key, entries), turn_count=state.turn_count - 1
                    )
                    if row is not None:
                        theirs[source] = row
            for rowid, rid, seq, stored in theirs.values():
                state = self._add(state, BATCH, rowid, (None, rid, seq), stored, None)
                state = replace(state, turn_count=state.turn_count + 1)
            self._commit(state)
