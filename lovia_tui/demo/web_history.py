"""lovia web's history around the demo's chats: run records that left no
transcript, a subagent task under its chat, a schedule and its runs, a fork.

Written as lovia web's server writes them (``lovia.web.supervisor``,
``subagents``, ``scheduler``): ``ChatStore`` methods around real ``Runner``
runs on scripted models; a failed or cancelled run's record is closed with
its status and error as the supervisor closes it, its checkpoint dropped and
nothing saved (the supervisor itself keeps the run's user message).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from lovia import Agent, CheckpointOptions, Runner, events
from lovia.exceptions import ProviderError
from lovia.testing import ScriptedProvider, text
from lovia.web.store import ChatStore, RunRow, ScheduleRow

from .agent import ASSISTANT, TOOLS
from .webui import chat, open_record, web_run

REJECTED = "400 bad request: context rejected"
"""The failed run's error, as a provider's refusal reads."""
SCHEDULE_EVERY = 3600
REJECTED_RUN, STOPPED_RUN, SMOKE_RUN = "run-rejected", "run-stopped", "run-smoke"


class _Rejecting(ScriptedProvider):
    """A model whose provider refuses the request (HTTP 400, not retryable)."""

    def __init__(self) -> None:
        super().__init__([])

    async def stream(self, entries: Any, **settings: Any) -> AsyncIterator[Any]:
        error = ProviderError(REJECTED)
        error.status_code, error.retryable = 400, False
        raise error
        yield  # an async generator, as a provider's stream is


async def unsaved_run(
    store: ChatStore, sid: str, prompt: str, *, cancel: bool, run_id: str
) -> None:
    """A run that ends before its first turn: refused by the provider
    (``failed``), or stopped by the user (``cancelled``); its checkpoint
    dropped, its record closed, nothing saved: a run whose record is all
    there is of it. (lovia web's own server keeps such a run's user message
    as its segment, ``_persist_partial``; that case is built by the tests.)"""
    assert store.checkpointer is not None
    await open_record(store, sid, run_id)
    handle = Runner.stream(
        Agent(name=ASSISTANT, instructions="Help.", model=_Rejecting(), tools=TOOLS),
        prompt,
        session=store.session,
        session_id=sid,
        checkpoint=CheckpointOptions(
            store.checkpointer, run_id, delete_on_success=True
        ),
    )
    async for event in handle:
        if cancel and isinstance(event, events.RunStarted):
            handle.cancel("user requested stop")  # the page's Stop
    error = "cancelled"  # the supervisor's text for every cooperative stop
    try:
        await handle.result()
    except Exception as exc:  # the run's end, recorded as the supervisor does
        error = error if cancel else str(exc)
    await store.checkpointer.delete(run_id)
    await store.clear_active_run_id(sid, expected=run_id)
    await store.finish_run(
        run_id, status="cancelled" if cancel else "failed", error=error
    )


async def launch_chat(store: ChatStore, sid: str, task_sid: str) -> None:
    """A chat whose second and third runs failed and were cancelled before
    anything was saved, with a subagent task and its report."""
    await chat(store, sid, "Launch checklist 🚀", [
        ("What's left before the launch?", [text("Docs, the status page and a final smoke test.")]),
    ])  # fmt: skip
    await unsaved_run(
        store, sid, "Paste the whole 2 GB log and check it.", cancel=False,
        run_id=REJECTED_RUN,
    )  # fmt: skip
    await unsaved_run(
        store, sid, "Draft the announcement for every channel.", cancel=True,
        run_id=STOPPED_RUN,
    )  # fmt: skip
    await web_run(
        store, sid, "Just the smoke test, please.",
        [text("Smoke test passed: 14/14 checks green. ✅")], run_id=SMOKE_RUN,
    )  # fmt: skip
    # The chat's agent spawns a task: its own chat, tied to this one.
    await store.upsert(
        task_sid, agent=ASSISTANT, title="[t1] Check the release notes", parent_id=sid
    )
    await web_run(
        store, task_sid, "Check the release notes for typos.",
        [text("Two typos fixed in the release notes.")],
        source=f"subagent:{task_sid}",
    )  # fmt: skip
    await web_run(
        store, sid, "[task t1 finished] Two typos fixed in the release notes.",
        [text("The release notes are clean now (task t1).")],
        source="subagent-report:t1",
    )  # fmt: skip


async def morning_digest(store: ChatStore, schedule_id: str) -> list[str]:
    """An hourly schedule with a fresh chat per fire: two fires that ran, and
    one that started no run (its agent unserved), recorded as the scheduler
    records a miss. Returns the chats its fires made."""
    now = time.time()
    await store.add_schedule(
        ScheduleRow(
            schedule_id, ASSISTANT, "Send the morning digest.", None, "every",
            str(SCHEDULE_EVERY), now + SCHEDULE_EVERY, True, None, now, now,
            max_fires=24,
        )
    )  # fmt: skip
    source = f"schedule:{schedule_id}"
    made = []
    for fire in range(2):
        target = f"chat-digest-{fire + 1}"
        await web_run(
            store, target, "Send the morning digest.",
            [text(f"Digest #{fire + 1}: 3 deploys, 0 incidents, 2 new tickets.")],
            title="Morning digest", source=source,
        )  # fmt: skip
        await store.mark_fired(
            schedule_id, next_fire=time.time() + SCHEDULE_EVERY, active=True,
            last_session_id=target,
        )  # fmt: skip
        made.append(target)
    await store.mark_fired(
        schedule_id, next_fire=time.time() + SCHEDULE_EVERY, active=True,
        last_session_id=made[-1],
    )  # fmt: skip
    missed = time.time()
    await store.start_run(
        RunRow(
            uuid.uuid4().hex, None, "digest", source, "failed",
            "agent 'digest' is not served", missed, missed, None,
        )
    )  # fmt: skip
    return made


async def fork_of(store: ChatStore, sid: str, before_run: str) -> str | None:
    """A fork of ``sid`` cut before the first user message of ``before_run``,
    as the page's "fork from here" makes it."""
    return await store.fork(sid, ref=f"{before_run}:0")
