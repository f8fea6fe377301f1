"""The journal behind every action, for scripts: ``journal`` lists (and
``--prune`` trims) it, ``undo`` puts an action's rows back.

``undo`` waits a few seconds (``--wait``) for an action still running in
another process, then refuses saying where it runs; ``--json`` prints
``{"preview": ..., "result": ... | null}`` as the actions do.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    UsageError,
    add_json,
    add_paths_and_id,
    add_readonly,
    console,
    open_workspace,
    split_paths_and_ids,
)
from lovia_tui.cli.data_console import DataTable
from lovia_tui.cli.json_output import (
    print_json,
)
from lovia_tui.cli.option_types import DAY, count, duration, duration_text
from lovia_tui.core.actions.describe import counts_text, undo_effect
from lovia_tui.core.actions.journal import UNDO_WAIT_SECONDS, Journal, JournalEntry
from lovia_tui.core.actions.journal_file import size_note
from lovia_tui.core.actions.journal_prune import DEFAULT_DAYS, prune
from lovia_tui.core.actions.journal_undo import stored_since
from lovia_tui.core.actions.perform import undo
from lovia_tui.core.errors import ActionError, LoviaTuiError
from lovia_tui.core.formatting import plural, printable, timestamp
from lovia_tui.core.store.workspace import resolve_paths


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
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="the files whose entries to list (needed, except with --prune, "
        "where none means every file's)",
    )
    parser.add_argument(
        "--limit",
        type=count(1),
        default=50,
        metavar="N",
        help="at most N entries (default 50)",
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="list settled entries older than --older-than; --yes removes them",
    )
    parser.add_argument(
        "--older-than",
        type=duration("d"),
        default=DEFAULT_DAYS * DAY,
        metavar="DURATION",
        help="with --prune: entries older than this (12h, 30d, plain days; "
        f"default {duration_text(DEFAULT_DAYS * DAY)})",
    )
    parser.add_argument("--yes", action="store_true", help="with --prune: do it")
    add_json(parser)
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="read the journal with SQLite mode=ro: nothing created or written "
        "(not with --prune)",
    )


async def _journal(args: argparse.Namespace) -> int:
    journal = Journal()
    files = resolve_paths(args.paths) if args.paths else None
    if args.prune:
        if args.readonly:
            raise LoviaTuiError("--readonly: --prune writes the journal")
        return await _prune(args, journal, files)
    if files is None:
        raise UsageError("expected PATH...: the files whose entries to list")
    entries = await journal.entries(files, args.limit, readonly=args.readonly)
    if args.json:
        print_json({"entries": [_entry_dict(e) for e in entries]})
        return EXIT_OK
    out = console()
    if not entries:
        out.print(f"no actions journaled on these files ({journal.path})", markup=False)
        return EXIT_OK
    table = DataTable(
        "id", "time", "user", "action", "subject", "reason", "counts", "state"
    )
    for e in entries:
        state = f"undone by {e.undone_by}" if e.undone_by else e.status
        if e.unfinished and (where := journal.running(e.id)):
            state = f"running in {where}"
        counts = counts_text(e.counts)
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
    out.print_table(table)
    out.print(f"journal: {journal.path}", style="dim", markup=False)
    if note := size_note(journal.path):
        out.print(note, style="yellow", markup=False)
    return EXIT_OK


async def _prune(
    args: argparse.Namespace, journal: Journal, files: list[Path] | None
) -> int:
    """List (or with ``--yes`` remove) the settled entries past the cut."""
    found = await prune(journal, args.older_than / DAY, files, apply=args.yes)
    if args.json:
        print_json(
            {"entries": [_entry_dict(e) for e in found], "removed": bool(args.yes)}
        )
        return EXIT_OK
    out = console()
    where = "on these files" if files else "in the journal"
    out.print(
        f"{plural(len(found), 'settled entry', 'settled entries')} {where} older than "
        f"{duration_text(args.older_than)} "
        f"({journal.path}); pending, failed and running ones are kept",
        style="bold",
        markup=False,
    )
    for e in found[:20]:
        out.print(
            f"  {e.id}  {timestamp(e.created_at)}  {e.action} of {_subject(e)}  {e.status}",
            markup=False,
        )
    if len(found) > 20:
        out.print(f"  and {len(found) - 20} more", markup=False)
    if not found:
        return EXIT_OK
    if args.yes:
        out.print(
            f"removed {plural(len(found), 'entry', 'entries')}: they can no longer be undone",
            style="green",
        )
    else:
        out.print(
            "nothing changed: add --yes to remove them (they can no longer be "
            "undone then)",
            style="dim",
        )
    return EXIT_OK


def _configure_undo(parser: argparse.ArgumentParser) -> None:
    add_paths_and_id(
        parser, "[ID]", "the journal entry's id (default: the newest on these files)"
    )
    parser.add_argument(
        "--yes", action="store_true", help="do it (without: print what it would undo)"
    )
    parser.add_argument(
        "--wait",
        type=duration("s"),
        default=UNDO_WAIT_SECONDS,
        metavar="DURATION",
        help="how long to wait for an action still running in another process "
        f"(30s, 2m, plain seconds; default {duration_text(UNDO_WAIT_SECONDS)})",
    )
    add_json(parser)
    add_readonly(parser)


async def _undo(args: argparse.Namespace) -> int:
    args.paths, ids = split_paths_and_ids(args.paths, "[ID]")
    if len(ids) > 1 or (ids and not (ids[0].isascii() and ids[0].isdigit())):
        raise UsageError(
            "expected PATH... [ID]: one journal entry id, as `lovia-tui journal` lists them"
        )
    journal = Journal()
    ws = await open_workspace(args)
    try:
        if ids:
            entry = await journal.get(int(ids[0]))
        else:
            found = await journal.last_undoable([db.path for db in ws.databases])
            if found is None:  # nothing to do: exit 0, as an action's no-op
                if args.json:
                    print_json({"preview": None, "result": None})
                else:
                    console().print("nothing to undo in the journal for these files")
                return EXIT_OK
            entry = found
        if why := entry.undoable:
            raise ActionError(why)
        running = journal.running(entry.id) if entry.unfinished else None
        result = await undo(ws, entry.id, journal, args.wait) if args.yes else None
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
        # Each stored value on one line: an id or reason holding a newline
        # must not add a line of its own to what the undo says it does.
        f"undo journal entry {entry.id}: {printable(entry.action)} of "
        f"{printable(_subject(entry))} at {timestamp(entry.created_at)} by "
        f"{printable(entry.user)}"
        + (f" ({printable(entry.reason)})" if entry.reason else ""),
        style="bold",
    )
    if entry.unfinished and running:
        out.print(
            f"it is running right now in {printable(running)}: an undo waits up to "
            f"{duration_text(args.wait)} for it to finish, then refuses",
            style="yellow",
        )
    elif entry.unfinished:
        out.print(
            f"it never finished (interrupted, {entry.status}): the journaled rows "
            "now missing or altered are put back, the others left as they are",
            style="yellow",
        )
    undone = await asyncio.to_thread(undo_effect, entry, journal.get_sync)
    out.print(
        f"restores its rows in {printable(', '.join(entry.databases))}"
        + (f": {undone}" if undone else "")
    )
    for line in await asyncio.to_thread(stored_since, journal, entry):
        out.print(printable(line), style="yellow", markup=False)
    if result is None:
        out.print("nothing changed: add --yes to do it", style="dim")
        return EXIT_OK
    if result.recorded:
        out.print(
            f"done already: its undo, journal entry {result.undo_entry_id}, had "
            "committed before it was interrupted; the journal now says so",
            style="green",
            markup=False,
        )
        return EXIT_OK
    rows = plural(result.rows_restored, "row") + " restored"
    if result.rows_removed:
        rows += f", {plural(result.rows_removed, 'row')} it added removed"
    out.print(
        f"done: {undone} ({rows}; journal entry {result.undo_entry_id})"
        if undone
        else f"done: {rows} (journal entry {result.undo_entry_id})",
        style="green",
        markup=False,
    )
    if entry.unfinished and result.rows_in_place:
        shown = printable(", ".join(result.in_place))
        more = result.rows_in_place - len(result.in_place)
        out.print(
            f"{plural(result.rows_in_place, 'journaled row')} "
            f"{'was' if result.rows_in_place == 1 else 'were'} already in place (never "
            f"removed, or back already): {shown}"
            + (f" and {more} more" if more else ""),
            style="dim",
        )
    return EXIT_OK


COMMANDS = [
    Command(
        "journal",
        "list the journaled actions on these files (or prune the journal)",
        _configure_journal,
        _journal,
    ),
    Command(
        "undo", "put back the rows a journaled action changed", _configure_undo, _undo
    ),
]
