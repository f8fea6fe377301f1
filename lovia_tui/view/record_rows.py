"""lovia web's side of a chat in the transcript: its chat lines at the start
(whose task it is, where it was forked from, its schedules), and the records
of runs that left no entries, between the runs they happened between.

A record goes after the last segment stored before its run started (see
:func:`~lovia_tui.core.store.web_records.place_records`), so it belongs to
that segment's batch and comes and goes with it as the transcript pages.
"""

from __future__ import annotations

from lovia_tui.core.models import SegmentInfo
from lovia_tui.core.store import web_chats, web_records
from lovia_tui.core.store.database import Database
from lovia_tui.core.web_models import chat_lines
from lovia_tui.view.kinds import RowKind
from lovia_tui.view.rows import Row

MORE_RECORDS = (
    "⋯ older records of runs that saved nothing here are not shown: "
    "lovia-tui show lists them all"
)


async def chat_rows(db: Database, session_id: str) -> list[Row]:
    """The chat's lines from lovia web (none for a plain chat or another store)."""
    info = await web_chats.chat_info(db, session_id)
    return [
        Row(RowKind.CHAT, f"{RowKind.CHAT}:{db.path}:{n}", note=line)
        for n, line in enumerate(chat_lines(info) if info else [])
    ]


async def with_records(
    db: Database,
    session_id: str,
    rows: list[Row],
    batch: list[SegmentInfo],
    *,
    at_start: bool,
    next_id: int | None,
) -> list[Row]:
    """``rows`` (a batch of segments, its headers in ``batch`` order, each
    noting what its run's record adds: :meth:`RunRecord.segment_note`) with
    the records that go
    after its segments, up to the next segment, at or
    after row id ``next_id`` (None: the batch is the newest), and before its
    first segment when it is the session's start (``at_start``), with the
    chat's lines first."""
    after = None if at_start or not batch else batch[0].created_at
    until = (
        None
        if next_id is None
        else await web_records.created_from(db, session_id, next_id)
    )
    records, more = await web_records.unsaved_records(db, session_id, after, until)
    head = await chat_rows(db, session_id) if at_start else []
    notes = await web_records.run_notes(
        db, session_id, [segment.run_id for segment in batch]
    )
    for row in rows:
        if row.kind == RowKind.SEGMENT and row.segment is not None:
            row.note = notes.get(row.segment.run_id, "")
    if not records:
        return head + rows
    slots = web_records.place_records([s.created_at for s in batch], records)
    placed = [
        [
            Row(RowKind.RECORD, f"{RowKind.RECORD}:{db.path}:{r.run_id}", record=r)
            for r in slot
        ]
        for slot in slots
    ]
    if more:
        first = next(slot for slot in placed if slot)
        first.insert(
            0,
            Row(RowKind.RECORD, f"{RowKind.RECORD}:{db.path}:more", note=MORE_RECORDS),
        )
    merged, headers = [*head, *placed[0]], 0
    for row in rows:
        if row.kind == RowKind.SEGMENT and headers:
            merged.extend(placed[headers])
        headers += row.kind == RowKind.SEGMENT
        merged.append(row)
    merged.extend(placed[headers] if headers else [])
    return merged
