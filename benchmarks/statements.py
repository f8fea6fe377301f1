"""How long each read-layer statement holds the connection, at this size.

The rule: no statement longer than 50 ms on a connection that could hold up a
writer, on a cold page cache (the file's pages are dropped first, as after a
reboot). This calls the read layer's own functions one after another on the
app's kind of connection (``open_database``), nothing else running, and
times every statement they issue; the slowest is named with SQLite's plan
for it. The search is cut after a few chunks: its chunks are all alike.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from machine import evict_page_cache
from probe import Statements

from lovia_tui.core.runs.index import RunOrder
from lovia_tui.core.search import substring
from lovia_tui.core.store import segment_reads, session_reads
from lovia_tui.core.store.database import open_database
from lovia_tui.core.store.head_reads import stream_runs
from lovia_tui.view.transcript_loader import BATCH

SEARCH_CHUNKS = 5


async def _exercise(info: dict) -> None:
    db = await open_database(Path(info["path"]))
    try:
        recent = await session_reads.recent_session_ids(db, 200)
        for session_id, _, _ in recent[:50]:
            await session_reads.session_summary(db, session_id)
        async for _ in session_reads.session_index(db):
            pass
        segments = await segment_reads.segments(db, info["giant_session"])
        for segment in segments[-BATCH:]:
            await segment_reads.segment_entries(db, segment)
        async for _ in RunOrder(db).walk():  # the runs pane's walk
            pass
        async for _ in stream_runs(db, limit=2_000):  # `runs --json`
            pass
        chunks = 0
        async for _ in substring.search_segments(db, info["needle"]):
            chunks += 1
            if chunks == SEARCH_CHUNKS:
                break
    finally:
        await db.close()


def measure(info: dict) -> dict:
    """The slowest statements, by query, with their counts; the slowest one
    whole (``slowest``, ``params``) with its plan."""
    evict_page_cache(Path(info["path"]))
    statements = Statements()
    try:
        asyncio.run(_exercise(info))
    finally:
        statements.restore()
    _, sql, params = statements.slowest
    return {
        "by_query": statements.report(),
        "slowest": sql,
        "params": [repr(p)[:80] for p in params],
        "plan": statements.plan(info["path"]),
    }
