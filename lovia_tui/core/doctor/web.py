"""Doctor checks on the web UI's own records: chat pointers and run records.

lovia's web UI keeps, beside the stores, a chat's ``active_run_id`` (its
in-flight run) and a ``chat_runs`` record per run. Both should follow the
checkpoint; after a crash, or a checkpoint deleted behind the web UI's back,
they name runs that are gone or done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lovia_tui.core.doctor.findings import Finding, FindingList, Fix, command
from lovia_tui.core.store.web_records import RECORD_COLUMNS, left_nothing, record_of
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import stored_key, stored_time
from lovia_tui.core.web_models import RunRecord

WEB_LIMIT = 10_000
"""Most pointers or open run records read per file: in-flight chats are few."""
RECORD_SCAN = 5_000
"""Run records looked at per statement for the runs that saved nothing."""


@dataclass
class WebState:
    """The web UI's in-flight records: chats pointing at a run, run records still ``running``."""

    pointers: dict[str, list[tuple[Path, str]]] = field(default_factory=dict)
    records: dict[str, tuple[Path, str | None, float | None]] = field(
        default_factory=dict
    )

    @classmethod
    async def read(cls, ws: Workspace) -> WebState:
        state = cls()
        for db in ws.databases:
            if not db.stores.chat:
                continue
            for chat_id, run_id in await db.fetchall(
                "SELECT id, active_run_id FROM chat_sessions "
                "WHERE active_run_id IS NOT NULL LIMIT ?",
                (WEB_LIMIT,),
            ):
                state.pointers.setdefault(stored_key(run_id), []).append(
                    (db.path, stored_key(chat_id))
                )
            for run_id, session_id, started_at in await db.fetchall(
                "SELECT id, session_id, started_at FROM chat_runs WHERE status = 'running' LIMIT ?",
                (WEB_LIMIT,),
            ):
                state.records[stored_key(run_id)] = (
                    db.path,
                    None if session_id is None else stored_key(session_id),
                    stored_time(started_at),
                )
        return state

    def chats(self, run_id: str) -> list[str]:
        """The chats whose ``active_run_id`` names ``run_id``."""
        return [chat for _, chat in self.pointers.get(run_id, [])]

    def leftovers(self, run_id: str) -> str:
        """What the web UI still says about a run it should be done with, as a clause."""
        parts = [f"web chat {chat!r} still points at it" for chat in self.chats(run_id)]
        if run_id in self.records:
            parts.append("its web run record still says running")
        return "".join(f"; {part}" for part in parts)


async def web_findings(
    ws: Workspace, found: FindingList, web: WebState, *, now: float, stale_after: float
) -> None:
    """Web records about runs whose checkpoint is gone, or that no checkpoint finding covered.

    Both are harmless until lovia web meets them (it clears a dangling pointer
    when the chat is opened and closes running records at its start), hence ``info``.
    """
    for run_id, pointers in web.pointers.items():
        if await ws.find_run(run_id) is not None:
            continue
        for file, chat_id in pointers:
            # Clearing goes through lovia's checkpointer, whose tables must exist.
            fix = (
                Fix(
                    "clear-pointer",
                    "clear the pointer (lovia web also clears it when the chat is opened)",
                    chat_id,
                )
                if ws.database(file).stores.checkpoint
                else None
            )
            found.add(
                Finding(
                    "web-stale-pointer", "info", file,
                    f"web chat {chat_id!r} points at run {run_id!r}, which has no checkpoint: "
                    "the web UI would offer to reconnect to nothing",
                    run_id, chat_id, fix,
                )
            )  # fmt: skip
    for run_id, (file, session_id, started_at) in web.records.items():
        run = await ws.find_run(run_id)
        if run is None:
            if started_at is not None and now - started_at < stale_after:
                continue  # may be a live run of a web UI without checkpoints
            why = "its checkpoint is gone; lovia web marks such a record interrupted at its next start"
            fix = None
        elif run.is_live(now, stale_after) or found.has_run(run_id):
            continue
        else:
            why = f"its checkpoint is {run.status}, not live"
            fix = Fix(
                "finalize",
                f"finalize it: stores the run and closes the record ({command('finalize', run_id)}); "
                "or resume it",
                session_id,
            )
        message = f"web run record {run_id!r} still says running: {why}"
        found.add(
            Finding("web-stuck-record", "info", file, message, run_id, session_id, fix)
        )


async def unsaved_run_findings(ws: Workspace, found: FindingList) -> None:
    """Runs lovia web recorded as failed, cancelled or interrupted that left
    nothing behind: no segment in their chat, no checkpoint.

    Listed here so that no run ends unseen; ``info`` with no fix, because
    nothing is broken and nothing can be resumed (the runs pane lists
    checkpoints, whose actions these records cannot take). The transcript
    shows each where it happened."""
    for db in ws.databases:
        if not db.stores.chat:
            continue
        where = [
            "r.status IN ('failed', 'cancelled', 'interrupted')",
            *left_nothing(db),
        ]
        columns = ", ".join(f"r.{name}" for name in RECORD_COLUMNS)
        last = (await db.fetchrow("SELECT MAX(rowid) FROM chat_runs"))[0] or 0
        # By rowid ranges: no index on status, and no statement reads them all.
        for start in range(0, last, RECORD_SCAN):
            rows = await db.fetchall(
                f"SELECT {columns} FROM chat_runs r WHERE r.rowid > ? AND r.rowid <= ? "
                f"AND {' AND '.join(where)}",
                (start, start + RECORD_SCAN),
            )
            for row in rows:
                _unsaved_finding(db.path, record_of(row), found)


def _unsaved_finding(file: Path, record: RunRecord, found: FindingList) -> None:
    error = (
        f" ({record.error})" if record.error and record.error != record.status else ""
    )
    place = (
        f"chat {record.session_id!r}: shown in its transcript where it happened"
        if record.session_id
        else "no chat (a schedule fire that started no run)"
    )
    found.add(
        Finding(
            "web-unsaved-run", "info", file,
            f"web run {record.run_id!r} {record.status}{error}, "
            f"by {record.started_by}, saved nothing (no segment, no "
            f"checkpoint: nothing to resume); {place}",
            record.run_id, record.session_id,
        )
    )  # fmt: skip
