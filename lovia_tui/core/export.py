"""Exporting a session's transcript to Markdown or JSON (for the app and CLI).

Streams segment by segment into the target, so a long session never has to
sit in memory whole, and writes from a thread, so the app's event loop never
waits on the disk. A file export keeps the text exactly as stored (JSON
whole; Markdown in its code blocks and messages, with ids and names on one
line); an export to a terminal is neutralized like every other output (see
``printable``).

A file is only ever created new (``O_EXCL``), 0600 like every file the tool
writes (the transcript is the user's conversation): an existing name is
replaced only when the caller says so (after asking the user), by a new file
with the replaced one's mode moved over it, never by writing through it; a
symbolic link at the name is never followed or replaced, and no SQLite
database's file is ever a target (:mod:`lovia_tui.core.export_target`).
Markdown keeps stored text from acting as markup or HTML
(:mod:`lovia_tui.core.markdown_text`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Any

from lovia_tui.core.entries import UnreadableError
from lovia_tui.core.export_target import refusal, target_state
from lovia_tui.core.formatting import plural, printable, printable_json, timestamp
from lovia_tui.core.huge_text import expand, holds_huge, json_piece
from lovia_tui.core.markdown_text import code_span, plain
from lovia_tui.core.markdown_transcript import context_block, entry_block, run_header
from lovia_tui.core.private_files import FILE_MODE, create_new_file
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store import segment_reads, web_chats, web_records
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.entry_stream import SegmentReader
from lovia_tui.core.store.spliced import (
    in_flight,
    in_flight_fields,
    seam_title,
    total_entries,
)
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import UNREADABLE_SHOWN, refuse_non_text
from lovia_tui.core.web_models import RunRecord, chat_lines, record_line

FORMATS = ("md", "json")
NAME_CHARS = 40
"""Characters of the session id kept in a default file name (a hash tells ids apart)."""
WRITE_BYTES = 1 << 18
"""Characters gathered before one write (through a thread) to the target."""


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
    while target_state(path) not in ("free", "no folder"):
        path, number = directory / f"{stem}-{number}.{fmt}", number + 1
    return path


def _create(path: Path, mode: int) -> IO[str]:
    """A new file at ``path`` with ``mode`` (exclusive, never through a link)."""
    try:
        fd = create_new_file(path, mode)
    except FileExistsError:
        raise refusal(path, target_state(path)) from None
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
    regular file there is replaced whole, keeping its mode, once the export is
    complete. A failed export leaves no partial file. Never a file of ``db``
    or of ``ws``'s databases. Returns entries written (``ws``: as
    :func:`export_session`)."""
    databases = [d.path for d in ws.databases] if ws is not None else [db.path]
    state = await asyncio.to_thread(target_state, path, databases)
    if state not in ("free", "file") or (state == "file" and not replace):
        raise refusal(path, state)
    if not replace:
        handle, written_to = await asyncio.to_thread(_create, path, FILE_MODE), path
    else:
        kept = await asyncio.to_thread(_mode_of, path)
        written_to = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        handle = await asyncio.to_thread(_create, written_to, kept)
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


def _mode_of(path: Path) -> int:
    """The permission bits of the regular file an export replaces (0600 when
    there is none any more)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return FILE_MODE
    return (
        stat.S_IMODE(status.st_mode) & 0o777
        if stat.S_ISREG(status.st_mode)
        else FILE_MODE
    )


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
    refuse_non_text("session", session_id)
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
    reader = SegmentReader(db, segments)
    notes = (
        await web_records.run_notes(db, session_id, [s.run_id for s in segments])
        if fmt == "md"
        else {}
    )
    chat = await web_chats.chat_info(db, session_id)
    if fmt == "md":
        await write(
            f"# Session {code_span(session_id)}\n\n"
            f"_{plural(len(segments), 'run')}, from {code_span(db.path)}_\n"
            + "".join(
                f"\n> {plain(line)}\n" for line in (chat_lines(chat) if chat else [])
            )
        )
    else:
        await write(
            json.dumps(
                {"session_id": session_id, "file": str(db.path)}, ensure_ascii=False
            )[:-1]
            + ', "segments": [\n'
        )
    written = 0
    # Markdown tells the chat's story: a run that saved nothing, where it happened.
    placed = web_records.interleave(
        segments,
        lambda segment: segment.created_at,
        web_records.unsaved(db, web_records.session_records(db, session_id))
        if fmt == "md"
        else _no_records(),
    )
    number = 0
    async for segment in placed:
        if isinstance(segment, RunRecord):
            await write(f"\n> {plain(record_line(segment))}\n", flush=False)
            continue
        try:
            meta = await reader.meta(segment)
            entries = await reader.entries(segment, spare=True)
            problem = None
        except UnreadableError as exc:
            meta, entries, problem = None, iter(()), str(exc)
        if fmt == "md":
            await write(
                run_header(
                    segment.run_id,
                    timestamp(segment.created_at, UNREADABLE_SHOWN),
                    problem,
                    notes.get(segment.run_id, ""),
                ),
                flush=False,
            )
            for entry in entries:
                await write(
                    entry_block({"index": entry.index, **entry.data}), flush=False
                )
                written += 1
            await write(context_block(meta), flush=False)
            continue
        head: dict[str, Any] = {
            "run_id": segment.run_id,
            "created_at": segment.created_at,
        }
        if meta is not None:
            head["meta"] = meta
        if problem:
            head["unreadable"] = problem
        await write(
            ("," if number else "")
            + json.dumps(head, ensure_ascii=False)[:-1]
            + ', "entries": [',
            flush=False,
        )
        number += 1
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
            await write(f"\n## {plain(seam_title(flight))}\n\n", flush=False)
            if problem:
                await write(f"> unreadable: {plain(problem)}\n\n", flush=False)
            for entry in flight.entries:
                await write(
                    entry_block({"index": entry.index, **entry.data}), flush=False
                )
                written += 1
        await write("")
        return written
    written += sum(len(flight.entries) for flight in flights)
    tail = json.dumps(
        {**in_flight_fields(flights), "chat": chat.as_dict() if chat else None},
        ensure_ascii=False,
    )
    await write(f"], {tail[1:-1]}, " + '"runs": [', flush=False)
    # lovia web's record of every run, a page of records at a time.
    count = 0
    async for record in web_records.session_records(db, session_id):
        await write(
            ("," if count else "") + json.dumps(record.as_dict(), ensure_ascii=False),
            flush=False,
        )
        count += 1
    await write("]}\n")
    return written


async def _no_records() -> AsyncIterator[RunRecord]:
    """No record to place (the JSON export lists them apart)."""
    return
    yield


def _printable_lines(text: str) -> str:
    return printable(text, multiline=True)
