"""What every preview shares: guards, checkpoint deletions, the row fingerprint.

Previews mirror lovia's own rules on the very rows lovia will read, so their
counts equal what lovia returns; nothing here writes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lovia_tui.core.actions.previews import (
    CheckpointDeletion,
    Plan,
    ToolCallRef,
)
from lovia_tui.core.entries import (
    UnreadableError,
    known_only,
    parse_entries,
    parse_object,
)
from lovia_tui.core.errors import ActionError, LiveRunError
from lovia_tui.core.formatting import age, ago
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import RunStatus, stale_reason
from lovia_tui.core.store import database
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.head_reads import RunFilter, stream_runs
from lovia_tui.core.store.rows import Captured, RowGroup, capture_now, combined
from lovia_tui.core.store.schema import known_version, stored_version
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import refuse_non_text, time_order


@dataclass(frozen=True)
class Segment:
    """One ``session_runs`` row parsed as lovia's rewind and trim read it.

    Those read only ``entries_json``; the meta is kept for the preview and an
    unreadable one counts as present (``has_meta``) but says nothing.
    """

    run_id: str
    entries: list[dict[str, Any]]
    has_meta: bool
    meta: dict[str, Any]
    stored_bytes: int


def meta_of(raw: Any) -> dict[str, Any]:
    try:
        return parse_object(raw) or {}
    except UnreadableError:
        return {}


def refuse_readonly(ws: Workspace) -> None:
    """No change to files open read-only (a preview is read), and none of
    :func:`refuse_unsound`'s files."""
    if ws.readonly:
        raise ActionError("the files are open read-only: no action can change them")
    refuse_unsound(ws)


def refuse_unsound(ws: Workspace) -> None:
    """No action, not even its preview, beside a file SQLite called damaged
    (lovia's change could spread the damage, a doctor's "delete" included,
    and undo could not restore it exactly), or beside a file replaced on
    disk since it was read (the preview would be the old file's)."""
    for db in ws.databases:
        if db.replaced():
            raise ActionError(db.replaced_text)
        if db.damage:
            raise ActionError(
                f"{db.path} is damaged ({db.damage}): no action changes it; "
                "`lovia-tui doctor --integrity` says which store"
            )


async def session_database(ws: Workspace, session_id: str) -> Database:
    """The file holding the session's segments: lovia's session store must be there
    already, or constructing it would create its tables. Every session action
    starts here, and refuses a session id lovia could not be given."""
    refuse_non_text("session", session_id)
    db = await ws.find_session(session_id)
    if db is None:
        raise ActionError(f"no session {session_id!r} in the open files")
    if not db.stores.session:
        raise ActionError(
            f"session {session_id!r} has no stored runs: {db.path} has no session store"
        )
    return db


def parse_segments(rows: Captured, action: str) -> list[Segment]:
    """The session's segments, or ActionError: lovia cannot act on unreadable entries."""
    segments = []
    for run_id, raw, meta in stored_values(rows):
        try:
            entries = list(known_only(parse_entries(raw)))
        except UnreadableError as exc:
            raise unreadable(rows, run_id, action, exc) from exc
        segments.append(
            Segment(run_id, entries, meta is not None, meta_of(meta), len(bytes(raw)))
        )
    return segments


def stored_values(rows: Captured) -> Iterator[tuple[str, Any, Any]]:
    """(run id, stored entries, stored meta) of each captured segment."""
    entries_at, meta_at = (
        rows.columns.index("entries_json"),
        rows.columns.index("meta_json"),
    )
    for run_id, row in zip(rows.column("run_id"), rows.rows, strict=True):
        yield run_id, row[entries_at][1], row[meta_at][1]


def unreadable(
    rows: Captured, run_id: str, action: str, exc: UnreadableError
) -> ActionError:
    return ActionError(
        f"segment {run_id} of session {rows.group.key!r} is unreadable ({exc}); "
        f"lovia cannot {action} this session"
    )


