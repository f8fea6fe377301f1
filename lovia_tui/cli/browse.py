"""Read-only views for scripts: ``sessions``, ``show`` and ``runs``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_json,
    add_paths,
    add_readonly,
    add_stale_after,
    console,
    open_workspace,
    print_json,
    split_paths_and_id,
)
from lovia_tui.core import queries
from lovia_tui.core.entries import UnreadableError, dangling_calls, entry_text, shorten
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.export import FORMATS, export_session, export_to_file
from lovia_tui.core.formatting import age, printable, timestamp
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.workspace import Workspace


def _configure_sessions(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    add_json(parser)
    add_readonly(parser)
    parser.add_argument(
        "--search", metavar="TEXT", help="only sessions whose messages contain TEXT"
    )
    parser.add_argument(
        "--limit", type=int, default=50, help="at most N sessions (default 50)"
    )


async def _sessions(args: argparse.Namespace) -> int:
    ws = await open_workspace(args)
    try:
        summaries = []
        for db in ws.session_dbs:
            if args.search:
                ids: dict[str, None] = {}
                async for matches, _ in queries.search_segments(db, args.search):
                    ids.update((sid, None) for sid, _ in matches)
                    if len(ids) >= args.limit:
                        break
                for sid in list(ids)[: args.limit]:
                    summary = await queries.session_summary(db, sid)
                    if summary:
                        summaries.append(summary)
            else:
                summaries.extend(await queries.list_sessions(db, args.limit))
        summaries.sort(key=lambda s: s.last_activity or 0, reverse=True)
        summaries = summaries[: args.limit]
    finally:
        await ws.close()
    if args.json:
        print_json(
            [
                {
                    "session_id": s.session_id,
                    "title": s.title,
                    "runs": s.runs,
                    "last_activity": s.last_activity,
                    "file": str(s.file),
                }
                for s in summaries
            ]
        )
        return EXIT_OK
    table = Table("session", "title", "runs", "last activity", "file")
    for s in summaries:
        table.add_row(
            s.session_id, s.title, str(s.runs), timestamp(s.last_activity), s.file.name
        )
    console().print(table)
    return EXIT_OK


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH... SESSION_ID")
    add_json(parser)
    add_readonly(parser)


async def _session_db(ws: Workspace, session_id: str):
    """The file holding ``session_id``; a one-line error when none does."""
    db = await ws.find_session(session_id)
    if db is None:
        raise LoviaTuiError(f"no session {session_id!r} in the given files")
    return db


async def _show(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    ws = await open_workspace(args)
    try:
        db = await _session_db(ws, session_id)
        out = []
        for segment in await queries.segments(db, session_id):
            item: dict[str, Any] = {
                "run_id": segment.run_id,
                "created_at": segment.created_at,
                "started_at": segment.started_at,
                "finished_at": segment.finished_at,
                "entry_count": segment.entry_count,
                "first_index": segment.first_index,
            }
            try:
                entries = await queries.segment_entries(db, segment)
                item["entries"] = [{"index": e.index, **e.data} for e in entries]
            except UnreadableError as exc:
                item["unreadable"] = str(exc)
            out.append(item)
    finally:
        await ws.close()
    if args.json:
        print_json({"session_id": session_id, "file": str(db.path), "segments": out})
        return EXIT_OK
    out_console = console()
    for item in out:
        out_console.rule(f"run {item['run_id']} · {timestamp(item['created_at'])}")
        if "unreadable" in item:
            out_console.print(f"unreadable: {item['unreadable']}", style="red")
            continue
        for entry in item["entries"]:
            label = entry.get("role") if entry["type"] == "input" else entry["type"]
            index = (
                "?" if entry["index"] is None else entry["index"]
            )  # after an unreadable segment
            out_console.print(
                f"{index:>5}  {label:<14} {shorten(entry_text(entry), 100)}"
            )
    return EXIT_OK


def _configure_runs(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    add_json(parser)
    add_readonly(parser)
    add_stale_after(parser)
    parser.add_argument(
        "--status",
        choices=["running", "stale", "interrupted", "failed", "completed"],
        help="only runs with this status (stale: running with no recent save)",
    )


async def run_records(ws: Workspace, stale_after: float) -> list[dict[str, Any]]:
    """One plain record per checkpoint, as ``runs --json`` prints it."""
    now = time.time()
    all_runs = await ws.all_runs()
    links = await ws.links(run.run_id for run in all_runs)
    records = []
    for run in all_runs:
        entries, _ = await queries.snapshot_entries(ws.database(run.file), run.run_id)
        records.append(_record(run, links.get(run.run_id), entries, now, stale_after))
    return records


def _record(
    run: RunInfo,
    link: SessionLink | None,
    entries: list,
    now: float,
    stale_after: float,
) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "agent": run.agent_name,
        "turns": run.turns,
        "usage": run.usage,
        "started_at": run.started_at,
        "updated_at": run.updated_at,
        "age_s": round(now - run.updated_at, 3),
        "stale": run.is_stale(now, stale_after),
        "entries": run.entries,
        "dangling": [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in dangling_calls([e.data for e in entries])
        ],
        "session_id": link.session_id if link else None,
        "session_link": link.kind if link else None,
        "file": str(run.file),
    }


async def _runs(args: argparse.Namespace) -> int:
    ws = await open_workspace(args)
    try:
        records = await run_records(ws, args.stale_after)
    finally:
        await ws.close()
    if args.status == "stale":
        records = [r for r in records if r["stale"]]
    elif args.status:
        records = [r for r in records if r["status"] == args.status]
    if args.json:
        print_json(records)
        return EXIT_OK
    table = Table(
        "run", "status", "agent", "turns", "age", "dangling", "session", "file"
    )
    for column in (table.columns[0], table.columns[6]):
        column.overflow, column.no_wrap = "fold", False
    for r in records:
        status = "stale (crashed?)" if r["stale"] else r["status"]
        dangling = ", ".join(d["name"] for d in r["dangling"]) or "-"
        session = r["session_id"] or "unlinked"
        table.add_row(
            r["run_id"],
            status,
            r["agent"],
            str(r["turns"]),
            age(r["age_s"]),
            dangling,
            session,
            r["file"],
        )
    console().print(table)
    return EXIT_OK


def _configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH... SESSION_ID")
    parser.add_argument(
        "--format", choices=FORMATS, default="md", help="md (default) or json"
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="write a new file here instead of stdout"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file (never a symbolic link)",
    )
    add_readonly(parser)


async def _export(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    ws = await open_workspace(args)
    try:
        db = await _session_db(ws, session_id)
        if args.output:
            count = await export_to_file(
                db, session_id, args.format, args.output, replace=args.force
            )
        else:
            # stdout is a terminal as far as the export knows, piped or not:
            # nothing stored reaches it as a control sequence.
            await export_session(db, session_id, args.format, sys.stdout, terminal=True)
    finally:
        await ws.close()
    if args.output:
        print(printable(f"wrote {count} entries to {args.output}"), file=sys.stderr)
    return EXIT_OK


COMMANDS = [
    Command(
        "sessions",
        "list sessions, most recently active first",
        _configure_sessions,
        _sessions,
    ),
    Command(
        "show",
        "print a session's segments and entries with flat indices",
        _configure_show,
        _show,
    ),
    Command(
        "runs",
        "list checkpoints: status, staleness, dangling calls, session",
        _configure_runs,
        _runs,
    ),
    Command(
        "export",
        "write a session's transcript as Markdown or JSON",
        _configure_export,
        _export,
    ),
]
