"""A session as lovia web shows it: its segments, then the seam, then what exists
only in a checkpoint (the in-flight run lovia web's records link to the chat).

lovia web's page splices an unfinished run's own entries (its user message, a
pending call, the results it saved) below the stored history; ``show`` and
``export`` read the same splice from here. The in-flight entries carry the
flat indices they would get once the run is stored (a resume appends them
all, so they follow the session's last entry).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from lovia_tui.core.entries import UnreadableError, dangling_calls
from lovia_tui.core.models import DanglingCall, Entry, RunInfo, SegmentInfo, Unreadable
from lovia_tui.core.run_status import (
    DEFAULT_STALE_AFTER,
    RunStatus,
    stale_reason,
    status_label,
)
from lovia_tui.core.store import checkpoint_reads, segment_reads
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import stored_key, time_order
from lovia_tui.core.web_models import usage_text

ELSEWHERE_LIMIT = 50
"""Run records looked up when a chat's checkpoints are in another file."""


@dataclass(frozen=True)
class InFlight:
    """An unfinished run of the session, not stored in it: what sits below the seam."""

    run: RunInfo
    status: str
    """Its effective status (:func:`~lovia_tui.core.run_status.status_label`)."""
    stale_reason: str | None
    entries: tuple[Entry, ...]
    """Its own entries, with the flat indices they would get once stored."""
    dangling: tuple[DanglingCall, ...]
    problems: tuple[Unreadable, ...]
    last_seq: int = -1
    """The last batch read: following the run picks up after it."""

    @property
    def live(self) -> bool:
        """Another process may be writing it: its pending calls are running, not dangling."""
        return self.status == RunStatus.RUNNING

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run.run_id,
            "status": self.status,
            "head_status": self.run.status,
            "web_record": self.run.web_status,
            "live": self.live,
            "stale_reason": self.stale_reason,
            "file": str(self.run.file),
            "entries": [{"index": e.index, **e.data} for e in self.entries],
            "dangling": [
                {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
                for c in self.dangling
            ],
            "unreadable": [str(p) for p in self.problems],
            "usage": self.run.usage,
            "last_input_tokens": self.run.last_input_tokens,
        }


async def linked_run_ids(db: Database, session_id: str) -> list[str]:
    """The runs lovia web's records tie to a chat: its active run, then its run
    records that still have a checkpoint (in lovia web's one file), or the
    newest few when the checkpoints live elsewhere. Index lookups only."""
    if not db.stores.chat:
        return []
    records = (
        "SELECT id FROM chat_runs r WHERE session_id = ?1 AND EXISTS "
        "(SELECT 1 FROM snapshot_heads h WHERE h.run_id = r.id)"
        if db.stores.checkpoint
        else "SELECT id FROM (SELECT id FROM chat_runs WHERE session_id = ?1 "
        f"ORDER BY started_at DESC LIMIT {ELSEWHERE_LIMIT})"
    )
    rows = await db.fetchall(
        "SELECT active_run_id FROM chat_sessions WHERE id = ?1 "
        f"AND active_run_id IS NOT NULL UNION ALL {records}",
        (session_id,),
    )
    return list(dict.fromkeys(stored_key(row[0]) for row in rows))


