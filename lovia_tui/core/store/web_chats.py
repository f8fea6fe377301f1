"""Reads of what lovia web keeps about a chat itself: whose subagent task it
is (``parent_id``), where it was forked from (``origin_*``), its task chats
and the schedules that fire into it (``chat_schedules``).

Index lookups or statements bounded by ``LIMIT``; counts stop at
:data:`~lovia_tui.core.web_models.COUNT_CAP`. Columns a lovia web of another
version lacks read as NULL.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lovia_tui.core.store.database import Database
from lovia_tui.core.store.table_shape import folded
from lovia_tui.core.store.web_records import RECORD_COLUMNS, record_of
from lovia_tui.core.web_models import (
    COUNT_CAP,
    SCHEDULE_SOURCE,
    ChatInfo,
    Schedule,
    stored_text,
    stored_time,
)

SCHEDULES = 20
"""Most schedules shown for one chat."""


async def _columns(db: Database, table: str, wanted: Sequence[str]) -> str:
    """``wanted`` as a select list: a column this file's table lacks (written
    by an older lovia web) is read as NULL."""
    present = {
        folded(row[1]) for row in await db.fetchall(f"PRAGMA table_info({table})")
    }
    return ", ".join(name if name in present else "NULL" for name in wanted)


async def parent_ids(db: Database, session_ids: Sequence[str]) -> dict[str, str]:
    """The parent chat of each given session that is a subagent task chat."""
    if not db.stores.chat or not session_ids:
        return {}
    found: dict[str, str] = {}
    for start in range(0, len(session_ids), 500):
        chunk = tuple(session_ids[start : start + 500])
        try:
            rows = await db.fetchall(
                "SELECT id, parent_id FROM chat_sessions "
                f"WHERE id IN ({','.join('?' * len(chunk))}) AND parent_id IS NOT NULL",
                chunk,
            )
        except sqlite3.OperationalError as exc:
            if "no such column" not in str(exc):
                raise
            return {}  # a lovia web older than subagent tasks
        found.update(
            (sid, text)
            for sid, value in rows
            if isinstance(sid, str) and (text := stored_text(value))
        )
    return found


async def _count(db: Database, sql: str, params: tuple[Any, ...]) -> int:
    """Rows of ``sql``, counted up to :data:`COUNT_CAP`."""
    row = await db.fetchrow(f"SELECT COUNT(*) FROM ({sql} LIMIT {COUNT_CAP})", params)
    return int(row[0])


async def chat_info(db: Database, session_id: str) -> ChatInfo | None:
    """The chat row of ``session_id`` with its parent's title, its tasks and
    its schedules; None when lovia web has no row for it."""
    if not db.stores.chat:
        return None
    columns = await _columns(
        db,
        "chat_sessions",
        (
            "title",
            "agent",
            "created_at",
            "parent_id",
            "origin_kind",
            "origin_session_id",
            "origin_ref",
        ),
    )
    row = await db.fetchone(
        f"SELECT {columns} FROM chat_sessions WHERE id = ?", (session_id,)
    )
    if row is None:
        return None
    parent_id = stored_text(row[3])
    parent_title = None
    if parent_id is not None:
        found = await db.fetchone(
            "SELECT title FROM chat_sessions WHERE id = ?", (parent_id,)
        )
        parent_title = stored_text(found[0]) if found else None
    tasks = (
        await _count(
            db, "SELECT 1 FROM chat_sessions WHERE parent_id = ?", (session_id,)
        )
        if "parent_id" in columns
        else 0
    )
    return ChatInfo(
        session_id=session_id,
        title=stored_text(row[0]),
        agent=stored_text(row[1]),
        created_at=stored_time(row[2]),
        parent_id=parent_id,
        parent_title=parent_title,
        origin_kind=stored_text(row[4]),
        origin_session_id=stored_text(row[5]),
        origin_ref=stored_text(row[6]),
        tasks=tasks,
        schedules=tuple(await schedules_of(db, session_id)),
    )


SCHEDULE_COLUMNS = (
    "id",
    "agent",
    "input",
    "session_id",
    "trigger_kind",
    "trigger_expr",
    "next_fire",
    "active",
    "fire_count",
    "max_fires",
    "until",
    "expires_at",
    "finished_reason",
    "last_session_id",
)


async def schedules_of(db: Database, session_id: str) -> list[Schedule]:
    """The schedules that fire into ``session_id`` (bound to it, or whose last
    fire made it, or that started its first run), each with its run count and
    last run: lovia web keys a schedule's history by ``source = schedule:<id>``."""
    if not db.stores.chat:
        return []
    first = await db.fetchone(
        "SELECT source FROM chat_runs WHERE session_id = ? ORDER BY started_at LIMIT 1",
        (session_id,),
    )
    source = stored_text(first[0]) if first else None
    fired_by = (
        source[len(SCHEDULE_SOURCE) :]
        if source and source.startswith(SCHEDULE_SOURCE)
        else None
    )
    columns = await _columns(db, "chat_schedules", SCHEDULE_COLUMNS)
    rows = await db.fetchall(
        f"SELECT {columns} FROM chat_schedules "
        "WHERE session_id = ? OR last_session_id = ? OR id = ? LIMIT ?",
        (session_id, session_id, fired_by, SCHEDULES),
    )
    schedules = []
    for row in rows:
        schedule_id = stored_text(row[0]) or ""
        run_source = f"{SCHEDULE_SOURCE}{schedule_id}"
        last = await db.fetchone(
            f"SELECT {', '.join(RECORD_COLUMNS)} FROM chat_runs WHERE source = ? "
            "ORDER BY started_at DESC LIMIT 1",
            (run_source,),
        )
        schedules.append(
            Schedule(
                schedule_id=schedule_id,
                agent=stored_text(row[1]),
                input=stored_text(row[2]),
                session_id=stored_text(row[3]),
                trigger_kind=stored_text(row[4]),
                trigger_expr=stored_text(row[5]),
                next_fire=stored_time(row[6]),
                active=bool(stored_time(row[7])),
                fire_count=_whole(row[8]),
                max_fires=_whole(row[9]),
                until=stored_text(row[10]),
                expires_at=stored_time(row[11]),
                finished_reason=stored_text(row[12]),
                last_session_id=stored_text(row[13]),
                runs=await _count(
                    db, "SELECT 1 FROM chat_runs WHERE source = ?", (run_source,)
                ),
                last_run=record_of(last) if last else None,
            )
        )
    return schedules


