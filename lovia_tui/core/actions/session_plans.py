"""Previews of the session actions rewind and clear (trim's is in
:mod:`~lovia_tui.core.actions.trim_plan`).

The counts apply lovia's ``_rewind_split`` and ``drop_dangling_tool_calls``
to the stored JSON, so they equal what lovia returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lovia_tui.core.actions.plans import (
    Segment,
    active_run,
    calls,
    checkpoint_groups,
    linked_deletions,
    make_plan,
    parse_segments,
    refuse_unsound,
    session_database,
)
from lovia_tui.core.actions.previews import (
    CheckpointDeletion,
    ClearPreview,
    RewindPreview,
    ToolCallRef,
    Truncation,
)
from lovia_tui.core.entries import (
    UnreadableError,
    drop_dangling,
    parse_json,
)
from lovia_tui.core.errors import ActionError
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store import segment_reads
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.rows import Captured, RowGroup, capture
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.turns import calls_that_ran


def _ran(segment: Segment, removed: Iterable[dict[str, Any]]) -> list[ToolCallRef]:
    """The calls among ``removed`` that ran: their effects outlive a rewind."""
    ran = {id(e) for e in calls_that_ran(segment.entries)}
    return calls(segment.run_id, (e for e in removed if id(e) in ran))


def _rewind_split(
    segments: list[Segment], keep_entries: int
) -> tuple[Truncation | None, list[Segment], list[ToolCallRef]]:
    """lovia's ``_rewind_split`` on parsed segments: (truncated, deleted, removed
    calls that ran).

    Whole segments before the cut survive; the one the cut lands in keeps its
    prefix minus calls left dangling, or goes if nothing is left; every later
    segment goes.
    """
    if keep_entries >= sum(len(s.entries) for s in segments):
        return None, [], []
    remaining, cut = keep_entries, 0
    while remaining >= len(segments[cut].entries):
        remaining -= len(segments[cut].entries)
        cut += 1
    segment = segments[cut]
    kept = drop_dangling(segment.entries[:remaining])
    if not kept:
        deleted = segments[cut:]
        return None, deleted, [c for s in deleted for c in _ran(s, s.entries)]
    kept_ids = {id(e) for e in kept}
    truncated = Truncation(
        run_id=segment.run_id,
        kept_entries=len(kept),
        removed_entries=len(segment.entries) - len(kept),
        loses_meta=segment.has_meta,
        dropped_calls=tuple(
            calls(
                segment.run_id,
                (e for e in segment.entries[:remaining] if id(e) not in kept_ids),
            )
        ),
    )
    deleted = segments[cut + 1 :]
    removed = _ran(segment, (e for e in segment.entries if id(e) not in kept_ids))
    return (
        truncated,
        deleted,
        removed + [c for s in deleted for c in _ran(s, s.entries)],
    )


async def cut_session(
    ws: Workspace, session_id: str, keep_entries: int, action: str
) -> tuple[Database, Captured, list[Segment]]:
    """The file, rows and parsed segments of a session about to be cut at
    ``keep_entries`` (a rewind, a fork); refused read-only or for a negative N."""
    refuse_unsound(ws)
    if keep_entries < 0:
        raise ActionError("keep_entries must be >= 0")
    db = await session_database(ws, session_id)
    rows = await capture(db, RowGroup(db.path, "session_runs", session_id))
    return db, rows, parse_segments(rows, action)


async def preview_rewind(
    ws: Workspace,
    session_id: str,
    keep_entries: int,
    *,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> RewindPreview:
    """What ``rewind(session_id, keep_entries=N)`` removes, truncates and deletes.

    "Rewind to here" (keep what comes before entry i) is ``keep_entries=i``;
    :func:`user_turn_start` gives N for "rewind to before this user turn".
    Like lovia web's rewind, a cut inside a chat's in-flight run (whose
    entries follow the stored ones) drops that run's checkpoint and the
    chat's pointer and keeps every stored entry. Raises ActionError while a
    run linked to the session is live, unless forced.
    """
    refuse_unsound(ws)  # before any read: a damaged file is refused, not read
    active = await active_run(ws, session_id)
    found = await ws.find_session(session_id)
    if active is None or (found is not None and found.stores.session):
        db, rows, segments = await cut_session(ws, session_id, keep_entries, "rewind")
        known = [rows]
    else:  # a web chat whose only run is in flight: nothing stored yet
        refuse_unsound(ws)
        if keep_entries < 0:
            raise ActionError("keep_entries must be >= 0")
        db, segments, known = ws.database(active.file), [], []
    total = sum(len(s.entries) for s in segments)
    truncated, deleted, side_effects = _rewind_split(segments, keep_entries)
    removed = sum(len(s.entries) for s in deleted) + (
        truncated.removed_entries if truncated else 0
    )
    in_flight = (
        not removed and active is not None and keep_entries < total + active.entries
    )
    checkpoints: list[CheckpointDeletion] = []
    kept: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    if removed or in_flight:
        changed = {s.run_id for s in deleted} | (
            {truncated.run_id} if truncated else set()
        )
        checkpoints, kept, unknown = await linked_deletions(
            ws, session_id, changed, truncated.run_id if truncated else None,
            force, stale_after, in_flight=in_flight,
        )  # fmt: skip
    cut_row, kept_before = _cut_row(known[0] if known else None, segments, keep_entries)
    return RewindPreview(
        file=db.path,
        session_id=session_id,
        keep_entries=keep_entries,
        total_entries=total,
        entries_removed=removed,
        runs_deleted=tuple(s.run_id for s in deleted),
        truncated=truncated,
        side_effects=tuple(side_effects),
        checkpoints=tuple(checkpoints),
        unknown_live_runs=unknown,
        plan=await make_plan(
            ws,
            [*(c.group for c in known), *checkpoint_groups(checkpoints)],
            force,
            known,
        ),  # fmt: skip
        kept_checkpoints=kept,
        cut_row=cut_row,
        kept_before=kept_before,
    )


def _cut_row(
    rows: Captured | None, segments: list[Segment], keep_entries: int
) -> tuple[int | None, int]:
    """The row of the first segment a cut at ``keep_entries`` changes and
    the entries before it, as lovia's split walks them (None: nothing cut)."""
    before = 0
    for row_id, segment in zip(rows.rowids if rows else (), segments, strict=True):
        if keep_entries < before + len(segment.entries):
            return row_id, before
        before += len(segment.entries)
    return None, 0


