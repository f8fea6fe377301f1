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
from lovia_tui.core.entries import UnreadableError, entry_text
from lovia_tui.core.formatting import timestamp

FORMATS = ("md", "json")


async def export_session(
    db: Database, session_id: str, fmt: str, target: Path | IO[str]
) -> int:
    """Write ``session_id``'s transcript to ``target``; returns entries written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    if isinstance(target, Path):
        with target.open("w", encoding="utf-8") as handle:
            return await export_session(db, session_id, fmt, handle)
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
    for number, segment in enumerate(segments):
        try:
            entries = [
                {"index": e.index, **e.data}
                for e in await queries.segment_entries(db, segment)
            ]
            problem = None
        except UnreadableError as exc:
            entries, problem = [], str(exc)
        written += len(entries)
        if fmt == "md":
            target.write(
                _markdown_segment(
                    segment.run_id, timestamp(segment.created_at), entries, problem
                )
            )
        else:
            record = {
                "run_id": segment.run_id,
                "created_at": segment.created_at,
                "entries": entries,
            }
            if problem:
                record["unreadable"] = problem
            target.write(
                ("," if number else "") + json.dumps(record, ensure_ascii=False) + "\n"
            )
    if fmt == "json":
        target.write("]}\n")
    return written


def _markdown_segment(
    run_id: str, when: str, entries: list[dict], problem: str | None
) -> str:
    lines = [f"\n## Run `{run_id}` · {when}\n"]
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