def calls(run_id: str, entries: Iterable[dict[str, Any]]) -> list[ToolCallRef]:
    return [
        ToolCallRef(
            run_id,
            str(e.get("call_id")),
            str(e.get("name", "?")),
            str(e.get("arguments", "")),
        )
        for e in entries
        if e.get("type") == "tool_call"
    ]


async def session_runs_and_links(
    ws: Workspace, session_id: str
) -> tuple[list[RunInfo], dict[str, SessionLink]]:
    """The checkpoints a change to ``session_id`` weighs, most recently saved
    first, with their links: those that may belong to it, and every running
    one (live and of no known session, it may be writing to it). Found by
    index and by status in SQL, never by reading every head: a fleet's file
    holds a million (a rewind's preview beside one took 38 s and 1.9 GB)."""
    wanted = await ws.session_run_ids(session_id)
    found = await ws.runs_named(wanted)
    for db in ws.checkpoint_dbs:
        async for chunk in stream_runs(db, RunFilter(status=RunStatus.RUNNING)):
            found += (run for run in chunk if run.run_id not in wanted)
    found.sort(key=lambda run: time_order(run.updated_at), reverse=True)
    return found, await ws.links(run.run_id for run in found)


async def refuse_live_session(
    ws: Workspace, session_id: str, force: bool, stale_after: float, doing: str
) -> None:
    """No change to a session while a run linked to it may still write to it:
    its appends move the rows under the preview (a trim too: the run's own
    context state names the outputs it cuts)."""
    runs, links = await session_runs_and_links(ws, session_id)
    linked = (
        run
        for run in runs
        if run.run_id in links and links[run.run_id].session_id == session_id
    )
    refuse_live(linked, force, stale_after, f"{doing} session {session_id!r}")


def refuse_live(
    runs: Iterable[RunInfo], force: bool, stale_after: float, what: str
) -> None:
    """No action may touch a run another process may still be writing."""
    now = time.time()
    for run in runs:
        if run.is_live(now, stale_after) and not force:
            raise LiveRunError(
                f"run {run.run_id} is live (last saved {ago(now, run.updated_at)}, "
                f"under the {age(stale_after)} stale limit): {what} now would corrupt it; "
                "stop its process first, or force if it is gone"
            )


async def require_current_chat(db: Database) -> None:
    """Refuse a web UI file whose chat tables lovia's ChatStore would migrate on open."""
    try:
        row = await db.fetchone("SELECT version FROM lovia_schema WHERE store = 'chat'")
    except sqlite3.OperationalError as exc:
        if not database.is_missing_table(exc):
            raise
        row = None
    known = known_version("chat")
    version = stored_version(row[0]) if row else None
    if version != known:
        raise ActionError(
            f"{db.path}: the web UI tables are at schema version "
            f"{'none' if version is None else version}, not {known}: lovia would "
            "migrate them to update the chat; open the file with `lovia web` first"
        )


async def deletion(
    ws: Workspace,
    run: RunInfo,
    link: SessionLink | None,
    reason: str,
    stale_after: float,
) -> CheckpointDeletion:
    refuse_non_text("run", run.run_id)
    db = ws.database(run.file)
    pointer = None
    if db.stores.chat:
        row = await db.fetchone(
            "SELECT id FROM chat_sessions WHERE active_run_id = ? LIMIT 1",
            (run.run_id,),
        )
        pointer = row[0] if row else None
        if pointer is not None:
            await require_current_chat(db)
    now = time.time()
    return CheckpointDeletion(
        file=run.file,
        run_id=run.run_id,
        status=run.status,
        stale=run.is_stale(now, stale_after),
        live=run.is_live(now, stale_after),
        entries=run.entries,
        reason=reason,
        session_id=link.session_id if link else None,
        appended=link is not None and link.kind == "segment",
        web_pointer=pointer,
        stale_reason=stale_reason(run, now, stale_after),
        web_record=run.web_status,
        pending_handoff=run.pending_handoff,
    )


