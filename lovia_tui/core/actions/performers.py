"""What each previewed action asks of lovia, on the stores of its held files.

One coroutine per preview type (:data:`PERFORMERS`), run by
:mod:`~lovia_tui.core.actions.perform` inside the write lock, after the rows
were checked against the journal: lovia's own store methods, never raw SQL.
Each returns its counts, which ``perform`` compares with the preview's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia_tui.core.actions.previews import (
    CheckpointDeletion,
    ClearPreview,
    DeleteRunsPreview,
    FinalizePreview,
    RewindPreview,
    TrimPreview,
)
from lovia_tui.core.errors import ActionError

if TYPE_CHECKING:
    from lovia_tui.core.actions.locked_stores import Stores
    from lovia_tui.core.actions.lovia_served import Prepared


async def _delete_checkpoints(
    stores: Stores, checkpoints: Iterable[CheckpointDeletion]
) -> int:
    """Delete each checkpoint and clear a web chat's pointer to it, as the web UI does."""
    deleted = 0
    for checkpoint in checkpoints:
        await stores.checkpointer(checkpoint.file).delete(checkpoint.run_id)
        if checkpoint.web_pointer is not None:
            await stores.chat(checkpoint.file).clear_active_run_id(
                checkpoint.web_pointer, expected=checkpoint.run_id
            )
        deleted += 1
    return deleted


async def _rewind(
    preview: RewindPreview, stores: Stores, prepared: Prepared | None
) -> dict[str, int]:
    """lovia web's rewind: the chat's checkpoints first, then the cut (none when
    it falls inside the in-flight run: every stored entry stays)."""
    deleted = await _delete_checkpoints(stores, preview.checkpoints)
    removed = 0
    session = stores.session(preview.file)
    if preview.cut_row is not None:  # the rows were checked against the preview's
        removed = await session.rewind_from(
            preview.session_id, keep_entries=preview.keep_entries,
            row_id=preview.cut_row, before=preview.kept_before, prepared=prepared,
        )  # fmt: skip
    elif preview.keep_entries < preview.total_entries:
        removed = await session.rewind(
            preview.session_id, keep_entries=preview.keep_entries
        )
    return {"entries_removed": removed, "checkpoints_deleted": deleted}


async def _trim(
    preview: TrimPreview, stores: Stores, prepared: Prepared | None
) -> dict[str, int]:
    trimmed = await stores.session(preview.file).trim(
        preview.session_id,
        keep_chars=preview.keep_chars,
        keep_runs=preview.keep_runs,
        prepared=prepared,
    )
    return {"results_trimmed": trimmed, "bytes_reclaimed": preview.bytes_reclaimed}


async def _delete_runs(
    preview: DeleteRunsPreview, stores: Stores, _: Prepared | None
) -> dict[str, int]:
    return {
        "checkpoints_deleted": await _delete_checkpoints(stores, preview.checkpoints)
    }


async def _finalize(
    preview: FinalizePreview, stores: Stores, _: Prepared | None
) -> dict[str, int]:
    """lovia web's Stop, or storing the partial run: append what the preview
    chose of the checkpoint, drop it, close the web record when it says so."""
    from lovia.transcript import InputEntry, drop_dangling_tool_calls, entry_to_dict

    from lovia_tui.core.lovia_private import usage_dict
    from lovia_tui.core.turns import whole_turns

    checkpoint = preview.checkpoint
    snapshot = await stores.checkpointer(checkpoint.file).load(preview.run_id)
    if snapshot is None:
        raise ActionError(f"checkpoint {preview.run_id} disappeared")
    chosen = list(snapshot.entries)
    if preview.mode == "stop":  # whole turns of a live run; nothing of a stranded one
        own = [
            e for e in chosen if not (isinstance(e, InputEntry) and e.role == "system")
        ]
        whole = whole_turns([entry_to_dict(e) for e in chosen])
        chosen = own[:whole] if preview.live else []
    entries = drop_dangling_tool_calls(chosen)
    appended = 0
    if entries and not preview.already_appended:
        await stores.session(preview.file).append(
            preview.session_id,
            entries,
            run_id=preview.run_id,
            meta={"timing": preview.timing} if preview.timing else None,
        )
        appended = len(entries)
    deleted = await _delete_checkpoints(stores, [checkpoint])
    if preview.web_record_after == "interrupted":  # lovia web's start-up sweep
        await _sweep_record(stores, checkpoint.file, preview.run_id)
    elif preview.web_record_after is not None:
        usage = snapshot.usage
        await stores.chat(checkpoint.file).finish_run(
            preview.run_id,
            status=preview.web_record_after,
            error="cancelled",
            usage=usage_dict(usage, last_input_tokens=snapshot.last_input_tokens)
            if usage.total_tokens
            else None,
        )
    return {"entries_appended": appended, "checkpoints_deleted": deleted}


async def _sweep_record(stores: Stores, file: Path, run_id: str) -> None:
    """``ChatStore.sweep_stale_runs`` for this one record: status and finish
    time change, its error and usage stay (read back to keep them)."""
    error, usage = (
        stores.connection(file)
        .execute("SELECT error, usage_json FROM chat_runs WHERE id = ?", (run_id,))
        .fetchone()
    )
    await stores.chat(file).finish_run(
        run_id,
        status="interrupted",
        error=error,
        usage=None if usage is None else json.loads(usage),
    )


async def _clear(
    preview: ClearPreview, stores: Stores, _: Prepared | None
) -> dict[str, int]:
    deleted = await _delete_checkpoints(stores, preview.checkpoints)
    await stores.session(preview.file).clear(preview.session_id)
    # segments_removed is counted from the rows themselves (see _act_locked).
    return {"segments_removed": 0, "checkpoints_deleted": deleted}


PERFORMERS: dict[
    type,
    Callable[[Any, Stores, Prepared | None], Coroutine[Any, Any, dict[str, int]]],
] = {
    RewindPreview: _rewind,
    TrimPreview: _trim,
    DeleteRunsPreview: _delete_runs,
    FinalizePreview: _finalize,
    ClearPreview: _clear,
}