def _whole(value: Any) -> int | None:
    """A stored count, else None (a hostile cell: text, infinity)."""
    number = stored_time(value)
    return int(number) if number is not None and math.isfinite(number) else None


Key = TypeVar("Key")


def under_parents(
    order: list[Key], parent_of: Callable[[Key], Key | None]
) -> list[Key]:
    """``order`` with each subagent task chat moved right under its parent
    chat, when that is listed (as lovia web groups tasks under their chat);
    tasks keep their order among themselves, a parent cycle its first one."""
    listed = set(order)
    children: dict[Key, list[Key]] = {}
    for key in order:
        parent = parent_of(key)
        if parent is not None and _parented(key, parent_of, listed):
            children.setdefault(parent, []).append(key)
    placed: list[Key] = []
    seen: set[Key] = set()
    for root in order:
        stack = [root]
        while stack:
            key = stack.pop()
            if key in seen or (key is root and _parented(key, parent_of, listed)):
                continue
            seen.add(key)
            placed.append(key)
            stack.extend(reversed(children.get(key, [])))
    # Keys only reachable through a cycle of parents keep their place at the end.
    placed.extend(key for key in order if key not in seen)
    return placed


def _parented(
    key: Key, parent_of: Callable[[Key], Key | None], listed: set[Key]
) -> bool:
    parent = parent_of(key)
    return parent is not None and parent in listed and parent != key
