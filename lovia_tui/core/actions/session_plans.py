"""Previews of the session actions: rewind, trim, clear.

The counts apply lovia's ``_rewind_split``, ``_trim_entries`` and
``drop_dangling_tool_calls`` to the stored JSON, so they equal what lovia
returns. lovia itself is imported only for its result digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from lovia_tui.core.actions.offloads import offloaded, result_digest_of
from lovia_tui.core.actions.plans import (
    Segment,
    active_run,
    calls,
    checkpoint_groups,
    linked_deletions,
    make_plan,
    meta_of,
    parse_segments,
    refuse_live_session,
    refuse_unsound,
    session_database,
    stored_values,
    unreadable,
)
from lovia_tui.core.actions.previews import (
    CheckpointDeletion,
    ClearPreview,
    RewindPreview,
    ToolCallRef,
    TrimCut,
    TrimPreview,
    TrimRun,
    Truncation,
)
from lovia_tui.core.entries import (
    UnreadableError,
    drop_dangling,
    known_only,
    output_text,
    parse_json,
    trimmed_output,
)
from lovia_tui.core.errors import ActionError
from lovia_tui.core.huge_text import dumped_bytes
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store import segment_reads
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.entry_stream import read_entries
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


async def preview_trim(
    ws: Workspace,
    session_id: str,
    keep_chars: int = 400,
    keep_runs: int = 1,
    *,
    force: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> TrimPreview:
    """Which stored tool results ``trim_tool_results`` cuts, and what is lost for good.

    A cut output is recoverable only if the context policy offloaded it (an
    offload record with its digest in a segment's carried context state) to
    a result store; the rest of its text is gone once trimmed. A segment is
    read as :func:`read_entries` reads it (a large one streamed, a huge
    output left stored): a first pass finds the results cut, a second, if
    any are, names their tools and weighs the segments after the cut.
    """
    refuse_unsound(ws)
    if keep_chars < 0 or keep_runs < 0:
        raise ActionError("keep_chars and keep_runs must be >= 0")
    db = await session_database(ws, session_id)
    await refuse_live_session(ws, session_id, force, stale_after, "trimming")
    rows = await capture(db, RowGroup(db.path, "session_runs", session_id))
    segments = [
        (run_id, _readable(rows, run_id, raw), meta_of(meta), raw)
        for run_id, raw, meta in stored_values(rows)
    ]
    kept = max(0, len(segments) - keep_runs)
    cut_ids = {
        str(entry.get("call_id"))
        for _, entries, _, _ in segments[:kept]
        for entry in entries
        if trimmed_output(entry, keep_chars) is not None
    }
    for _, entries, _, _ in segments[kept:]:
        for _ in entries:  # read whole, as every preview reads every segment
            pass
    archived = offloaded(meta for _, _, meta, _ in segments)
    names: dict[str, str] = {}
    cuts, runs = [], []
    for run_id, entries, _, raw in segments[:kept] if cut_ids else ():
        count, after = 0, 2
        for position, entry in enumerate(entries):
            call_id = str(entry.get("call_id"))
            if entry.get("type") == "tool_call" and call_id in cut_ids:
                names[call_id] = str(entry.get("name", "?"))
            output = trimmed_output(entry, keep_chars)
            if output is not None:
                old = output_text(entry)
                count += 1
                cuts.append(
                    TrimCut(
                        run_id=run_id,
                        call_id=call_id,
                        tool=names.get(call_id, "?"),
                        old_chars=len(old),
                        new_chars=len(output),
                        archived=(call_id, result_digest_of(old)) in archived,
                        drops_parts=entry.get("parts") is not None,
                    )
                )
                # The shape lovia's entry_to_dict gives the new ToolResultEntry.
                entry = {
                    "type": "tool_result",
                    "call_id": entry.get("call_id"),
                    "output": output,
                    "is_error": entry.get("is_error", False),
                    "raw": None,
                }
            after += dumped_bytes(entry) + (2 if position else 0)  # ", " between
        if count:
            runs.append(TrimRun(run_id, count, len(bytes(raw)), after))
    return TrimPreview(
        file=db.path,
        session_id=session_id,
        keep_chars=keep_chars,
        keep_runs=keep_runs,
        results_trimmed=len(cuts),
        bytes_reclaimed=sum(r.bytes_reclaimed for r in runs),
        lost_for_good=sum(1 for c in cuts if not c.archived),
        cuts=tuple(cuts),
        runs=tuple(runs),
        plan=await make_plan(ws, [rows.group], False, [rows]),
    )


def _readable(rows: Captured, run_id: str, raw: Any) -> Iterable[dict[str, Any]]:
    """:func:`read_entries`, refused as :func:`parse_segments` refuses (a large
    segment's refusal comes as it is read)."""
    try:
        entries = read_entries(raw)
        if isinstance(entries, list):
            entries = list(known_only(entries))
    except UnreadableError as exc:
        raise unreadable(rows, run_id, "trim", exc) from exc
    if isinstance(entries, list):
        return entries

    class Refused:
        def __iter__(self) -> Iterator[dict[str, Any]]:
            try:
                yield from known_only(entries)
            except UnreadableError as exc:
                raise unreadable(rows, run_id, "trim", exc) from exc

    return Refused()


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
