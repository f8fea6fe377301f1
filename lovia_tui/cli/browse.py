"""Read-only views of sessions for scripts: ``sessions`` and ``show``
(``runs``: :mod:`lovia_tui.cli.runs`)."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Iterator
from itertools import islice
from typing import Any

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_json,
    add_paths,
    add_paths_and_id,
    add_readonly,
    add_stale_after,
    console,
    note,
    open_workspace,
    opened_session,
)
from lovia_tui.cli.json_output import (
    print_json,
    print_json_lazy,
)
from lovia_tui.cli.option_types import MOST, count
from lovia_tui.core.context_meta import STATE_KEY, context_line, notice_line, notice_of
from lovia_tui.core.entries import UnreadableError, entry_text
from lovia_tui.core.formatting import PIN, plural, printable, printable_id, timestamp
from lovia_tui.core.huge_text import shortened
from lovia_tui.core.models import SegmentInfo, SessionSummary
from lovia_tui.core.run_status import (
    DANGLING_CALL,
    RUNNING_CALL,
)
from lovia_tui.core.search import substring
from lovia_tui.core.store import segment_reads, session_reads, web_chats, web_records
from lovia_tui.core.store.entry_stream import SegmentReader
from lovia_tui.core.store.spliced import (
    in_flight,
    in_flight_fields,
    seam_title,
    total_entries,
)
from lovia_tui.core.stored import UNREADABLE_SHOWN, unbindable
from lovia_tui.core.web_models import RunRecord, chat_lines, record_line

LINES_PER_PRINT = 500
"""Entry lines of ``show`` printed at once (:func:`_print_lines`)."""


def _configure_sessions(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    add_json(parser)
    add_readonly(parser)
    parser.add_argument(
        "--search",
        metavar="TEXT",
        help="only sessions whose stored JSON contains TEXT, exactly as typed "
        '(case counts, and keys such as "role" match too: a raw scan of the '
        "segments, not of a run in flight); `lovia-tui search` finds words",
    )
    parser.add_argument(
        "--limit",
        type=count(1),
        default=50,
        metavar="N",
        help="at most N sessions (default 50)",
    )


async def _sessions(args: argparse.Namespace) -> int:
    want = min(args.limit + 1, MOST)  # one past the limit: whether more exist
    ws = await open_workspace(args)
    try:
        summaries: list[SessionSummary] = []
        for db in ws.session_dbs:
            if args.search:
                ids: dict[str, None] = {}
                async for matches, _ in substring.search_segments(db, args.search):
                    ids.update((sid, None) for sid, _ in matches)
                    if len(ids) >= want:
                        break
                sids = list(ids)[:want]
            else:
                sids = [sid for sid, _ in await session_reads.recent_sessions(db, want)]
            summaries.extend(await session_reads.summaries_in_order(db, sids))
            for sid in sids:
                if why := unbindable("session", sid):
                    # Never left out unsaid: the app lists it, the doctor names it.
                    note(f"{db.path}: not listed: {why}")
        summaries.sort(key=lambda s: (s.pinned, s.last_activity or 0), reverse=True)
        more = len(summaries) > args.limit
        listed = {(s.file, s.session_id): s for s in summaries[: args.limit]}
        summaries = web_chats.under_parents(
            list(listed.values()), lambda s: listed.get((s.file, s.parent_id or ""))
        )
    finally:
        await ws.close()
    if args.json:
        print_json(
            {
                "sessions": [
                    {
                        "session_id": s.session_id,
                        "title": s.title,
                        "pinned": s.pinned,
                        "parent_id": s.parent_id,
                        "runs": s.runs,
                        "last_activity": s.last_activity,
                        "file": str(s.file),
                    }
                    for s in summaries
                ],
                "more": more,
            }
        )
        return EXIT_OK
    if more:
        note(
            f"the newest {plural(args.limit, 'session')} only; more exist (--limit N shows more)"
        )
    from lovia_tui.cli.data_console import DataTable

    table = DataTable("session", "title", "runs", "last activity", "file")
    for s in summaries:
        table.add_row(
            f"↳ {printable_id(s.session_id)}"
            if s.parent_id
            else printable_id(s.session_id),
            f"{PIN}{s.title}" if s.pinned else s.title,
            str(s.runs),
            timestamp(s.last_activity, UNREADABLE_SHOWN),
            str(s.file),
        )
    console().print_table(table)
    return EXIT_OK


def _configure_show(parser: argparse.ArgumentParser) -> None:
    add_paths_and_id(parser, "SESSION_ID")
    add_json(parser)
    add_readonly(parser)
    add_stale_after(parser)


async def _show(args: argparse.Namespace) -> int:
    async with opened_session(args) as (ws, db, session_id):
        segments = await segment_reads.segments(db, session_id)
        flights = await in_flight(
            ws, db, session_id, total_entries(segments), stale_after=args.stale_after
        )
        chat = await web_chats.chat_info(db, session_id)
        records = web_records.session_records(db, session_id)
        if args.json:
            await print_json_lazy(
                {
                    "session_id": session_id,
                    "file": str(db.path),
                    "chat": chat.as_dict() if chat else None,
                    "segments": _segment_items(SegmentReader(db, segments)),
                    **in_flight_fields(flights),
                    "runs": (record.as_dict() async for record in records),
                }
            )
            return EXIT_OK
        out_console = console()
        for line in chat_lines(chat) if chat else []:
            out_console.print(printable(line), style="bold")
        reader = SegmentReader(db, segments)
        notes = await web_records.run_notes(
            db, session_id, [segment.run_id for segment in segments]
        )
        async for placed in web_records.interleave(
            segments,
            lambda segment: segment.created_at,
            web_records.unsaved(db, records),
        ):
            if isinstance(placed, RunRecord):
                line = record_line(placed)
                out_console.print(
                    printable(f"  {line}"), style="red" if line[0] == "✖" else "dim"
                )
                continue
            item = await _segment_item(reader, placed)
            by = f" · {notes[placed.run_id]}" if placed.run_id in notes else ""
            out_console.rule(
                f"run {item['run_id']} · {timestamp(item['created_at'], UNREADABLE_SHOWN)}{by}"
            )
            meta = item.get("meta")
            context = context_line(meta.get(STATE_KEY)) if meta else None
            if context:
                out_console.print(f"       context: {context}", style="dim")
            if "unreadable" in item:
                out_console.print(f"unreadable: {item['unreadable']}", style="red")
                continue
            lines = (_entry_line(e["index"], e) for e in item["entries"])
            _print_lines(out_console, lines)
            notice = notice_of(meta)
            if notice is not None:
                out_console.print(f"       ⟲ {notice_line(notice)}", style="italic")
        _print_flights(out_console, flights)
    return EXIT_OK


def _print_lines(out_console, lines: Iterator[str]) -> None:
    """Plain lines, :data:`LINES_PER_PRINT` to a print: Rich's cost is mostly
    per call (one print a line: ``show`` of a 5,000-run session, 60,000 lines,
    took 4.0 s), and a giant segment's lines are never all held at once."""
    while chunk := list(islice(lines, LINES_PER_PRINT)):
        out_console.print("\n".join(chunk))


