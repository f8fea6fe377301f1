"""Reads of lovia web's own tables (``chat_sessions``, ``chat_runs``) beside the stores.

What lovia web knows that the stores do not: which chats are pinned and when
each was last active (its sidebar's order), and each run's record, which
says whether a head still marked running is live. Index lookups or bounded
statements only, as in :mod:`lovia_tui.core.store.session_reads`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from lovia_tui.core.models import RunInfo
from lovia_tui.core.store.database import Database
from lovia_tui.core.stored import stored_key, stored_time

ORPHAN_HEADS = 5_000
"""Most checkpoint heads looked at for sessions known only from a run record."""


def _real(value: Any) -> float:
    """A stored time as lovia web writes it; anything else (a hostile cell) is 0."""
    return stored_time(value) or 0.0


async def checkpoint_only_sessions(db: Database, limit: int) -> dict[str, float]:
    """Sessions of a web file known only from a checkpoint's run record: no
    segment, no chat row (its first run never finished). Looks at the newest
    ``ORPHAN_HEADS`` checkpoint heads: lovia web keeps heads only for
    unfinished runs, so that is all of them but on a file it did not write."""
    if not (db.stores.chat and db.stores.checkpoint):
        return {}
    rows = await db.fetchall(
        "SELECT r.session_id, MAX(h.updated_at) FROM (SELECT run_id, updated_at "
        f"FROM snapshot_heads ORDER BY rowid DESC LIMIT {ORPHAN_HEADS}) h "
        "JOIN chat_runs r ON r.id = h.run_id WHERE r.session_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM chat_sessions c WHERE c.id = r.session_id) "
        + (
            "AND NOT EXISTS (SELECT 1 FROM session_runs s WHERE s.session_id = r.session_id) "
            if db.stores.session
            else ""
        )
        + "GROUP BY r.session_id ORDER BY 2 DESC LIMIT ?",
        (limit,),
    )
    return {stored_key(sid): _real(updated) for sid, updated in rows}


async def web_chats(db: Database, limit: int) -> dict[str, tuple[float, bool]]:
    """The web UI's first ``limit`` chats in its own order (pinned, then
    ``updated_at``), by id: (updated_at, pinned). Read from lovia's
    ``(pinned, updated_at)`` index, so a chat with no segment yet is listed too."""
    if not db.stores.chat:
        return {}
    rows = await _chat_rows(
        db, "ORDER BY {pinned} DESC, updated_at DESC LIMIT ?", (limit,)
    )
    return {
        stored_key(sid): _chat_rank(updated, pinned) for sid, updated, pinned in rows
    }


async def web_chat_rows(
    db: Database, session_ids: list[str]
) -> dict[str, tuple[float, bool]]:
    """(updated_at, pinned) of the given sessions that are web chats."""
    found: dict[str, tuple[float, bool]] = {}
    for start in range(0, len(session_ids) if db.stores.chat else 0, 500):
        chunk = tuple(session_ids[start : start + 500])
        rows = await _chat_rows(
            db, f"WHERE id IN ({','.join('?' * len(chunk))})", chunk
        )
        found.update(
            (stored_key(sid), _chat_rank(updated, pinned))
            for sid, updated, pinned in rows
        )
    return found


def _chat_rank(updated: Any, pinned: Any) -> tuple[float, bool]:
    """(updated_at, pinned) as lovia web writes them; a hostile cell ranks last, unpinned."""
    return _real(updated), _real(pinned) != 0


async def _chat_rows(db: Database, tail: str, params: tuple[Any, ...]) -> list[Any]:
    """(id, updated_at, pinned) of chat rows; ``pinned`` is 0 in a file from a
    lovia web older than pins (its chat table has no such column)."""
    sql = "SELECT id, updated_at, {pinned} FROM chat_sessions " + tail
    try:
        return await db.fetchall(sql.format(pinned="pinned"), params)
    except sqlite3.OperationalError as exc:
        if "no such column" not in str(exc):
            raise
        return await db.fetchall(sql.format(pinned="0"), params)


async def with_web_records(db: Database, found: list[RunInfo]) -> list[RunInfo]:
    """The runs with lovia web's record of each (``chat_runs.status``, by its
    primary key, 500 a statement), which says whether a running head is live."""
    if not db.stores.chat or not found:
        return found
    statuses: dict[str, Any] = {}
    for start in range(0, len(found), 500):
        chunk = tuple(run.run_id for run in found[start : start + 500])
        rows = await db.fetchall(
            f"SELECT id, status FROM chat_runs WHERE id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        statuses.update((stored_key(run_id), status) for run_id, status in rows)
    return [
        replace(run, web_status=status)
        if isinstance(status := statuses.get(run.run_id), str)
        else run
        for run in found
    ]
