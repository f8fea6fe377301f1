"""Reads of what lovia web keeps about a chat beside its transcript: run
records (``chat_runs``), the chat row's ties and schedules (``chat_schedules``).

A failed or cancelled run may leave no checkpoint and no segment: its
``chat_runs`` row is then all there is of it, and the transcript shows it
between the runs it happened between (:func:`place_records`). Every statement
is an index lookup or bounded by ``LIMIT``: a chat with 10,000 records is read
a page at a time. Columns a lovia web of another version lacks read as NULL.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeVar

from lovia_tui.core.entries import UnreadableError, parse_object
from lovia_tui.core.store.database import Database
from lovia_tui.core.web_models import (
    COUNT_CAP,
    SCHEDULE_SOURCE,
    ChatInfo,
    RunRecord,
    Schedule,
    stored_text,
    stored_time,
)

RECORD_COLUMNS = (
    "id",
    "session_id",
    "agent",
    "source",
    "status",
    "error",
    "started_at",
    "finished_at",
    "usage_json",
)
RECORDS_PER_SPAN = 100
"""Most unsaved records the transcript shows between two loaded segments."""
RECORD_PAGE = 500
"""Records per statement when a chat's records are listed whole (show, export)."""
SCHEDULES = 20
"""Most schedules shown for one chat."""

Placed = TypeVar("Placed")


async def _columns(db: Database, table: str, wanted: Sequence[str]) -> str:
    """``wanted`` as a select list: a column this file's table lacks (written
    by an older lovia web) is read as NULL."""
    present = {row[1] for row in await db.fetchall(f"PRAGMA table_info({table})")}
    return ", ".join(name if name in present else "NULL" for name in wanted)


def record_of(row: Sequence[Any], saved: bool | None = None) -> RunRecord:
    """A ``chat_runs`` row (:data:`RECORD_COLUMNS`) as a record, whatever its cells hold."""
    usage, problem = None, None
    try:
        usage = parse_object(row[8])
    except UnreadableError as exc:
        problem = str(exc)
    return RunRecord(
        run_id=stored_text(row[0]) or "",
        session_id=stored_text(row[1]),
        agent=stored_text(row[2]),
        source=stored_text(row[3]) or "",
        status=stored_text(row[4]) or "?",
        error=stored_text(row[5]),
        started_at=stored_time(row[6]),
        finished_at=stored_time(row[7]),
        usage=usage,
        usage_problem=problem,
        saved=saved,
    )


async def unsaved_records(
    db: Database, session_id: str, after: float | None, until: float | None
) -> tuple[list[RunRecord], bool]:
    """The records of runs of ``session_id`` that left nothing in it (no
    segment, no checkpoint: a checkpoint shows as the run's seam) and started
    after ``after`` and no later than ``until`` (None: no bound), oldest
    first; the newest :data:`RECORDS_PER_SPAN`, and whether there are more.

    Read from lovia's ``(session_id, started_at)`` index; each record's
    segment and checkpoint are key lookups."""
    if not db.stores.chat:
        return [], False
    where: list[str] = ["r.session_id = ?"]
    params: list[Any] = [session_id]
    if after is not None:
        where.append("r.started_at > ?")
        params.append(after)
    if until is not None:
        # A NULL start (a hostile cell) goes before everything, with the oldest span.
        where.append(
            "(r.started_at <= ? OR r.started_at IS NULL)"
            if after is None
            else "r.started_at <= ?"
        )
        params.append(until)
    where.extend(left_nothing(db))
    columns = ", ".join(f"r.{name}" for name in RECORD_COLUMNS)
    rows = await db.fetchall(
        f"SELECT {columns} FROM chat_runs r WHERE {' AND '.join(where)} "
        "ORDER BY r.started_at DESC LIMIT ?",
        (*params, RECORDS_PER_SPAN + 1),
    )
    more = len(rows) > RECORDS_PER_SPAN
    return [
        record_of(row, saved=False) for row in reversed(rows[:RECORDS_PER_SPAN])
    ], more


async def created_from(db: Database, session_id: str, row_id: int) -> float | None:
    """When the session's first segment at or after ``row_id`` was stored
    (None: there is none, or its time is no number)."""
    if not db.stores.session:
        return None
    row = await db.fetchone(
        "SELECT created_at FROM session_runs WHERE session_id = ? AND id >= ? "
        "ORDER BY id LIMIT 1",
        (session_id, row_id),
    )
    return stored_time(row[0]) if row else None