async def _segment_items(reader: SegmentReader) -> AsyncIterator[dict]:
    """Each segment as ``show`` prints it, its meta as stored (the context
    state and compaction notice lovia keeps there), its entries an iterator:
    a batch of small segments is read at a time, a large one entry by entry."""
    for segment in reader.segments:
        yield await _segment_item(reader, segment)


async def _segment_item(reader: SegmentReader, segment: SegmentInfo) -> dict[str, Any]:
    item: dict[str, Any] = {
        "run_id": segment.run_id,
        "created_at": segment.created_at,
        "started_at": segment.started_at,
        "finished_at": segment.finished_at,
        "entry_count": segment.entry_count,
        "first_index": segment.first_index,
    }
    try:
        item["meta"] = await reader.meta(segment)
    except UnreadableError as exc:
        item["meta_unreadable"] = str(exc)
    try:
        entries = await reader.entries(segment, spare=True)
        item["entries"] = ({"index": e.index, **e.data} for e in entries)
    except UnreadableError as exc:
        item["unreadable"] = str(exc)
    return item


def _print_flights(out_console, flights: list) -> None:
    """The in-flight runs behind the seam, as the app shows them."""
    from rich.text import Text

    for flight in flights:
        out_console.rule(seam_title(flight), characters="━")
        for problem in flight.problems:
            out_console.print(f"unreadable: {problem}", style="red")
        pending = {call.call_id for call in flight.dangling}
        for entry in flight.entries:
            # A Text, to carry the call's marker (not made printable by the console).
            line = Text(printable(_entry_line(entry.index, entry.data)))
            if (
                entry.data.get("type") == "tool_call"
                and entry.data.get("call_id") in pending
            ):
                line.append(
                    f"  {RUNNING_CALL if flight.live else DANGLING_CALL}", style="bold"
                )
            out_console.print(line)


def _entry_line(index: int | None, data: dict[str, Any]) -> str:
    """One entry as ``show`` prints it: flat index ("?" after an unreadable
    segment), kind, the start of its text."""
    shown = "?" if index is None else index
    return f"{shown:>5}  {_label(data):<14} {shortened(entry_text(data), 100)}"


def _label(data: dict[str, Any]) -> str:
    """An entry's label in ``show``: an input's role, any other entry's type
    (a role another writer stored as a list, or none, is shown as stored); a
    tool result lovia marked an error (a denied approval, a failed tool) says so."""
    if data.get("type") == "tool_result" and data.get("is_error") is True:
        return "tool_result (error)"
    return str(data.get("role") if data.get("type") == "input" else data.get("type"))


COMMANDS = [
    Command(
        "sessions",
        "list sessions, most recently active first",
        _configure_sessions,
        _sessions,
    ),
    Command(
        "show",
        "print a session's segments and entries with flat indices, then its in-flight run",
        _configure_show,
        _show,
    ),
]
