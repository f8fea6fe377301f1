"""The torture loop: one long-lived workspace acting in random order beside writers.

The app holds its connections for as long as it runs; every action, resume,
doctor fix and undo happens in that one process while lovia writers in
other processes connect, commit and close, and the search indexer reads
from its own process. Whatever the order, the file must stay sound after
every step (``integrity_check``), every row a writer committed must stay,
and undoing every journaled action newest first must give back the seeded
chats exactly.

The seeded file holds chats (``chat-N``, each a few runs with tool calls)
that the session actions target, and crashed runs (``crash-N``, a stream
abandoned inside a slow tool: the head stays ``running`` with a dangling
call) that resume, delete and the doctor's fixes target. Writers append to
sessions of their own, which nothing targets.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lovia_tui.core.actions.fork import fork_point, perform_fork, preview_fork
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.perform import perform, undo
from lovia_tui.core.actions.run_plans import preview_delete_runs
from lovia_tui.core.actions.session_plans import (
    preview_clear,
    preview_rewind,
)
from lovia_tui.core.actions.trim_plan import preview_trim
from lovia_tui.core.doctor.audit import diagnose
from lovia_tui.core.doctor.fixes import RUN_FIXES, fix_preview
from lovia_tui.core.errors import ActionError
from lovia_tui.core.runs.agents import load_agent
from lovia_tui.core.runs.preflight import preflight
from lovia_tui.core.runs.resume import resume
from lovia_tui.core.store.workspace import Workspace

CHATS = 4
CRASHES = 4
ACTIONS = ("rewind", "trim", "clear", "fork", "delete", "resume", "doctor", "undo")


def chat_id(n: int) -> str:
    return f"chat-{n}"


def crash_id(n: int) -> str:
    return f"crash-{n}"


async def seed(session_file: Path, checkpoint_file: Path) -> None:
    """Chats and crashed runs written by lovia's own Runner (the demo's agents).

    One file for both stores is lovia web's layout: its ``ChatStore`` keeps the
    chats' records and each crashed run's pointer, as the web UI would.
    """
    from lovia import CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
    from lovia import events as lovia_events
    from lovia.testing import call, text

    from lovia_tui.demo.agent import make_agent
    from lovia_tui.demo.webui import open_record, web_run

    if session_file == checkpoint_file:
        from lovia.web.store import ChatStore

        store = ChatStore.sqlite(session_file)
        session, checkpointer = store.session, store.checkpointer
    else:
        store = None
        session = SQLiteSession(session_file, wal=True)
        checkpointer = SQLiteCheckpointer(checkpoint_file, wal=True)
    for n in range(CHATS):
        for turn in range(3):
            script = [call("lookup", {"topic": "kyoto"}), text(f"answer {n}.{turn}")]
            run_id, prompt = f"run-{n}-{turn}", f"question {n}.{turn}"
            if store is not None:
                await web_run(store, chat_id(n), prompt, script, run_id=run_id)
                continue
            await Runner.run(
                make_agent(script),
                prompt,
                session=session,
                session_id=chat_id(n),
                checkpoint=CheckpointOptions(checkpointer, run_id),
            )
    for n in range(CRASHES):
        if store is not None:
            await open_record(store, crash_id(n), f"crashed-{n}")
        handle = Runner.stream(
            make_agent([call("run_job", {"job": f"job-{n}"})]),
            f"run job {n}",
            session=session,
            session_id=crash_id(n),
            checkpoint=CheckpointOptions(checkpointer, f"crashed-{n}"),
        )
        async for event in handle:
            if isinstance(event, lovia_events.ToolCallStarted):
                break  # abandoned inside the tool: the head stays running


def chat_rows(path: Path) -> list[tuple]:
    """The seeded chats' segments, byte for byte."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT session_id, run_id, CAST(entries_json AS BLOB), "
            "CAST(meta_json AS BLOB), created_at FROM session_runs "
            "WHERE session_id LIKE 'chat-%' ORDER BY session_id, id"
        ).fetchall()
    finally:
        conn.close()


@dataclass
class Tally:
    done: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)


class Torturer:
    """Takes random steps on one workspace held open for the whole loop."""

    def __init__(self, ws: Workspace, rng: random.Random) -> None:
        self.ws = ws
        self.rng = rng
        self.tally = Tally()
        self.journal = Journal()
        self.agent = load_agent("lovia_tui.demo:agent")

    async def step(self) -> str:
        action = self.rng.choice(ACTIONS)
        try:
            await getattr(self, f"_{action}")()
        except ActionError:
            self.tally.refused[action] += 1  # nothing to do, live, rows moved on…
        else:
            self.tally.done[action] += 1
        return action

    def _chat(self) -> str:
        return chat_id(self.rng.randrange(CHATS))

    async def _rewind(self) -> None:
        await perform(
            self.ws, await preview_rewind(self.ws, self._chat(), self.rng.randrange(7))
        )

    async def _trim(self) -> None:
        await perform(self.ws, await preview_trim(self.ws, self._chat(), 8, 0))

    async def _clear(self) -> None:
        await perform(self.ws, await preview_clear(self.ws, self._chat()))

    async def _fork(self) -> None:
        sid = self._chat()
        keep = await fork_point(self.ws, sid, self.rng.randrange(9))
        await perform_fork(self.ws, await preview_fork(self.ws, sid, keep))

    async def _delete(self) -> None:
        run_id = self.rng.choice(
            [f"crashed-{n}" for n in range(CRASHES)]
            + [f"run-{n}-{t}" for n in range(CHATS) for t in range(3)]
        )
        preview = await preview_delete_runs(self.ws, [run_id], stale_after=0)
        await perform(self.ws, preview)

    async def _resume(self) -> None:
        n = self.rng.randrange(CRASHES)
        pf = await preflight(
            self.ws,
            f"crashed-{n}",
            agent=self.agent,
            session_id=crash_id(n),
            stale_after=0,
        )
        async for _ in resume(pf):
            pass

    async def _doctor(self) -> None:
        report = await diagnose(self.ws, stale_after=0)
        ours = [
            finding
            for finding in report.findings
            if finding.fix is not None
            and finding.fix.action not in RUN_FIXES
            and (
                (finding.run_id or "").startswith(("crashed-", "run-"))
                or (finding.session_id or "").startswith(("chat-", "crash-"))
            )
        ]
        if not ours:
            raise ActionError("no finding with a fix")
        finding = self.rng.choice(ours)
        await perform(self.ws, await fix_preview(self.ws, finding, stale_after=0))

    async def _undo(self) -> None:
        for entry in await self.journal.entries(None, 50):
            if entry.action != "undo" and entry.undoable is None:
                await undo(self.ws, entry.id)
                return
        raise ActionError("nothing to undo")

    async def undo_everything(self) -> list[str]:
        """Undo every action not undone yet, newest first; what was refused."""
        refused = []
        for entry in await self.journal.entries(None, 10_000):
            if entry.action == "undo" or entry.undone_by is not None:
                continue
            if entry.undoable is not None:
                refused.append(f"#{entry.id} {entry.action}: {entry.undoable}")
                continue
            try:
                await undo(self.ws, entry.id)
            except ActionError as exc:
                refused.append(f"#{entry.id} {entry.action}: {exc}")
        return refused
