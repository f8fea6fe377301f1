"""Reads of lovia web's run records (``chat_runs``) beside a chat's transcript
(the chat's own ties and schedules: :mod:`~lovia_tui.core.store.web_chats`).

A failed or cancelled run may leave no checkpoint and no segment: its
``chat_runs`` row is then all there is of it, and the transcript shows it
between the runs it happened between (:func:`place_records`). Every statement
is an index lookup or bounded by ``LIMIT``: a chat with 10,000 records is read
a page at a time.
"""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeVar

from lovia_tui.core.entries import UnreadableError, parse_object
from lovia_tui.core.store.database import Database
from lovia_tui.core.web_models import (
    RunRecord,
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

Placed = TypeVar("Placed")


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


async def run_notes(
    db: Database, session_id: str, run_ids: Sequence[str]
) -> dict[str, str]:
    """What the records of these runs of the chat add to their segments
    (:meth:`RunRecord.segment_note`), where they add anything: by primary
    key, 500 a statement (a fork's runs keep their ids but their records stay
    with the source chat, so they are not claimed)."""
    columns = ", ".join(RECORD_COLUMNS)
    notes: dict[str, str] = {}
    for start in range(0, len(run_ids) if db.stores.chat else 0, 500):
        chunk = tuple(run_ids[start : start + 500])
        rows = await db.fetchall(
            f"SELECT {columns} FROM chat_runs WHERE id IN ({','.join('?' * len(chunk))}) "
            "AND session_id = ?",
            (*chunk, session_id),
        )
        for row in rows:
            if isinstance(row[0], str) and (note := record_of(row).segment_note()):
                notes[row[0]] = note
    return notes


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


async def unsaved(
    db: Database, records: AsyncIterator[RunRecord]
) -> AsyncIterator[RunRecord]:
    """The records whose run left nothing in the chat: no segment, and no
    checkpoint (a run behind the seam is shown there, with what it saved)."""
    async for record in records:
        if not record.saved and not (
            db.stores.checkpoint
            and await db.fetchone(
                "SELECT 1 FROM snapshot_heads WHERE run_id = ?", (record.run_id,)
            )
        ):
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
