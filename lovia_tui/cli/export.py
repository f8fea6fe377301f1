"""``export``: a session's transcript as Markdown or JSON, to stdout or a new file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_paths_and_id,
    add_readonly,
    opened_session,
)
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.export import FORMATS, export_session, export_to_file
from lovia_tui.core.export_target import target_state
from lovia_tui.core.formatting import plural, printable


def output_file(text: str) -> Path | None:
    """``-o``'s file; ``-`` is stdout, as for most Unix tools."""
    if text == "-":
        return None
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, or - for stdout")
    return Path(text)


def _configure_export(parser: argparse.ArgumentParser) -> None:
    add_paths_and_id(parser, "SESSION_ID")
    parser.add_argument(
        "--format", choices=FORMATS, default="md", help="md (default) or json"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=output_file,
        help="write a new file (0600) here instead of stdout (-: stdout)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file, keeping its permissions (never a "
        "symbolic link, a SQLite database or one of its -wal/-shm/-journal)",
    )
    add_readonly(parser)


async def _export(args: argparse.Namespace) -> int:
    async with opened_session(args) as (ws, db, session_id):
        files = [d.path for d in ws.databases]
        if (
            args.output
            and not args.force
            and target_state(args.output, files) == "file"
        ):
            raise LoviaTuiError(f"{args.output} exists: add --force to replace it")
        if args.output:
            count = await export_to_file(
                db, session_id, args.format, args.output, replace=args.force, ws=ws
            )
        else:
            # stdout is a terminal as far as the export knows, piped or not:
            # nothing stored reaches it as a control sequence.
            await export_session(
                db, session_id, args.format, sys.stdout, terminal=True, ws=ws
            )
    if args.output:
        wrote = plural(count, "entry", "entries")
        print(printable(f"wrote {wrote} to {args.output}"), file=sys.stderr)
    return EXIT_OK


COMMANDS = [
    Command(
        "export",
        "write a session's transcript as Markdown or JSON",
        _configure_export,
        _export,
    ),
]
