"""lovia's web UI bookkeeping around a run, replayed for the demo's single-file layout.

Mirrors ``lovia.web.supervisor.RunController``: chat row, active-run pointer
and ``chat_runs`` record before the run; pointer cleared and record finalized
after it, with the status lovia gave the checkpoint.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

from lovia import CheckpointOptions, Runner, events
from lovia.messages import AssistantTurn
from lovia.web.store import ChatStore, RunRow

from lovia_tui.core.lovia_private import usage_dict

from .agent import ASSISTANT, make_agent


async def chat(
    store: ChatStore, sid: str, title: str, turns: Sequence[tuple[Any, ...]]
) -> None:
    """A completed chat: one web-UI run (one session segment) per turn."""
    for prompt, script, *researcher in turns:
        await web_run(store, sid, prompt, script, *researcher, title=title)


async def open_record(
    store: ChatStore,
    sid: str,
    run_id: str,
    title: str | None = None,
    source: str = "user",
) -> None:
    """What the web UI writes before a run starts: chat row, active pointer, run record."""
    await store.upsert(sid, agent=ASSISTANT, title=title)
    await store.set_active_run_id(sid, run_id)
    await store.start_run(
        RunRow(run_id, sid, ASSISTANT, source, "running", None, time.time(), None, None)
    )


async def web_run(
    store: ChatStore,
    sid: str,
    prompt: str,
    script: Sequence[AssistantTurn],
    researcher: Sequence[AssistantTurn] = (),
    *,
    run_id: str | None = None,
    title: str | None = None,
    max_turns: int = 50,
    lose_append: bool = False,
    finished: asyncio.Queue[str] | None = None,
    source: str = "user",
) -> None:
    """Run one chat message as lovia's web UI does, and settle its records the same way.

    ``lose_append`` drops the session so the run completes in its checkpoint
    only, and leaves the records as a process dying right then would.
    ``finished`` receives the id of each tool call as it completes; ``source``
    is what started the run, as lovia web records it (``schedule:<id>``, …).
    """
    run_id = run_id or uuid.uuid4().hex
    await open_record(store, sid, run_id, title, source)
    assert store.checkpointer is not None
    handle = Runner.stream(
        make_agent(script, researcher),
        prompt,
        session=None if lose_append else store.session,
        session_id=None if lose_append else sid,
        checkpoint=CheckpointOptions(
            store.checkpointer, run_id, delete_on_success=not lose_append
        ),
        max_turns=max_turns,
    )
    try:
        async for event in handle:
            if finished is not None and isinstance(event, events.ToolCallCompleted):
                finished.put_nowait(event.call.id)
        result = await handle.result()
    except BaseException as exc:
        await _settle_unfinished(store, sid, run_id, exc)
        raise
    if not lose_append:
        await store.clear_active_run_id(sid, expected=run_id)
        await store.finish_run(
            run_id, status="completed", usage=usage_dict(result.usage)
        )


async def _settle_unfinished(
    store: ChatStore, sid: str, run_id: str, exc: BaseException
) -> None:
    """Record an unfinished run with the status lovia gave its checkpoint.
    A run stopped before its first checkpoint has nothing to record: only
    Ctrl+C does that, and the build's directory is removed."""
    assert store.checkpointer is not None
    snap = await store.checkpointer.load(run_id)
    if snap is None:
        return
    if snap.status == "failed":
        # The web UI folds a failed run into its session and drops the
        # checkpoint; the demo keeps the checkpoint to show and resume it.
        await store.clear_active_run_id(sid, expected=run_id)
    await store.finish_run(
        run_id,
        status=snap.status,
        error="cancelled" if isinstance(exc, asyncio.CancelledError) else str(exc),
        usage=usage_dict(snap.usage, last_input_tokens=snap.last_input_tokens),
    )
