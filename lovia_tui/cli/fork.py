"""``fork``: the first N flat entries of a session become a new session, through
lovia (lovia web's own fork for its chats); journaled, so ``undo`` removes it."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    UsageError,
    add_json,
    add_paths_and_id,
    add_yes_or_readonly,
    console,
    not_done,
    open_workspace,
    print_preview,
    split_paths_and_id,
)
from lovia_tui.cli.json_output import (
    print_json,
)
from lovia_tui.cli.option_types import count
from lovia_tui.core.actions.describe import describe
from lovia_tui.core.actions.fork import perform_fork, preview_fork
from lovia_tui.core.formatting import command_line, printable


def _configure_fork(parser: argparse.ArgumentParser) -> None:
    add_paths_and_id(parser, "SESSION_ID")
    parser.add_argument(
        "--keep",
        type=count(0),
        required=True,
        metavar="N",
        help="copy the first N flat entries (N past the end: nothing to do)",
    )
    parser.add_argument(
        "--as",
        dest="new_id",
        metavar="NEW_ID",
        help="the new session's id (default: a fresh one; lovia web names its own)",
    )
    parser.add_argument("--reason", metavar="TEXT", help="why, recorded in the journal")
    add_json(parser)
    add_yes_or_readonly(parser)


async def _fork(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    if args.new_id == "":  # not "a fresh one", which leaving --as out asks for
        raise UsageError("argument --as: expected the new session's id")
    ws = await open_workspace(args)
    try:
        preview = await preview_fork(ws, session_id, args.keep, args.new_id)
        result = (
            await perform_fork(ws, preview, reason=args.reason) if args.yes else None
        )
    finally:
        await ws.close()
    if args.json:
        print_json(
            {"preview": preview.as_dict(), "result": asdict(result) if result else None}
        )
        return EXIT_OK
    print_preview(describe(preview))
    out = console()
    if result is None:
        if not preview.noop:
            out.print(not_done(args), style="dim")
    elif result.journal_id is not None:
        out.print(
            f"done: new session {printable(result.new_session_id)}; undo with "
            f"`{command_line('undo', *ws.paths, result.journal_id)}`",
            style="green",
        )
    return EXIT_OK


COMMANDS = [
    Command(
        "fork",
        "copy a session's first N entries into a new session (nothing is removed)",
        _configure_fork,
        _fork,
    )
]
