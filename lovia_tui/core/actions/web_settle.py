"""A resume or replay of a lovia web chat keeps lovia web's records as its server does.

When lovia web reconnects to a run it flips the run's record back to
``running`` (``ChatStore.start_run``); when the run ends it settles the record
(``finish_run``) and, on success, clears the chat's pointer
(``clear_active_run_id``) and lets lovia delete the checkpoint
(``delete_on_success=True``). Doing the same here means no record is left for
the doctor to report afterwards.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from lovia_tui.core.actions.plans import require_current_chat
from lovia_tui.core.errors import ActionError
from lovia_tui.core.models import RunInfo
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.store.workspace import Workspace

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


async def settled_chat(
    ws: Workspace, run: RunInfo, session_id: str | None, problems: list[str]
) -> str | None:
    """The lovia web chat a run continues in, whose records its end settles: its
    session, when the run's own file (lovia web's one file) has that chat's row
    or the run's record. A file lovia's ChatStore would migrate to settle it is
    a problem for the preflight (open it with lovia web first)."""
    db = ws.database(run.file)
    if session_id is None or not db.stores.chat:
        return None
    row = await db.fetchone(
        "SELECT 1 FROM chat_sessions WHERE id = ?1 UNION ALL "
        "SELECT 1 FROM chat_runs WHERE id = ?2 AND session_id = ?1 LIMIT 1",
        (session_id, run.run_id),
    )
    if row is None:
        return None
    try:
        await require_current_chat(db)
    except ActionError as exc:
        problems.append(str(exc))
    return session_id


def afterwards(
    web_chat: str | None, delete_on_success: bool, session_id: str | None
) -> list[str]:
    """What the run leaves behind once it ends, in words for the preflight."""
    if web_chat is not None:
        left = [
            "on success lovia deletes the checkpoint once the run is stored, as lovia web does",
            f"lovia web's records of chat {web_chat!r} are settled as its server settles them: "
            "the run record gets the final status; on success the chat's pointer is cleared",
        ]
    elif delete_on_success:
        left = ["on success lovia deletes the checkpoint once the run is stored"]
    elif session_id:
        left = [
            f"the completed checkpoint is kept beside its segment in session {session_id!r}: "
            "doctor reports it as a leftover until it is deleted (delete-run); "
            "--delete-on-success deletes it"
        ]
    else:
        left = ["the completed checkpoint is kept: it is the only copy of the run"]
    return [*left, UNDONE]


UNDONE = (
    "journaled: undo takes out what the run adds and puts back its checkpoint"
    " and records as they are now; not what its tool calls do"
)
"""How a resume or replay is undone (core.runs.run_journal)."""


async def chat_store(file: Path) -> Any:
    """lovia web's ChatStore on its one file; check it is current first
    (:func:`~lovia_tui.core.actions.plans.require_current_chat`): it would migrate it."""
    from lovia.stores.session import SQLiteSession
    from lovia.web.store import ChatStore

    # Its constructor checks the schema with blocking I/O: keep it off the loop.
    return await asyncio.to_thread(
        ChatStore, SQLiteSession(file, wal=True), meta_path=file, wal=True
    )


async def reopen_record(file: Path, run: RunInfo, chat: str) -> None:
    """The run's record says ``running`` again while it runs, as after lovia web's reconnect."""
    if run.web_status is None:
        return  # lovia web never recorded this run: no record is created for it
    from lovia.web.store import RunRow

    store = await chat_store(file)
    await store.start_run(
        RunRow(
            run.run_id,
            chat,
            run.agent_name,
            "user",
            "running",
            None,
            run.started_at or time.time(),
            None,
            None,
        )  # fmt: skip
    )


async def settle_records(
    file: Path,
    run: RunInfo,
    chat: str,
    status: str,
    spent: tuple[dict[str, Any], int | float | None],
    error: str | None,
) -> str:
    """Settle the chat's records for a run that ended ``status``, with what it
    ``spent`` (lovia's usage counts, the last call's input tokens) in lovia
    web's own shape (``usage_dict``); says what was done."""
    from lovia.messages import Usage

    from lovia_tui.core.lovia_private import usage_dict

    store = await chat_store(file)
    done = []
    if run.web_status is not None and status in ("completed", "interrupted", "failed"):
        usage, last_input = spent
        counts = Usage(**{k: int(usage.get(k) or 0) for k in _USAGE_FIELDS})
        await store.finish_run(
            run.run_id,
            status=status,
            error=None if status == RunStatus.COMPLETED else error or status,
            usage=usage_dict(
                counts,
                last_input_tokens=None if last_input is None else int(last_input),
            )
            if counts.total_tokens
            else None,
        )
        done.append(f"its run record is now {status}")
    if status == RunStatus.COMPLETED:
        await store.clear_active_run_id(chat, expected=run.run_id)
        done.append(f"chat {chat!r} no longer points at it")
    return "lovia web's records: " + ("; ".join(done) or "nothing to settle")