async def in_flight(
    ws: Workspace,
    db: Database,
    session_id: str,
    total_entries: int | None,
    *,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> list[InFlight]:
    """The session's unfinished runs (checkpoints the web UI links to it, not
    yet stored in it), oldest first, their entries numbered from ``total_entries``."""
    runs = [
        run
        for run_id in await linked_run_ids(db, session_id)
        if (run := await ws.find_run(run_id)) is not None
    ]
    return await splice(
        ws, db, session_id, runs, total_entries, stale_after=stale_after
    )


async def splice(
    ws: Workspace,
    db: Database,
    session_id: str,
    runs: list[RunInfo],
    total_entries: int | None,
    *,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> list[InFlight]:
    """Of ``runs`` (linked to the session by whoever knows the links: lovia
    web's records for ``show``, the Runs pane for the app), those not stored
    in it yet, oldest first, each read as it stands below the seam; their
    entries numbered from ``total_entries`` (None: left unnumbered)."""
    stored = await checkpoint_reads.runs_in_session(
        db, session_id, [run.run_id for run in runs]
    )
    pending = sorted(
        (run for run in runs if run.run_id not in stored),
        key=lambda run: (run.started_at or time_order(run.updated_at), run.run_id),
    )
    found, next_index = [], total_entries
    for run in pending:
        flight = await read_flight(ws, run, next_index, stale_after=stale_after)
        next_index = None if next_index is None else next_index + len(flight.entries)
        found.append(flight)
    return found


async def read_flight(
    ws: Workspace,
    run: RunInfo,
    first_index: int | None,
    *,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> InFlight:
    """One run's checkpoint as it stands below a seam: its status, its own
    entries (numbered from ``first_index``, or not), its dangling calls."""
    db = ws.database(run.file)
    entries, problems, last_seq = (
        await checkpoint_reads.snapshot_entries_after(db, run.run_id, -1)
        if db.stores.checkpoint
        else ([], [], -1)
    )
    now = time.time()
    return InFlight(
        run=run,
        status=status_label(run, now, stale_after),
        stale_reason=stale_reason(run, now, stale_after),
        entries=tuple(
            Entry(None if first_index is None else first_index + n, entry.data)
            for n, entry in enumerate(entries)
        ),
        dangling=tuple(dangling_calls([e.data for e in entries])),
        problems=tuple(problems),
        last_seq=last_seq,
    )


def in_flight_fields(flights: list[InFlight]) -> dict[str, Any]:
    """How ``show --json`` and a JSON export carry the in-flight runs: the one
    right after the seam (or null), and any later ones (lovia web keeps one)."""
    return {
        "in_flight": flights[0].as_dict() if flights else None,
        "in_flight_more": [flight.as_dict() for flight in flights[1:]],
    }


@dataclass(frozen=True)
class StoredSegment:
    """One segment and its entries (or why they are unreadable)."""

    segment: SegmentInfo
    entries: list[Entry]
    problem: str | None

    def as_dict(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "run_id": self.segment.run_id,
            "created_at": self.segment.created_at,
            "started_at": self.segment.started_at,
            "finished_at": self.segment.finished_at,
            "entry_count": self.segment.entry_count,
            "first_index": self.segment.first_index,
        }
        if self.problem is None:
            item["entries"] = [{"index": e.index, **e.data} for e in self.entries]
        else:
            item["unreadable"] = self.problem
        return item


def total_entries(segments: list[SegmentInfo]) -> int | None:
    """The session's flat length, unknown (None) after an unreadable segment."""
    if not segments:
        return 0
    last = segments[-1]
    if last.first_index is None or last.entry_count is None:
        return None
    return last.first_index + last.entry_count


async def stored_segments(
    db: Database, segments: list[SegmentInfo]
) -> AsyncIterator[StoredSegment]:
    """Each segment with its entries, read one at a time (a long session never sits whole)."""
    for segment in segments:
        try:
            entries, problem = await segment_reads.segment_entries(db, segment), None
        except UnreadableError as exc:
            entries, problem = [], str(exc)
        yield StoredSegment(segment, entries, problem)


def seam_title(flight: InFlight) -> str:
    """The line between the stored history and an in-flight run, as the app
    draws it, with what the run has spent so far (its head's usage)."""
    why = f" ({flight.stale_reason})" if flight.stale_reason else ""
    spent = usage_text(flight.run.usage, flight.run.last_input_tokens)
    return (
        f"not yet in the session — run {flight.run.run_id}, status {flight.status}{why}"
        + (f" · {spent}" if spent else "")
    )
