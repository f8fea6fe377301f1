"""Actions through lovia for scripts: ``rewind``, ``trim``, ``delete-run``,
``finalize``, ``clear``, and the journal behind them: ``journal``, ``undo``.

Each prints what it would do and changes nothing unless ``--yes``; ``--json``
prints ``{"preview": ..., "result": ... | null}``. Every change is journaled
(``--reason`` is recorded with it) and ``undo`` puts the rows back.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from rich.table import Table

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_json,
    add_readonly,
    add_stale_after,
    console,
    open_workspace,
    print_json,
    split_paths_and_id,
    split_paths_and_ids,
)
from lovia_tui.core.actions.describe import describe
from lovia_tui.core.actions.journal import Journal, JournalEntry
from lovia_tui.core.actions.perform import load_lovia, perform, undo
from lovia_tui.core.actions.previews import Preview, preview_dict
from lovia_tui.core.actions.run_plans import preview_delete_runs, preview_finalize
from lovia_tui.core.actions.session_plans import (
    preview_clear,
    preview_rewind,
    preview_trim,
)
from lovia_tui.core.errors import ActionError, LoviaTuiError
from lovia_tui.core.formatting import command_line, timestamp
from lovia_tui.core.run_status import STATUS_FILTERS
from lovia_tui.core.store.workspace import Workspace, resolve_paths


def _print_lines(lines: list[str]) -> None:
    out = console()
    for number, line in enumerate(lines):
        style = (
            "bold" if number == 0 else "yellow" if line.startswith("WARNING") else ""
        )
        out.print(line, style=style)


def _configure_action(
    parser: argparse.ArgumentParser, ids: str, *, force: bool = True
) -> None:
    parser.add_argument("paths", nargs="+", metavar=f"PATH... {ids}")
    parser.add_argument(
        "--yes", action="store_true", help="do it (without: print what it would do)"
    )
    parser.add_argument("--reason", metavar="TEXT", help="why, recorded in the journal")
    add_json(parser)
    add_readonly(parser)
    if force:
        parser.add_argument(
            "--force",
            action="store_true",
            help="act even on a run saved recently (maybe live)",
        )
        add_stale_after(parser)


async def _act(
    args: argparse.Namespace, make: Callable[[Workspace], Awaitable[Preview]]
) -> int:
    """Preview, then perform only with ``--yes``; print either way."""
    if args.yes:
        load_lovia()  # before the preview: the rows have less time to move on
    ws = await open_workspace(args)
    try:
        preview = await make(ws)
        result = await perform(ws, preview, reason=args.reason) if args.yes else None
    finally:
        await ws.close()
    if args.json:
        print_json(
            {
                "preview": preview_dict(preview),
                "result": asdict(result) if result else None,
            }
        )
        return EXIT_OK
    _print_lines(describe(preview))
    if result is None:
        if not preview.noop:
            console().print("nothing changed: add --yes to do it", style="dim")
    elif result.journal_id is not None:
        counts = ", ".join(
            f"{k.replace('_', ' ')} {v}" for k, v in result.counts.items()
        )
        console().print(
            f"done: {counts}; undo with "
            f"`{command_line('undo', *ws.paths, result.journal_id)}`",
            style="green",
            markup=False,
        )
        for warning in result.warnings:
            console().print(warning, style="yellow", markup=False)
    return EXIT_OK


def _configure_rewind(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "SESSION_ID")
    parser.add_argument(
        "--keep",
        type=int,
        required=True,
        metavar="N",
        help="keep the first N flat entries",
    )


async def _rewind(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    return await _act(
        args,
        lambda ws: preview_rewind(
            ws, session_id, args.keep, force=args.force, stale_after=args.stale_after
        ),
    )


def _configure_trim(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "SESSION_ID", force=False)
    parser.add_argument(
        "--keep-chars",
        type=int,
        default=400,
        metavar="N",
        help="keep N chars of each output (400)",
    )
    parser.add_argument(
        "--keep-runs",
        type=int,
        default=1,
        metavar="N",
        help="leave the last N runs whole (1)",
    )


async def _trim(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    return await _act(
        args, lambda ws: preview_trim(ws, session_id, args.keep_chars, args.keep_runs)
    )


def _configure_delete_run(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "[RUN_ID...]")
    parser.add_argument(
        "--status", choices=STATUS_FILTERS, help="only checkpoints with this status"
    )
    parser.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="only checkpoints not saved for DAYS days",
    )


async def _delete_run(args: argparse.Namespace) -> int:
    args.paths, run_ids = split_paths_and_ids(args.paths, "[RUN_ID...]")
    return await _act(
        args,
        lambda ws: preview_delete_runs(
            ws,
            run_ids,
            status=args.status,
            older_than_days=args.older_than,
            force=args.force,
            stale_after=args.stale_after,
        ),
    )


def _configure_finalize(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "RUN_ID")
    parser.add_argument(
        "--session",
        metavar="SID",
        help="the session to fold it into, when nothing links the run",
    )


async def _finalize(args: argparse.Namespace) -> int:
    args.paths, run_id = split_paths_and_id(args.paths, "RUN_ID")
    return await _act(
        args,
        lambda ws: preview_finalize(
            ws, run_id, args.session, force=args.force, stale_after=args.stale_after
        ),
    )


def _configure_clear(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "SESSION_ID")


async def _clear(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    return await _act(
        args,
        lambda ws: preview_clear(
            ws, session_id, force=args.force, stale_after=args.stale_after
        ),
    )


def _entry_dict(entry: JournalEntry) -> dict[str, Any]:
    return {**asdict(entry), "undoable": entry.undoable is None}


def _subject(entry: JournalEntry) -> str:
    """The entry's own summary; worked out from its parameters in older journals."""
    if entry.subject:
        return entry.subject
    params = entry.params
    if entry.action == "undo":
        return f"entry {params.get('entry')} ({params.get('action')})"
    if "session_id" in params:
        return f"session {params['session_id']}"
    return ", ".join(c["run_id"] for c in params.get("checkpoints", [])) or "-"


