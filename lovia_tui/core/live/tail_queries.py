"""The statements the live tail runs to see what changed since its last look.

Each is a primary-key or rowid range, an index count, or a scan of the
segments the view shows: a poll costs the same however large the file or the
followed session. ``core.tail`` keeps the state; these only read.
"""

from __future__ import annotations

from lovia_tui.core.store.database import NO_ID_ABOVE, Database

_HEAD_STATUS = (
    "CASE WHEN json_valid(head_json) THEN json_extract(head_json, '$.status') END"
)


async def segment_totals(db: Database) -> tuple[int, int]:
    """(segments, last id) of the whole file.

    Separate subqueries keep SQLite's count optimisation, which walks the
    smallest index: about 25 ms per million segments.
    """
    row = await db.fetchrow(
        "SELECT (SELECT COUNT(*) FROM session_runs), "
        "(SELECT COALESCE(MAX(id), 0) FROM session_runs)"
    )
    return row[0], row[1]


async def segments_between(
    db: Database, after_id: int, upto_id: int, limit: int
) -> list[tuple[int, str, str]]:
    """(id, session_id, run_id) of segments with ids in (after_id, upto_id], oldest first."""
    return await db.fetchall(
        "SELECT id, session_id, run_id FROM session_runs WHERE id > ? AND id <= ? "
        "ORDER BY id LIMIT ?",
        (after_id, upto_id, limit),
    )


async def session_fingerprint(
    db: Database, session_id: str, known_upto: int, from_id: int, to_id: int | None
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """A session's (segments, last id, bytes stored in ids from_id..to_id),
    whole and over ids <= known_upto.

    Rewind, clear and trim change the second part for the segments shown
    (ids from_id..to_id; to_id None: to the end); appends only the first. A
    rewind into an older segment deletes every shown one, which the counts
    see. Counts come from lovia's index and only the shown segments are read,
    so a poll costs the same for a session of any length. One statement: one
    snapshot.
    """
    row = await db.fetchrow(
        "SELECT COUNT(*), COALESCE(MAX(id), 0), "
        "COALESCE(SUM(id <= ?1), 0), COALESCE(MAX(CASE WHEN id <= ?1 THEN id END), 0), "
        "(SELECT COALESCE(SUM(length(CAST(entries_json AS BLOB))), 0) FROM session_runs "
        " WHERE session_id = ?2 AND id >= ?3 AND id <= ?4), "
        "(SELECT COALESCE(SUM(length(CAST(entries_json AS BLOB))), 0) FROM session_runs "
        " WHERE session_id = ?2 AND id >= ?3 AND id <= MIN(?4, ?1)) "
        "FROM session_runs WHERE session_id = ?2",
        (known_upto, session_id, from_id, NO_ID_ABOVE if to_id is None else to_id),
    )
    return (row[0], row[1], row[4]), (row[2], row[3], row[5])


async def nth_newest_id(
    db: Database, session_id: str, n: int, before_id: int | None = None
) -> int:
    """The id of a session's ``n``-th newest segment below ``before_id`` (its
    oldest if it has fewer; 0 if none), from lovia's index."""
    row = await db.fetchrow(
        "SELECT MIN(id) FROM (SELECT id FROM session_runs WHERE session_id = ? AND id < ? "
        "ORDER BY id DESC LIMIT ?)",
        (session_id, NO_ID_ABOVE if before_id is None else before_id, n),
    )
    return row[0] or 0


async def nth_oldest_id(
    db: Database, session_id: str, n: int, after_id: int
) -> int | None:
    """The id of a session's ``n``-th segment above ``after_id``; None if it has fewer."""
    row = await db.fetchone(
        "SELECT id FROM session_runs WHERE session_id = ? AND id > ? ORDER BY id LIMIT 1 OFFSET ?",
        (session_id, after_id, n - 1),
    )
    return None if row is None else row[0]


async def session_chars(
    db: Database, session_id: str, from_id: int, below_id: int
) -> int:
    """Bytes stored in a session's segments with ids in [from_id, below_id)."""
    row = await db.fetchrow(
        "SELECT COALESCE(SUM(length(CAST(entries_json AS BLOB))), 0) FROM session_runs "
        "WHERE session_id = ? AND id >= ? AND id < ?",
        (session_id, from_id, below_id),
    )
    return row[0]


_HEAD_TOTALS = (
    "SELECT (SELECT COUNT(*) FROM snapshot_heads) AS n, "
    "(SELECT COALESCE(MAX(rowid), 0) FROM snapshot_heads) AS last, "
    "(SELECT run_id FROM snapshot_heads WHERE rowid = ?1) AS run_id, "
    "(SELECT updated_at FROM snapshot_heads WHERE rowid = ?1) AS updated_at"
)
"""Checkpoints, highest rowid, and the run id and save time at rowid ?1."""


async def head_totals(
    db: Database, rowid: int
) -> tuple[int, int, tuple[str, float] | None]:
    """(checkpoints, highest rowid, the (run_id, updated_at) stored at ``rowid``)."""
    row = await db.fetchrow(_HEAD_TOTALS, (rowid,))
    return row[0], row[1], None if row[2] is None else (row[2], row[3])


async def heads_since(
    db: Database, rowid: int
) -> tuple[
    int, int, tuple[str, float] | None, list[tuple[int, str, str | None, float]]
]:
    """:func:`head_totals` at ``rowid`` and the heads saved above it
    (:func:`heads_between`), in one statement: one snapshot. In two, a head
    saved again between them was counted by the first and, moved to a rowid
    above what the first saw, missed by the second: read as a deletion."""
    rows = await db.fetchall(
        "SELECT t.n, t.last, t.run_id, t.updated_at, "
        f"h.rowid, h.run_id, {_HEAD_STATUS}, h.updated_at FROM ({_HEAD_TOTALS}) AS t "
        "LEFT JOIN snapshot_heads AS h ON h.rowid > ?1 ORDER BY h.rowid",
        (rowid,),
    )
    count, last, run_id, updated_at = rows[0][:4]
    at = None if run_id is None else (run_id, updated_at)
    return count, last, at, [row[4:] for row in rows if row[4] is not None]


async def heads_between(
    db: Database, after_rowid: int, upto_rowid: int
) -> list[tuple[int, str, str | None, float]]:
    """(rowid, run_id, status, updated_at) of heads saved in (after_rowid, upto_rowid].

    lovia saves a head with INSERT OR REPLACE, which gives the row a new
    rowid above every other, so this range is exactly the saves since then.
    """
    return await db.fetchall(
        f"SELECT rowid, run_id, {_HEAD_STATUS}, updated_at FROM snapshot_heads "
        "WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
        (after_rowid, upto_rowid),
    )


async def newest_heads(
    db: Database, count: int, upto_rowid: int
) -> list[tuple[int, str, float]]:
    """(rowid, run_id, updated_at) of the ``count`` most recently saved heads
    up to ``upto_rowid``, oldest first: a rowid range read backwards."""
    rows = await db.fetchall(
        "SELECT rowid, run_id, updated_at FROM snapshot_heads WHERE rowid <= ? "
        "ORDER BY rowid DESC LIMIT ?",
        (upto_rowid, count),
    )
    return rows[::-1]