def _why_deleted(run: RunInfo, truncated: str | None) -> str | None:
    """Why a checkpoint of a changed segment goes, or None when nothing calls for it."""
    if run.run_id != truncated:
        if run.status == RunStatus.COMPLETED:
            return "its segment is removed: a replay would store it again"
        return "its segment is removed: a resume would bring it back"
    if run.status == RunStatus.COMPLETED:
        return None  # replay's INSERT OR IGNORE adds nothing to a segment that exists
    return (
        "its segment is truncated: a resume would give the model the removed "
        "entries again (its own append is ignored, the segment exists)"
    )


async def linked_deletions(
    ws: Workspace,
    session_id: str,
    removed: set[str],
    truncated: str | None,
    force: bool,
    stale_after: float,
    *,
    in_flight: bool = False,
) -> tuple[list[CheckpointDeletion], tuple[str, ...], tuple[str, ...]]:
    """Checkpoints to delete with a session's rows, those kept, and live runs
    of unknown session.

    A checkpoint of a removed run, or the session's in-flight run, would
    otherwise bring the removed tail back on a later resume or replay; a
    completed one of a segment only truncated is kept (``removed`` holds the
    truncated run too). ``in_flight``: the cut falls inside the chat's
    in-flight run, which lovia web's rewind drops. Refuses while a run linked
    to the session is live, unless forced.
    """
    runs, links = await session_runs_and_links(ws, session_id)
    linked = [
        r
        for r in runs
        if r.run_id in links and links[r.run_id].session_id == session_id
    ]
    doomed, kept = [], []
    for run in runs:
        link = links.get(run.run_id)
        if run.run_id in removed:
            why = _why_deleted(run, truncated)
            if why is None:
                kept.append(run.run_id)
            else:
                doomed.append((run, why))
        elif link and link.session_id == session_id and link.kind == "web":
            doomed.append(
                (
                    run,
                    "the chat's in-flight run: the cut falls inside it, and lovia "
                    "web's rewind drops it with the chat's pointer"
                    if in_flight
                    else "the session's in-flight run: it continues a transcript that is gone",
                )
            )
    what = f"changing session {session_id!r}"
    refuse_live([*linked, *(run for run, _ in doomed)], force, stale_after, what)
    now = time.time()
    unknown = tuple(
        r.run_id for r in runs if r.run_id not in links and r.is_live(now, stale_after)
    )
    deletions = [
        await deletion(ws, run, links.get(run.run_id), why, stale_after)
        for run, why in doomed
    ]
    return deletions, tuple(kept), unknown


async def active_run(ws: Workspace, session_id: str) -> RunInfo | None:
    """The checkpoint a lovia web chat points at (``active_run_id``), if any:
    its entries follow the stored ones in the chat as lovia web shows it."""
    for db in ws.databases:
        if not db.stores.chat:
            continue
        row = await db.fetchone(
            "SELECT active_run_id FROM chat_sessions WHERE id = ? "
            "AND active_run_id IS NOT NULL",
            (session_id,),
        )
        if row is not None:
            return await ws.find_run(row[0])
    return None


def checkpoint_groups(deletions: Iterable[CheckpointDeletion]) -> list[RowGroup]:
    groups = []
    for d in deletions:
        groups += [
            RowGroup(d.file, "snapshot_heads", d.run_id),
            RowGroup(d.file, "snapshot_turns", d.run_id),
        ]
        if d.web_pointer is not None:
            groups.append(RowGroup(d.file, "chat_sessions", d.web_pointer))
    return groups


async def capture_groups(ws: Workspace, groups: Iterable[RowGroup]) -> list[Captured]:
    """The groups' rows now, through short read connections of our own (in a thread)."""
    refuse_unsound(ws)
    return await asyncio.to_thread(capture_now, list(groups))


async def make_plan(
    ws: Workspace,
    groups: Sequence[RowGroup],
    forced: bool,
    known: Sequence[Captured] = (),
) -> Plan:
    """Fingerprint the groups' rows now (reusing rows already read for the preview)."""
    have = {c.group: c for c in known}
    unique = list(dict.fromkeys(groups))
    read = iter(await capture_groups(ws, [g for g in unique if g not in have]))
    captured = [have[g] if g in have else next(read) for g in unique]
    return Plan(tuple(unique), combined(captured), forced)
