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
from lovia_tui.core.entry_stream import segment_entries_stream
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
    written = 0
    for number, segment in enumerate(segments):
        try:
            entries = await segment_entries_stream(db, segment)
            problem = None
        except UnreadableError as exc:
            entries, problem = iter(()), str(exc)
        if fmt == "md":
            target.write(
                _markdown_header(segment.run_id, timestamp(segment.created_at), problem)
            )
            for entry in entries:
                target.write(_markdown_entry({"index": entry.index, **entry.data}))
                written += 1
            continue
        head = {"run_id": segment.run_id, "created_at": segment.created_at}
        if problem:
            head["unreadable"] = problem
        target.write(
            ("," if number else "")
            + json.dumps(head, ensure_ascii=False)[:-1]
            + ', "entries": ['
        )
        # One entry at a time: a segment of a million is never whole in memory.
        for count, entry in enumerate(entries):
            target.write(
                ("," if count else "")
                + json.dumps({"index": entry.index, **entry.data}, ensure_ascii=False)
            )
            written += 1
        target.write("]}\n")
    if fmt == "json":
        target.write("]}\n")
    return written


def _markdown_header(run_id: str, when: str, problem: str | None) -> str:
    return f"\n## Run `{run_id}` · {when}\n\n" + (
        f"> unreadable: {problem}\n\n" if problem else ""
    )


def _markdown_entry(entry: dict) -> str:
    kind = entry.get("type")
    label = entry.get("role") if kind == "input" else str(kind).replace("_text", "")
    if kind == "tool_call":
        return f"**#{entry['index']} tool call `{entry.get('name')}`**\n\n```json\n{entry.get('arguments')}\n```\n\n"
    if kind == "tool_result":
        error = " (error)" if entry.get("is_error") else ""
        return f"**#{entry['index']} tool result{error}** `{entry.get('call_id')}`\n\n```\n{entry.get('output')}\n```\n\n"
    return f"**#{entry['index']} {label}**\n\n{entry_text(entry)}\n\n"
