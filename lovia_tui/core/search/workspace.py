"""Content search across a workspace's files, as the inspector uses it.

One index per file (``search.FileSearch``), built by a process of its own
(:mod:`~lovia_tui.core.search.indexer`); every search opens the indexes in
a worker thread, so a search never waits for a build's write transaction and
nothing of either runs on the UI loop. In-flight checkpoint hits are put under the
session their run is linked to (``Workspace.links``), never guessed.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lovia_tui.core.models import SessionKey
from lovia_tui.core.search.build import BuildProgress
from lovia_tui.core.search.file_search import POSTING_CAP, FileSearch, SearchResult
from lovia_tui.core.search.index import ENTRY_CAP
from lovia_tui.core.search.indexer import Indexer
from lovia_tui.core.search.query import Query, parse_query
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace


@dataclass(frozen=True)
class Found:
    """Matching sessions, newest first, and what the user should know of how."""

    keys: list[SessionKey]
    hits: dict[SessionKey, int]
    note: str


def _search_file(
    db: Database, query: Query, limit: int, seen: Callable[[str], None] | None
) -> tuple[SearchResult, str | None]:
    search = FileSearch(db.path, immutable=db.immutable)
    try:
        return search.search(query, limit, seen=seen), search.index.notice
    finally:
        search.close()


def _row_keys(db: Database, query: Query, session_id: str) -> list[str]:
    search = FileSearch(db.path, immutable=db.immutable)
    try:
        hits = search.session_hits(query, session_id)
    finally:
        search.close()
    # The transcript's entry rows are keyed seg:<file>:<row id>:<offset>.
    return [f"seg:{db.path}:{hit.source}:{hit.offset}" for hit in hits]


class WorkspaceSearch:
    """Builds the indexes of a workspace's files and searches them."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.indexer: Indexer | None = None
        """The process building the indexes, once started."""

    @property
    def files(self) -> list[Database]:
        """Files with sessions or checkpoints."""
        return [db for db in self.workspace.databases if db.stores.any]

    def start_indexing(self) -> Indexer:
        """Start the process that builds the indexes and keeps them current."""
        self.indexer = Indexer([(db.path, db.immutable) for db in self.files])
        return self.indexer

    # ----- searching (worker threads) -----

    async def search(
        self,
        text: str,
        limit: int = 500,
        so_far: Callable[[list[SessionKey]], None] | None = None,
    ) -> Found:
        """Sessions matching ``text`` (raises ``QueryError``), with a note saying
        what was scanned instead of looked up, and what was not counted.
        ``so_far`` is told the sessions found while the rows not indexed yet
        are scanned (from a worker thread, at most every ``SO_FAR_EVERY``
        seconds): the first hits show before a scan of the whole file ends."""
        query = parse_query(text)
        indexer = self.indexer
        if indexer is not None:
            indexer.pause(True)  # two cores: the search's scan gets one to itself
        try:
            tell = None if so_far is None else _SoFar(so_far)
            return await self._search(query, limit, tell)
        finally:
            if indexer is not None:
                indexer.pause(False)

    async def _search(self, query: Query, limit: int, so_far: _SoFar | None) -> Found:
        hits: dict[SessionKey, int] = {}
        runs: dict[str, int] = {}
        scanned = capped = 0
        progress = BuildProgress(0, 0)
        notices: list[str] = []
        for db in self.files:
            seen = None if so_far is None else so_far.in_file(db.path)
            result, notice = await asyncio.to_thread(
                _search_file, db, query, limit, seen
            )
            notices += [notice] if notice and notice not in notices else []
            scanned += result.scanned
            capped = capped or result.capped
            progress = BuildProgress(
                progress.indexed + result.progress.indexed,
                progress.total + result.progress.total,
                progress.listing or result.progress.listing,
            )
            for group in result.groups:
                if group.session_id is not None:
                    key = (str(db.path), group.session_id)
                    hits[key] = hits.get(key, 0) + group.hits
                elif group.run_id is not None:
                    runs[group.run_id] = runs.get(group.run_id, 0) + group.hits
        for run_id, link in (await self.workspace.links(runs)).items():
            key = (str(link.file), link.session_id)
            hits.setdefault(key, runs[run_id])
        note = "; ".join([*notices, _note(progress, scanned, bool(capped))])
        return Found(list(hits), hits, note)

    async def row_keys(self, text: str, key: SessionKey) -> list[str]:
        """The transcript row keys of a session's hits, in transcript order."""
        db = self.workspace.database(Path(key[0]))
        return await asyncio.to_thread(_row_keys, db, parse_query(text), key[1])


SO_FAR_EVERY = 0.5
"""Seconds between two reports of the sessions a scan found so far."""


class _SoFar:
    """The sessions a search's scans found so far, reported to ``tell`` when
    the first is found, then at most every ``SO_FAR_EVERY`` seconds."""

    def __init__(self, tell: Callable[[list[SessionKey]], None]) -> None:
        self.tell = tell
        self.keys: dict[SessionKey, None] = {}
        self.told = -math.inf

    def in_file(self, path: Path) -> Callable[[str], None]:
        """What a file's scan calls with each session it finds (blocking side)."""

        def seen(session_id: str) -> None:
            self.keys[(str(path), session_id)] = None
            now = time.monotonic()
            if now - self.told >= SO_FAR_EVERY:
                self.told = now
                self.tell(list(self.keys))

        return seen


def _note(progress: BuildProgress, scanned: int, capped: bool) -> str:
    parts = []
    if scanned:
        parts.append(
            f"index {progress.fraction:.0%} built: {scanned:,} rows not yet indexed were scanned"
        )
    if capped:
        parts.append(f"counted over the newest {POSTING_CAP:,} matches")
    parts.append(f"entries indexed up to {ENTRY_CAP:,} characters")
    return "; ".join(parts)
