"""Exporting a session's transcript to Markdown or JSON (for the app and CLI).

Streams segment by segment into the target file, so a long session never has
to sit in memory whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from lovia_tui.core import queries
from lovia_tui.core.database import Database
from lovia_tui.core.entries import entry_text
from lovia_tui.core.formatting import timestamp
from lovia_tui.core.previews import DEFAULT_STALE_AFTER
from lovia_tui.core.spliced import (
    in_flight,
    in_flight_fields,
    seam_title,
    stored_segments,
    total_entries,
)
from lovia_tui.core.workspace import Workspace

FORMATS = ("md", "json")


async def export_session(
    db: Database,
    session_id: str,
    fmt: str,
    target: Path | IO[str],
    *,
    ws: Workspace | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> int:
    """Write ``session_id``'s transcript to ``target``; returns entries written.

    With ``ws`` the in-flight runs lovia web links to the chat follow the
    stored history, behind the seam, as ``show`` prints them.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    if isinstance(target, Path):
        with target.open("w", encoding="utf-8") as handle:
            return await export_session(
                db, session_id, fmt, handle, ws=ws, stale_after=stale_after
            )
    written = 0
    segments = await queries.segments(db, session_id)
    if fmt == "md":
        target.write(
            f"# Session {session_id}\n\n_{len(segments)} runs, from {db.path}_\n"
        )
    else:
        target.write(
            json.dumps(
                {"session_id": session_id, "file": str(db.path)}, ensure_ascii=False
            )[:-1]
            + ', "segments": [\n'
        )
    number = 0
    async for item in stored_segments(db, segments):
        entries = [{"index": e.index, **e.data} for e in item.entries]
        written += len(entries)
        if fmt == "md":
            when = timestamp(item.segment.created_at)
            heading = f"Run `{item.segment.run_id}` · {when}"
            target.write(_markdown_segment(heading, entries, item.problem))
        else:
            record = {
                "run_id": item.segment.run_id,
                "created_at": item.segment.created_at,
                "entries": entries,
            }
            if item.problem:
                record["unreadable"] = item.problem
            target.write(
                ("," if number else "") + json.dumps(record, ensure_ascii=False) + "\n"
            )
        number += 1
    flights = (
        await in_flight(
            ws, db, session_id, total_entries(segments), stale_after=stale_after
        )
        if ws is not None
        else []
    )
    for flight in flights:
        written += len(flight.entries)
        if fmt == "md":
            entries = [{"index": e.index, **e.data} for e in flight.entries]
            problem = "; ".join(flight.problems) or None
            target.write(_markdown_segment(seam_title(flight), entries, problem))
    if fmt == "json":
        tail = json.dumps(in_flight_fields(flights), ensure_ascii=False)
        target.write(f"], {tail[1:]}\n")
    return written


def _markdown_segment(heading: str, entries: list[dict], problem: str | None) -> str:
    lines = [f"\n## {heading}\n"]
    if problem:
        lines.append(f"> unreadable: {problem}\n")
    for entry in entries:
        kind = entry.get("type")
        label = entry.get("role") if kind == "input" else str(kind).replace("_text", "")
        if kind == "tool_call":
            lines.append(
                f"**#{entry['index']} tool call `{entry.get('name')}`**\n\n```json\n{entry.get('arguments')}\n```\n"
            )
        elif kind == "tool_result":
            error = " (error)" if entry.get("is_error") else ""
            lines.append(
                f"**#{entry['index']} tool result{error}** `{entry.get('call_id')}`\n\n```\n{entry.get('output')}\n```\n"
            )
        else:
            lines.append(f"**#{entry['index']} {label}**\n\n{entry_text(entry)}\n")
    return "\n".join(lines)
