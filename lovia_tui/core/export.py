"""Exporting a session's transcript to Markdown or JSON (for the app and CLI).

Streams segment by segment into the target, so a long session never has to
sit in memory whole, and writes from a thread, so the app's event loop never
waits on the disk. A file export keeps the text exactly as stored; an export
to a terminal is neutralized like every other output (see ``printable``).

A file is only ever created new (``O_EXCL``): an existing name is replaced
only when the caller says so (after asking the user), by a new file moved
over it, never by writing through it; a symbolic link at the name is never
followed or replaced. Files get the user's umask like any document they
save: an export is a file the user asked for, named by them, where they chose.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO

from lovia_tui.core.entries import UnreadableError, entry_text
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.formatting import printable, printable_json, timestamp
from lovia_tui.core.huge_text import expand, holds_huge, json_piece
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store import segment_reads
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.entry_stream import segment_entries_stream
from lovia_tui.core.store.spliced import (
    in_flight,
    in_flight_fields,
    seam_title,
    total_entries,
)
from lovia_tui.core.store.workspace import Workspace

FORMATS = ("md", "json")
NAME_CHARS = 40
"""Characters of the session id kept in a default file name (a hash tells ids apart)."""
WRITE_BYTES = 1 << 18
"""Characters gathered before one write (through a thread) to the target."""
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class ExportError(LoviaTuiError):
    """The export target is refused (it exists, or is a link or a directory)."""


def export_name(session_id: str, fmt: str) -> str:
    """A file name for ``session_id``'s export: safe on every file system, and
    distinct for distinct ids (``a/b`` and ``a_b``, or two ids sharing their
    first characters, differ in the hash of the exact id)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:NAME_CHARS]
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{readable.strip('._') or 'session'}-{digest[:12]}.{fmt}"


def free_path(directory: Path, session_id: str, fmt: str) -> Path:
    """The export name of ``session_id`` in ``directory``, numbered on if taken."""
    name = export_name(session_id, fmt)
    stem = name[: -len(fmt) - 1]
    path, number = directory / name, 2
    while target_state(path) != "free":
        path, number = directory / f"{stem}-{number}.{fmt}", number + 1
    return path