def left_nothing(db: Database) -> list[str]:
    """Conditions on a ``chat_runs r`` row whose run left nothing: no segment
    in its chat, no checkpoint (key lookups in lovia's indexes)."""
    where = []
    if db.stores.session:
        where.append(
            "NOT EXISTS (SELECT 1 FROM session_runs s "
            "WHERE s.session_id = r.session_id AND s.run_id = r.id)"
        )
    if db.stores.checkpoint:
        where.append(
            "NOT EXISTS (SELECT 1 FROM snapshot_heads h WHERE h.run_id = r.id)"
        )
    return where


def place_records(
    created: Sequence[float | None], records: Iterable[RunRecord]
) -> list[list[RunRecord]]:
    """Where each record goes among segments stored at ``created`` (their
    ``created_at``, in order): slot 0 before the first, slot n after the n-th.

    A run record goes after the last segment stored before the run started:
    a chat runs one run at a time, so that is the run it followed."""
    times = [time if time is not None else 0.0 for time in created]
    slots: list[list[RunRecord]] = [[] for _ in range(len(times) + 1)]
    for record in records:
        start = record.started_at  # None (a hostile cell): before everything
        slots[0 if start is None else bisect.bisect_left(times, start)].append(record)
    return slots


async def interleave(
    items: Iterable[Placed],
    created: Callable[[Placed], float | None],
    records: AsyncIterator[RunRecord],
) -> AsyncIterator[Placed | RunRecord]:
    """``items`` (segments, oldest first, stored at ``created(item)``) with
    ``records`` (oldest first) between them, as :func:`place_records` places
    them; one record held at a time."""
    pending = await anext(records, None)
    for item in items:
        when = created(item) or 0.0
        while pending is not None and (
            pending.started_at is None or pending.started_at <= when
        ):
            yield pending
            pending = await anext(records, None)
        yield item
    while pending is not None:
        yield pending
        pending = await anext(records, None)


async def unsaved(records: AsyncIterator[RunRecord]) -> AsyncIterator[RunRecord]:
    """The records whose run left no segment in the chat."""
    async for record in records:
        if not record.saved:
            yield record


async def session_records(db: Database, session_id: str) -> AsyncIterator[RunRecord]:
    """Every record of ``session_id``, oldest first, a page of
    :data:`RECORD_PAGE` per statement (keyset over the session's index), each
    with whether its run is in the chat's transcript."""
    if not db.stores.chat:
        return
    columns = ", ".join(RECORD_COLUMNS)
    # Starts lovia writes are numbers; a NULL one (a hostile cell) comes first, by id.
    pages = [
        (
            "started_at IS NULL AND id > ? ORDER BY id",
            lambda row: (row[0],),
            ("",),
        ),
        (
            "started_at IS NOT NULL AND (started_at, id) > (?, ?) ORDER BY started_at, id",
            lambda row: (row[6], row[0]),
            (float("-inf"), ""),
        ),
    ]
    for condition, key_of, key in pages:
        while True:
            rows = await db.fetchall(
                f"SELECT {columns} FROM chat_runs WHERE session_id = ? AND {condition} LIMIT ?",
                (session_id, *key, RECORD_PAGE),
            )
            if not rows:
                break
            saved = await _saved_runs(db, session_id, [row[0] for row in rows])
            for row in rows:
                yield record_of(row, saved=row[0] in saved)
            if len(rows) < RECORD_PAGE:
                break
            key = key_of(rows[-1])


async def _saved_runs(db: Database, session_id: str, run_ids: list[Any]) -> set[Any]:
    """Which of ``run_ids`` have a segment in ``session_id`` (its unique index)."""
    if not db.stores.session or not run_ids:
        return set()
    rows = await db.fetchall(
        "SELECT run_id FROM session_runs WHERE session_id = ? "
        f"AND run_id IN ({','.join('?' * len(run_ids))})",
        (session_id, *run_ids),
    )
    return {row[0] for row in rows}


async def parent_ids(db: Database, session_ids: Sequence[str]) -> dict[str, str]:
    """The parent chat of each given session that is a subagent task chat."""
    if not db.stores.chat or not session_ids:
        return {}
    parent = await _columns(db, "chat_sessions", ("parent_id",))
    if parent == "NULL":
        return {}
    found: dict[str, str] = {}
    for start in range(0, len(session_ids), 500):
        chunk = tuple(session_ids[start : start + 500])
        rows = await db.fetchall(
            f"SELECT id, parent_id FROM chat_sessions WHERE id IN ({','.join('?' * len(chunk))}) "
            "AND parent_id IS NOT NULL",
            chunk,
        )
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
