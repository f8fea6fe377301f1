"""Performing a previewed action through lovia, journaled so it can be undone.

``perform`` re-reads the rows the preview was computed from and refuses if
they changed, journals them, calls lovia's own store methods (never raw SQL),
and records the rows' fingerprint right after. lovia is imported inside the
functions: it is slow to import and stays off the app's start-up path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia_tui.core.errors import ActionError
from lovia_tui.core.journal import Journal, UndoResult
from lovia_tui.core.plans import capture_groups, refuse_readonly
from lovia_tui.core.previews import (
    CheckpointDeletion,
    ClearPreview,
    DeleteRunsPreview,
    FinalizePreview,
    Preview,
    RewindPreview,
    TrimPreview,
    preview_dict,
)
from lovia_tui.core.rows import combined
from lovia_tui.core.workspace import Workspace


@dataclass(frozen=True)
class ActionResult:
    """What an action did; ``journal_id`` undoes it (None when nothing was done)."""

    action: str
    journal_id: int | None
    counts: dict[str, int]


async def perform(
    ws: Workspace,
    preview: Preview,
    *,
    reason: str | None = None,
    journal: Journal | None = None,
) -> ActionResult:
    """Do what ``preview`` says, or raise ActionError without changing anything.

    Refused in a read-only workspace, and when the rows the preview was
    computed from have changed since (preview again and confirm again).
    """
    refuse_readonly(ws)
    if preview.noop:
        return ActionResult(preview.action, None, {})
    journal = journal or Journal()
    before = await capture_groups(ws, preview.plan.groups)
    if combined(before) != preview.plan.fingerprint:
        raise ActionError(
            f"the rows this {preview.action} touches changed since the preview; "
            "nothing was done: preview it again"
        )
    entry_id = await journal.begin(
        preview.action, preview_dict(preview), reason, before
    )
    try:
        counts = await _PERFORMERS[type(preview)](preview)
    except Exception as exc:
        after = await capture_groups(ws, preview.plan.groups)
        await journal.finish(entry_id, after, {}, error=str(exc) or type(exc).__name__)
        raise ActionError(
            f"{preview.action} failed ({exc}); journal entry {entry_id} holds the rows as they were"
        ) from exc
    await journal.finish(
        entry_id, await capture_groups(ws, preview.plan.groups), counts
    )
    return ActionResult(preview.action, entry_id, counts)


async def undo(
    ws: Workspace, entry_id: int, journal: Journal | None = None
) -> UndoResult:
    """Undo a journaled action on the workspace's files (see :meth:`Journal.undo`)."""
    refuse_readonly(ws)
    return await (journal or Journal()).undo(entry_id, [db.path for db in ws.databases])


def _mismatch(what: str, lovia_said: int, preview_said: int) -> None:
    if lovia_said != preview_said:
        raise ActionError(f"lovia {what} {lovia_said}, the preview said {preview_said}")


async def _chat_store(file: Path) -> Any:
    """lovia's ChatStore on a web UI file (the preview checked it needs no migration)."""
    from lovia.stores.session import SQLiteSession
    from lovia.web.store import ChatStore

    # Its constructor checks the schema with blocking I/O: keep it off the loop.
    return await asyncio.to_thread(
        ChatStore, SQLiteSession(file, wal=True), meta_path=file, wal=True
    )


async def _delete_checkpoints(checkpoints: Iterable[CheckpointDeletion]) -> int:
    """Delete each checkpoint and clear a web chat's pointer to it, as the web UI does."""
    from lovia.stores.checkpointer import SQLiteCheckpointer

    deleted = 0
    for checkpoint in checkpoints:
        await SQLiteCheckpointer(checkpoint.file, wal=True).delete(checkpoint.run_id)
        if checkpoint.web_pointer is not None:
            store = await _chat_store(checkpoint.file)
            await store.clear_active_run_id(
                checkpoint.web_pointer, expected=checkpoint.run_id
            )
        deleted += 1
    return deleted


async def _rewind(preview: RewindPreview) -> dict[str, int]:
    from lovia.stores.session import SQLiteSession

    deleted = await _delete_checkpoints(preview.checkpoints)
    removed = await SQLiteSession(preview.file, wal=True).rewind(
        preview.session_id, keep_entries=preview.keep_entries
    )
    _mismatch("removed", removed, preview.entries_removed)
    return {"entries_removed": removed, "checkpoints_deleted": deleted}


async def _trim(preview: TrimPreview) -> dict[str, int]:
    from lovia.stores.session import SQLiteSession

    trimmed = await SQLiteSession(preview.file, wal=True).trim_tool_results(
        preview.session_id, keep_chars=preview.keep_chars, keep_runs=preview.keep_runs
    )
    _mismatch("trimmed", trimmed, preview.results_trimmed)
    return {"results_trimmed": trimmed, "bytes_reclaimed": preview.bytes_reclaimed}


async def _delete_runs(preview: DeleteRunsPreview) -> dict[str, int]:
    return {"checkpoints_deleted": await _delete_checkpoints(preview.checkpoints)}


async def _finalize(preview: FinalizePreview) -> dict[str, int]:
    """lovia web's Stop: persist the partial run, drop its checkpoint, close its record."""
    from lovia.stores.checkpointer import SQLiteCheckpointer
    from lovia.stores.session import SQLiteSession
    from lovia.transcript import drop_dangling_tool_calls

    checkpoint = preview.checkpoint
    snapshot = await SQLiteCheckpointer(checkpoint.file, wal=True).load(preview.run_id)
    if snapshot is None:
        raise ActionError(f"checkpoint {preview.run_id} disappeared")
    entries = drop_dangling_tool_calls(snapshot.entries)
    appended = 0
    if entries and not preview.already_appended:
        await SQLiteSession(preview.file, wal=True).append(
            preview.session_id,
            entries,
            run_id=preview.run_id,
            meta={"timing": preview.timing} if preview.timing else None,
        )
        appended = len(entries)
        _mismatch("appended", appended, preview.entries_appended)
    deleted = await _delete_checkpoints([checkpoint])
    if preview.web_record is not None:
        from lovia.web.sse import usage_dict

        store = await _chat_store(checkpoint.file)
        usage = snapshot.usage
        await store.finish_run(
            preview.run_id,
            status="cancelled",
            error="cancelled",
            usage=usage_dict(usage, last_input_tokens=snapshot.last_input_tokens)
            if usage.total_tokens
            else None,
        )
    return {"entries_appended": appended, "checkpoints_deleted": deleted}


async def _clear(preview: ClearPreview) -> dict[str, int]:
    from lovia.stores.session import SQLiteSession

    deleted = await _delete_checkpoints(preview.checkpoints)
    await SQLiteSession(preview.file, wal=True).clear(preview.session_id)
    return {"segments_removed": preview.segments, "checkpoints_deleted": deleted}


_PERFORMERS: dict[type, Callable[[Any], Awaitable[dict[str, int]]]] = {
    RewindPreview: _rewind,
    TrimPreview: _trim,
    DeleteRunsPreview: _delete_runs,
    FinalizePreview: _finalize,
    ClearPreview: _clear,
}