def target_state(path: Path) -> str:
    """``"free"``, ``"file"`` (a regular file: replaceable once confirmed), or
    ``"link"`` / ``"other"`` (never written to). Never follows a link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "free"
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "other"


def _refusal(path: Path) -> ExportError:
    state = target_state(path)
    if state == "link":
        return ExportError(f"{path} is a symbolic link: not followed, not replaced")
    if state == "file":
        return ExportError(f"{path} exists: not replaced without a confirmation")
    return ExportError(f"{path} exists and is not a regular file")


def _create(path: Path) -> IO[str]:
    """A new file at ``path`` (exclusive, never through a link)."""
    try:
        fd = os.open(path, _CREATE, 0o666)
    except FileExistsError:
        raise _refusal(path) from None
    return os.fdopen(fd, "w", encoding="utf-8")


async def export_to_file(
    db: Database,
    session_id: str,
    fmt: str,
    path: Path,
    *,
    replace: bool = False,
    ws: Workspace | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> int:
    """Write the export to a new file at ``path``; with ``replace``, an existing
    regular file there is replaced whole once the export is complete. A failed
    export leaves no partial file. Returns entries written (``ws``: as
    :func:`export_session`)."""
    if not replace:
        handle, written_to = await asyncio.to_thread(_create, path), path
    else:
        if await asyncio.to_thread(target_state, path) not in ("free", "file"):
            raise _refusal(path)
        written_to = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        handle = await asyncio.to_thread(_create, written_to)
    try:
        with handle:
            count = await export_session(
                db, session_id, fmt, handle, ws=ws, stale_after=stale_after
            )
        if written_to != path:
            await asyncio.to_thread(os.replace, written_to, path)
    except BaseException:
        await asyncio.to_thread(written_to.unlink, missing_ok=True)
        raise
    return count


async def export_session(
    db: Database,
    session_id: str,
    fmt: str,
    target: IO[str],
    *,
    terminal: bool = False,
    ws: Workspace | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> int:
    """Write ``session_id``'s transcript to ``target``; returns entries written.
    ``terminal``: the target is a screen (stdout), so what it would act on is
    made visible (Markdown) or escaped (JSON, still the same data). With
    ``ws`` the in-flight runs lovia web links to the chat follow the stored
    history, behind the seam, as ``show`` prints them."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    neutral: Callable[[str], str] = (
        (printable_json if fmt == "json" else _printable_lines) if terminal else str
    )

    pending: list[str] = []
    held = 0

    piece: Callable[[str], str] = json_piece if fmt == "json" else str

    async def put(text: str) -> None:
        # A huge stored string is a token in the text, written piece by piece.
        for part in expand(text, piece):
            await asyncio.to_thread(target.write, neutral(part))

    async def drain() -> None:
        nonlocal held
        if pending:
            joined = "".join(pending)
            pending.clear()
            held = 0
            await put(joined)

    async def write(text: str, *, flush: bool = True) -> None:
        """Write through a thread, in pieces of about ``WRITE_BYTES``: one
        thread hop per entry of a 100,000-entry segment cost seconds. A large
        text goes alone: joined to others it would be copied."""
        nonlocal held
        if len(text) >= WRITE_BYTES or holds_huge(text):
            await drain()
            await put(text)
            return
        pending.append(text)
        held += len(text)
        if flush or held >= WRITE_BYTES:
            await drain()

    segments = await segment_reads.segments(db, session_id)
    if fmt == "md":
        await write(
            f"# Session {session_id}\n\n_{len(segments)} runs, from {db.path}_\n"
        )
    else:
        await write(
            json.dumps(
                {"session_id": session_id, "file": str(db.path)}, ensure_ascii=False
            )[:-1]
            + ', "segments": [\n'
        )
    written = 0
    for number, segment in enumerate(segments):
        try:
            entries = await segment_entries_stream(db, segment, spare=True)
            problem = None
        except UnreadableError as exc:
            entries, problem = iter(()), str(exc)
        if fmt == "md":
            await write(
                _markdown_header(
                    segment.run_id, timestamp(segment.created_at), problem
                ),
                flush=False,
            )
            for entry in entries:
                await write(
                    _markdown_entry({"index": entry.index, **entry.data}), flush=False
                )
                written += 1
            continue
        head = {"run_id": segment.run_id, "created_at": segment.created_at}
        if problem:
            head["unreadable"] = problem
        await write(
            ("," if number else "")
            + json.dumps(head, ensure_ascii=False)[:-1]
            + ', "entries": [',
            flush=False,
        )
        # One entry at a time: a segment of a million is never whole in memory.
        for count, entry in enumerate(entries):
            if count:
                await write(",", flush=False)
            await write(
                json.dumps(
                    {"index": entry.index, **entry.data},
                    ensure_ascii=False,
                    default=str,
                ),
                flush=False,
            )
            written += 1
        await write("]}\n", flush=False)
    flights = (
        await in_flight(
            ws, db, session_id, total_entries(segments), stale_after=stale_after
        )
        if ws is not None
        else []
    )
    if fmt == "md":
        for flight in flights:
            problem = "; ".join(map(str, flight.problems)) or None
            await write(f"\n## {seam_title(flight)}\n\n", flush=False)
            if problem:
                await write(f"> unreadable: {problem}\n\n", flush=False)
            for entry in flight.entries:
                await write(
                    _markdown_entry({"index": entry.index, **entry.data}), flush=False
                )
                written += 1
        await write("")
        return written
    written += sum(len(flight.entries) for flight in flights)
    tail = json.dumps(in_flight_fields(flights), ensure_ascii=False)
    await write(f"], {tail[1:]}\n")
    return written


def _printable_lines(text: str) -> str:
    return printable(text, multiline=True)


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