async def user_turn_start(ws: Workspace, session_id: str, index: int) -> int:
    """``keep_entries`` for "rewind to before this user turn".

    The flat index of the user message that starts the turn holding entry
    ``index`` (the nearest ``input`` entry with role user at or before it).
    A turn of a web chat's in-flight run (numbered after the stored entries)
    gives the stored total: lovia web's rewind to it keeps every stored entry.
    """
    active = await active_run(ws, session_id)
    db = await ws.find_session(session_id)
    segments = (
        await segment_reads.segments(db, session_id) if db and db.stores.session else []
    )
    if active is not None:
        last = segments[-1] if segments else None
        stored = (
            0
            if last is None
            else None
            if last.first_index is None or last.entry_count is None
            else last.first_index + last.entry_count
        )
        if stored is not None and index >= stored:
            return stored
    db = await session_database(ws, session_id)
    for segment in reversed(segments):
        if segment.first_index is None or segment.first_index > index:
            continue
        try:
            entries = await segment_reads.segment_entries(db, segment)
        except UnreadableError as exc:
            raise ActionError(
                f"segment {segment.run_id} is unreadable ({exc})"
            ) from exc
        for entry in reversed(entries):
            if (
                entry.index is not None
                and entry.index <= index
                and entry.kind == "input"
                and entry.data.get("role") == "user"
            ):
                return entry.index
    raise ActionError(
        f"no user message at or before entry {index} of session {session_id!r}"
    )


def _entry_count(raw: Any) -> int | None:
    try:
        data = parse_json(raw)
    except UnreadableError:
        return None
    return len(data) if isinstance(data, list) else None


async def preview_clear(
    ws: Workspace,
    session_id: str,
    *,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> ClearPreview:
    """``clear(session_id)``: every segment goes, and with them the linked checkpoints.

    Raises ActionError while a run linked to the session is live, unless forced.
    """
    refuse_unsound(ws)
    db = await session_database(ws, session_id)
    rows = await capture(db, RowGroup(db.path, "session_runs", session_id))
    run_ids = tuple(rows.column("run_id"))
    entries_at = rows.columns.index("entries_json")
    counts = [_entry_count(row[entries_at][1]) for row in rows.rows]
    checkpoints, _, unknown = await linked_deletions(
        ws, session_id, set(run_ids), None, force, stale_after
    )
    return ClearPreview(
        file=db.path,
        session_id=session_id,
        segments=len(run_ids),
        entries=None if None in counts else sum(c for c in counts if c is not None),
        run_ids=run_ids,
        checkpoints=tuple(checkpoints),
        unknown_live_runs=unknown,
        plan=await make_plan(
            ws, [rows.group, *checkpoint_groups(checkpoints)], force, [rows]
        ),
    )