def _configure_journal(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument(
        "--limit", type=int, default=50, help="at most N entries (default 50)"
    )
    add_json(parser)


async def _journal(args: argparse.Namespace) -> int:
    journal = Journal()
    entries = await journal.entries(resolve_paths(args.paths), args.limit)
    if args.json:
        print_json([_entry_dict(e) for e in entries])
        return EXIT_OK
    table = Table(
        "id", "time", "user", "action", "subject", "reason", "counts", "state"
    )
    for e in entries:
        state = f"undone by {e.undone_by}" if e.undone_by else e.status
        counts = ", ".join(f"{k} {v}" for k, v in e.counts.items())
        table.add_row(
            str(e.id),
            timestamp(e.created_at),
            e.user,
            e.action,
            _subject(e),
            e.reason or "",
            counts,
            state,
        )
    out = console()
    out.print(table)
    out.print(f"journal: {journal.path}", style="dim", markup=False)
    return EXIT_OK


def _configure_undo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH... [ID]")
    parser.add_argument(
        "--yes", action="store_true", help="do it (without: print what it would undo)"
    )
    add_json(parser)
    add_readonly(parser)


async def _undo(args: argparse.Namespace) -> int:
    args.paths, ids = split_paths_and_ids(args.paths, "[ID]")
    if len(ids) > 1 or (ids and not ids[0].isdigit()):
        raise LoviaTuiError(
            "expected PATH... [ID]: one journal entry id (see `lovia-tui journal`)"
        )
    journal = Journal()
    ws = await open_workspace(args)
    try:
        if ids:
            entry = await journal.get(int(ids[0]))
        else:
            found = await journal.last_undoable([db.path for db in ws.databases])
            if found is None:
                raise ActionError("nothing to undo in the journal for these files")
            entry = found
        if why := entry.undoable:
            raise ActionError(why)
        result = await undo(ws, entry.id, journal) if args.yes else None
    finally:
        await ws.close()
    if args.json:
        print_json(
            {
                "preview": _entry_dict(entry),
                "result": asdict(result) if result else None,
            }
        )
        return EXIT_OK
    out = console()
    out.print(
        f"undo journal entry {entry.id}: {entry.action} of {_subject(entry)} "
        f"at {timestamp(entry.created_at)} by {entry.user}"
        + (f" ({entry.reason})" if entry.reason else ""),
        style="bold",
    )
    if entry.unfinished:
        out.print(
            f"it never finished (interrupted, {entry.status}): the journaled rows "
            "now missing or altered are put back, the others left as they are",
            style="yellow",
        )
    out.print(f"restores its rows in {', '.join(entry.databases)}")
    if result is None:
        out.print("nothing changed: add --yes to do it", style="dim")
        return EXIT_OK
    removed = f", {result.rows_removed} it added removed" if result.rows_removed else ""
    out.print(
        f"done: {result.rows_restored} rows restored{removed} "
        f"(journal entry {result.undo_entry_id})",
        style="green",
        markup=False,
    )
    if entry.unfinished and result.rows_in_place:
        shown = ", ".join(result.in_place)
        more = result.rows_in_place - len(result.in_place)
        out.print(
            f"{result.rows_in_place} journaled rows were already in place (never "
            f"removed, or back already): {shown}"
            + (f" and {more} more" if more else ""),
            style="dim",
        )
    return EXIT_OK


COMMANDS = [
    Command(
        "rewind",
        "drop a session's tail after its first N entries (lovia rewind)",
        _configure_rewind,
        _rewind,
    ),
    Command(
        "trim",
        "shorten old stored tool outputs (lovia trim_tool_results)",
        _configure_trim,
        _trim,
    ),
    Command(
        "delete-run",
        "delete checkpoints by run id, status or age",
        _configure_delete_run,
        _delete_run,
    ),
    Command(
        "finalize",
        "fold an abandoned run into its session, as the web UI's Stop does",
        _configure_finalize,
        _finalize,
    ),
    Command(
        "clear",
        "remove every segment of a session (lovia clear)",
        _configure_clear,
        _clear,
    ),
    Command(
        "journal",
        "list the journaled actions on these files",
        _configure_journal,
        _journal,
    ),
    Command(
        "undo", "put back the rows a journaled action changed", _configure_undo, _undo
    ),
]
