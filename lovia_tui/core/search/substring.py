"""The plain substring scan over stored segments, for ``browse --search`` (no index needed)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson

from lovia_tui.core.store.database import Database
from lovia_tui.core.store.pace import StatementCut, cut_for
from lovia_tui.core.stored import stored_key

SCAN_CHUNK = 20_000
"""Most segments one search statement reads; fewer when they are large (SCAN_BYTES)."""
SCAN_BYTES = 3_500_000
"""What one search statement should read: ~45 ms of instr() at 1M segments on
this kind of machine (5 MB took 63 ms, over the 50 ms rule)."""


# Two subqueries, not MIN(id), MAX(id) in one: SQLite reads a lone MIN or MAX
# from the end of the primary key but scans a whole index for both at once.
_ID_BOUNDS = (
    "SELECT (SELECT MIN(id) FROM session_runs), (SELECT MAX(id) FROM session_runs)"
)


async def search_segments(
    db: Database, needle: str
) -> AsyncIterator[tuple[list[tuple[str, int]], float]]:
    """Segments whose stored JSON contains ``needle``, newest first, in id chunks.

    The needle is escaped the way lovia's ``json.dumps(ensure_ascii=False)``
    stores text, so quotes and newlines match too. Yields (matches, fraction).
    """
    if not db.stores.session or not needle:
        return
    stored = orjson.dumps(needle).decode()[1:-1]
    bounds = await db.fetchone(_ID_BOUNDS)
    if not bounds or bounds[0] is None:
        return
    low, high = bounds
    upper = high + 1
    # Size the id ranges by what an id weighs on disk (the file over the id
    # span): ~SCAN_BYTES a statement, ~400 rows of 8 KB, whatever the rows
    # weigh, so a scan never holds the connection, or without WAL a writer,
    # for long. Timing each statement instead feeds back the UI's own delays;
    # a range whose rows are not cached yet (3.5 MB read 59 ms from a cold
    # 9 GB file) is cut off and read again in halves, now mostly cached.
    pages = await db.fetchone(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
    )
    per_id = (pages[0] if pages and pages[0] else 0) / max(1, high + 1 - low)
    chunk = max(1, min(SCAN_CHUNK, int(SCAN_BYTES / max(per_id, 1.0))))
    while upper > low:
        lower = max(low, upper - chunk)
        try:
            rows = await db.fetchall(
                "SELECT session_id, id FROM session_runs WHERE id >= ? AND id < ? "
                "AND instr(entries_json, ?) > 0 ORDER BY id DESC",
                (lower, upper, stored),
                cut=cut_for(chunk),
            )
        except StatementCut:
            chunk = max(1, chunk // 2)
            continue
        upper = lower
        yield (
            [(stored_key(sid), row_id) for sid, row_id in rows],
            (high + 1 - upper) / max(1, high + 1 - low),
        )
