"""lovia web's history around a chat, written by lovia web's own code as its
server calls it (the demo's ``web_history``: ``ChatStore`` around real
``Runner`` runs): a chat whose second and third runs failed and were stopped
before anything was saved, its subagent task chat, an hourly schedule (two
fires and a miss) and a fork of the chat."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lovia.web.store import ChatStore

from lovia_tui.demo.web_history import SMOKE_RUN, fork_of, launch_chat, morning_digest

CHAT, TASK, SCHEDULE = "chat-launch", "chat-launch-t1", "sched-digest"


@dataclass(frozen=True)
class WebHistory:
    path: Path
    fork: str
    """The fork's chat id (lovia mints it)."""


async def build_web_history(directory: Path) -> WebHistory:
    path = directory / "web.db"
    store = ChatStore.sqlite(path)
    await launch_chat(store, CHAT, TASK)
    await morning_digest(store, SCHEDULE)
    fork = await fork_of(store, CHAT, SMOKE_RUN)
    assert fork is not None
    return WebHistory(path, fork)
