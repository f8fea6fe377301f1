"""A small, deterministic lovia database for snapshot and pilot tests.

Written by real lovia code (ChatStore, Runner, ScriptedProvider) with fixed
run ids and a frozen clock, so every screenshot of it is the same. It is built
in a child process that freezes ``time.time`` before lovia is imported: lovia
binds it as a dataclass default factory at import time. The crash is an
abandoned stream, which leaves the head ``running`` with its dangling call.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

BUILT_AT = 1_790_000_000.0
VIEWED_AT = BUILT_AT + 3_600.0
FILE_NAME = "snap.db"


async def _build(path: Path) -> None:
    from lovia.testing import call, text
    from lovia.web.store import ChatStore

    from lovia_tui.demo.webui import web_run

    store = ChatStore.sqlite(path)
    await web_run(
        store,
        "chat-kyoto",
        "Plan two days in Kyoto 🗾",
        [
            call("lookup", {"topic": "kyoto"}),
            text("Day 1: 金閣寺. Day 2: 伏見稲荷 ⛩️", reasoning="Temples open early."),
        ],
        run_id="run-kyoto-1",
        title="Two days in Kyoto",
    )
    await web_run(
        store,
        "chat-kyoto",
        "And the budget?",
        [call("check_stock", {"sku": "nope"}), text("About ¥30,000 per day.")],
        run_id="run-kyoto-2",
    )
    await web_run(
        store,
        "chat-export",
        "Is the nightly export healthy?",
        [call("lookup", {"topic": "export"}), text("Yes: last success at 02:00 UTC.")],
        run_id="run-export-1",
        title="Nightly export",
    )
    await _abandoned(store, "chat-export", "run-crashed")


async def _abandoned(store, session_id: str, run_id: str) -> None:
    """Stop consuming a run inside its slow tool: the head stays ``running``."""
    from lovia import CheckpointOptions, Runner, events
    from lovia.testing import call

    from lovia_tui.demo.agent import make_agent
    from lovia_tui.demo.webui import open_record

    await open_record(store, session_id, run_id)
    handle = Runner.stream(
        make_agent(
            [
                call("lookup", {"topic": "export"}),
                call("run_job", {"job": "nightly-export"}),
            ]
        ),
        "Run the nightly export now, please.",
        session=store.session,
        session_id=session_id,
        checkpoint=CheckpointOptions(store.checkpointer, run_id),
    )
    async for event in handle:
        if isinstance(event, events.ToolCallStarted) and event.call.name == "run_job":
            break


def build_snapshot_db(directory: Path) -> Path:
    """Write ``snap.db`` in ``directory`` (in a child process, clock frozen)."""
    path = directory / FILE_NAME
    subprocess.run([sys.executable, __file__, str(path)], check=True, timeout=120)
    return path


if __name__ == "__main__":
    time.time = lambda: BUILT_AT
    asyncio.run(_build(Path(sys.argv[1])))
