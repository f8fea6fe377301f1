"""Content search over one lovia file: its index, plus a scan of the rest.

:class:`FileSearch` is what the CLI and the app hold per file. Its calls are
synchronous (the index is plain sqlite3): scripts call them directly, the app
from a thread worker. Results group hits by session (an in-flight
checkpoint's by run: the file does not say its session) with counts, and
each group's newest hit carries a snippet cut from the lovia file, whose
size is checked against the index: a row rewritten since it was indexed is
re-indexed and the search runs again, so no stale hit is shown.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia_tui.core.entries import UnreadableError, parse_json
from lovia_tui.core.search.build import Builder, BuildProgress, open_reader
from lovia_tui.core.search.index import (
    BATCH,
    ENTRY_CAP,
    KEY_SHIFT,
    SEGMENT,
    IndexFile,
    index_path,
    remove_index_files,
)
from lovia_tui.core.search.query import Query
from lovia_tui.core.search.query import quoted as _quoted
from lovia_tui.core.search.scan import RawHit, RestScan
from lovia_tui.core.search.text import entry_fields
from lovia_tui.core.stored import stored_key

POSTING_CAP = 5_000
"""Most postings one search reads, newest first: past it, counts are lower
bounds and older sessions may be missing (the result says so; ``cap=None``
lifts it). Grouping costs ~1 µs a posting, and a phrase of common words walks many
postings per match: 5,000 kept the p95 of 50 queries at 100k under 100 ms on a
busy 2-core machine (10,000: 122 ms)."""
EXPAND_TERMS = 64
"""Most words a one-word prefix is spelled out as (more: FTS5's own prefix)."""
_PREFIX = re.compile(r'(\w+) : "([^\W_]+)" \*')
RANGED_UNITS = 50
"""Sessions of up to this many segments find their hits by one rowid range a
segment; longer ones read all of the match's postings instead."""
SNIPPET_WIDTH = 120
_MASK = (1 << KEY_SHIFT) - 1


@dataclass(frozen=True)
class Hit:
    """One matching entry: where it is and a snippet of it."""

    kind: int
    source: int
    """The segment's row id, or the checkpoint batch's rowid."""
    session_id: str | None
    run_id: str
    offset: int
    """The entry's position in its segment or batch."""
    entry_index: int | None
    """Its flat index in the session (segments whose predecessors were readable)."""
    snippet: str


@dataclass(frozen=True)
class Group:
    """A session's hits, or an in-flight run's (``session_id`` None)."""

    session_id: str | None
    run_id: str | None
    hits: int
    first: Hit


@dataclass(frozen=True)
class SearchResult:
    """Groups newest first, and how the answer was made."""

    query: Query
    groups: list[Group] = field(default_factory=list)
    progress: BuildProgress = BuildProgress(0, 0)
    scanned: int = 0
    """Rows not yet indexed (at the last count), scanned instead."""
    capped: bool = False
    """``POSTING_CAP`` reached: counts are lower bounds."""
    entry_cap: int = ENTRY_CAP


class FileSearch:
    """The index of one lovia file, its builder, and searches over both."""

    def __init__(self, db_path: Path, *, immutable: bool = False) -> None:
        self.db_path = db_path
        self.reader = open_reader(db_path, immutable=immutable)
        try:
            self.index = IndexFile.open(db_path)
        except BaseException:
            self.reader.close()
            raise
        self.builder = Builder(self.index, self.reader)

    def build(self, deadline: float | None = None) -> BuildProgress:
        """Index what is new and drop what is gone (see :mod:`~lovia_tui.core.search.build`);
        nothing where the index cannot be kept (``index.notice``)."""
        if self.index.notice:
            return self.progress()
        return self.builder.sync(deadline)

    def progress(self) -> BuildProgress:
        return self.builder.progress()

    def search(
        self,
        query: Query,
        limit: int = 50,
        cap: int | None = POSTING_CAP,
        *,
        seen: Callable[[str], None] | None = None,
    ) -> SearchResult:
        """Up to ``limit`` groups, newest first (index, then the unindexed rest),
        counted over the newest ``cap`` postings (None: all). ``seen`` is told
        each session the scan of the unindexed rest finds, as it finds it
        (with no index yet that scan is the whole file: seconds at 1M)."""
        for _ in range(2):
            result, stale = self._search(query, limit, cap, seen)
            if not stale:
                return result
            for kind, name in stale:
                if kind == SEGMENT:
                    self.builder.recheck_session(name)
                else:
                    self.builder.recheck_run(name)
        return result

    def _search(
        self,
        query: Query,
        limit: int,
        cap: int | None,
        seen: Callable[[str], None] | None,
    ) -> tuple[SearchResult, set]:
        state = self.index.state()
        scan = RestScan(self.reader, query, self.index.state)
        rest: list[RawHit] = []
        sessions: set[str] = set()
        try:
            for hit in scan.hits(state, self.builder.tables()):
                rest.append(hit)
                if (
                    seen
                    and hit.session_id is not None
                    and hit.session_id not in sessions
                ):
                    sessions.add(hit.session_id)
                    seen(hit.session_id)
        finally:
            scan.close()
        # The marks and the lookup in one read of the index: a row a build
        # indexed while it was scanned is counted once, from the index.
        self.index.conn.execute("BEGIN")
        try:
            marks = self.index.state()
            groups, capped = self._indexed_groups(query, cap)
        finally:
            self.index.conn.execute("COMMIT")
        # Rows not indexed yet are the newest: their groups come first.
        counts: dict[tuple[int, Any], int] = {}
        newest: dict[tuple[int, Any], RawHit | int] = {}
        for hit in sorted(rest, key=_newest_first):
            if hit.source <= (
                marks.seg_high if hit.kind == SEGMENT else marks.turn_high
            ):
                continue
            name = hit.session_id if hit.kind == SEGMENT else hit.run_id
            counts[(hit.kind, name)] = counts.get((hit.kind, name), 0) + 1
            newest.setdefault((hit.kind, name), hit)
        for kind, name, count, top in groups:
            counts[(kind, name)] = counts.get((kind, name), 0) + count
            newest.setdefault((kind, name), top)
        found: list[Group] = []
        stale: set[tuple[int, Any]] = set()
        for (kind, name), top in newest.items():
            if len(found) == limit:
                break
            raw = self._raw(top) if isinstance(top, int) else top
            first = None if raw is None else self._hit(raw, query)
            if first is None:
                stale.add((kind, name))
                continue
            run_id = None if kind == SEGMENT else name
            found.append(Group(first.session_id, run_id, counts[(kind, name)], first))
        progress = self.builder.last or self.progress()
        scanned = self.builder.unindexed(state)
        return SearchResult(query, found, progress, scanned, capped), stale

    def _filters(self, query: Query) -> tuple[str, tuple[Any, ...]]:
        where, params = "", tuple[Any, ...]()
        if query.session_id is not None:
            where, params = " AND u.session_id = ? AND u.kind = 0", (query.session_id,)
        if query.run_id is not None:
            where += " AND u.run_id = ?"
            params += (query.run_id,)
        return where, params

    def _expanded(self, match: str) -> str:
        """``match`` with each one-word prefix spelled out as the words the index
        holds (at most ``EXPAND_TERMS``): FTS5 merges a prefix's doclists whole
        before answering, an OR of words it reads lazily, newest first."""

        def spell(found: re.Match[str]) -> str:
            column, stem = found.group(1), found.group(2).lower()
            terms = self.builder.words.spell(stem, EXPAND_TERMS + 1)
            if not terms or len(terms) > EXPAND_TERMS:
                return found.group(0)
            return f"{column} : ({' OR '.join(_quoted(t) for t in terms)})"

        return _PREFIX.sub(spell, match)

    def _match(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        try:
            return self.index.conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise sqlite3.OperationalError(f"search index: {exc}") from exc

    def _indexed_groups(self, query: Query, cap: int | None) -> tuple[list[Any], bool]:
        """(kind, session or run, hits, newest posting) per group, newest first,
        counted over the newest ``cap`` postings; and whether there were more."""
        where, params = self._filters(query)
        limit = -1 if cap is None else cap + 1
        rows = self._match(
            "WITH h AS MATERIALIZED (SELECT rowid FROM fts WHERE fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?), "
            "k AS (SELECT rowid >> ? AS key, COUNT(*) AS n, MAX(rowid) AS top "
            "FROM (SELECT rowid FROM h LIMIT ?) GROUP BY 1) "
            "SELECT u.kind, CASE WHEN u.kind = 0 THEN u.session_id ELSE u.run_id END, "
            "SUM(k.n), MAX(k.top), (SELECT COUNT(*) FROM h) "
            f"FROM k JOIN units u ON u.key = k.key{where} GROUP BY 1, 2 ORDER BY 4 DESC",
            (
                self._expanded(query.match),
                limit,
                KEY_SHIFT,
                -1 if cap is None else cap,
                *params,
            ),
        )
        capped = cap is not None and bool(rows) and rows[0][4] > cap
        groups = [(kind, stored_key(name), n, top) for kind, name, n, top, _ in rows]
        return groups, capped

    def _raw(self, rowid: int) -> RawHit | None:
        """The hit a posting stands for; None if its unit was dropped meanwhile."""
        unit = self.index.conn.execute(
            "SELECT kind, source, session_id, run_id FROM units WHERE key = ?",
            (rowid >> KEY_SHIFT,),
        ).fetchone()
        if unit is None:
            return None
        kind, source, session_id, run_id = unit
        return RawHit(
            kind,
            source,
            None if session_id is None else stored_key(session_id),
            stored_key(run_id),
            rowid & _MASK,
        )

    def _hit(self, raw: RawHit, query: Query) -> Hit | None:
        """``raw`` with its snippet and flat index; None if the row changed
        since it was indexed (its size differs, or it is gone)."""
        table, key = (
            ("session_runs", "id")
            if raw.kind == SEGMENT
            else ("snapshot_turns", "rowid")
        )
        try:
            row = self.reader.execute(
                f"SELECT length(entries_json), json_extract(entries_json, ?) "
                f"FROM {table} WHERE {key} = ?",
                (f"$[{raw.offset}]", raw.source),
            ).fetchone()
        except sqlite3.OperationalError:
            return None  # rewritten into something that no longer parses
        unit = self.index.conn.execute(
            "SELECT size, first_index FROM units WHERE kind = ? AND source = ?",
            (raw.kind, raw.source),
        ).fetchone()
        if row is None or row[1] is None:
            return None
        if unit is not None and unit[0] != row[0]:
            return None
        try:
            entry = parse_json(row[1])  # text that is not UTF-8 too
        except UnreadableError:
            return None
        body = entry_fields([entry])[0][0] if isinstance(entry, dict) else ""
        first = unit[1] if unit is not None and raw.kind == SEGMENT else None
        return Hit(
            raw.kind,
            raw.source,
            raw.session_id,
            raw.run_id,
            raw.offset,
            _flat(first, raw.offset),
            snippet(body, query.words),
        )

    def session_hits(self, query: Query, session_id: str) -> list[Hit]:
        """Every hit in one session's segments, in transcript order (for n / N)."""
        scoped = Query(query.text, query.match, session_id, query.run_id, query.words)
        units = self.index.conn.execute(
            "SELECT key, source, first_index, run_id FROM units "
            "WHERE session_id = ? AND kind = 0",
            (session_id,),
        ).fetchall()
        hits: list[tuple[int, int, int | None, str]] = []
        match = self._expanded(query.match)
        if len(units) <= RANGED_UNITS:
            for key, source, first, run_id in units:
                for (rowid,) in self._match(
                    "SELECT rowid FROM fts WHERE fts MATCH ? AND rowid BETWEEN ? AND ?",
                    (match, key << KEY_SHIFT, (key << KEY_SHIFT) | _MASK),
                ):
                    hits.append((source, rowid & _MASK, first, stored_key(run_id)))
        else:
            # A long session: every posting of the match, joined (a worker's cost).
            where, params = self._filters(scoped)
            hits += [
                (source, rowid & _MASK, first, stored_key(run_id))
                for source, rowid, first, run_id in self._match(
                    "SELECT u.source, h.rowid, u.first_index, u.run_id FROM "
                    "(SELECT rowid FROM fts WHERE fts MATCH ?) h "
                    f"JOIN units u ON u.key = h.rowid >> {KEY_SHIFT}{where}",
                    (match, *params),
                )
            ]
        scan = RestScan(self.reader, scoped)
        try:
            for raw in scan.hits(self.index.state(), self.builder.tables()):
                if raw.kind == SEGMENT:
                    hits.append((raw.source, raw.offset, None, raw.run_id))
        finally:
            scan.close()
        return [
            Hit(SEGMENT, source, session_id, run_id, offset, _flat(first, offset), "")
            for source, offset, first, run_id in sorted(hits)
        ]

    def close(self) -> None:
        self.index.close()
        self.reader.close()


def _flat(first: int | None, offset: int) -> int | None:
    return None if first is None else first + offset


def _newest_first(hit: RawHit) -> tuple[int, int, int]:
    # In-flight batches first (their runs are not in a segment yet), then
    # segments by id: newest first, as the sessions list orders.
    return (hit.kind != BATCH, -hit.source, hit.offset)


def snippet(text: str, words: Iterable[str], width: int = SNIPPET_WIDTH) -> str:
    """One line of ``text`` around the first of ``words`` it contains."""
    lowered = text.lower()
    places = [p for p in (lowered.find(w) for w in words if w) if p >= 0]
    start = max(0, min(places) - width // 3) if places else 0
    flat = " ".join(text[start : start + 4 * width].split())
    cut = flat[: width - 1] + "…" if len(flat) > width else flat
    return ("…" + cut) if start else cut


def drop_index(db_path: Path) -> bool:
    """Delete ``db_path``'s index; whether there was one."""
    return remove_index_files(index_path(db_path))
