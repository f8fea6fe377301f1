"""``export``: a session's transcript as Markdown or JSON, to stdout or a new file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_readonly,
    opened_session,
)
from lovia_tui.core.export import FORMATS, export_session, export_to_file
from lovia_tui.core.formatting import printable


def _configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH... SESSION_ID")
    parser.add_argument(
        "--format", choices=FORMATS, default="md", help="md (default) or json"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        help="write a new file (0600) here instead of stdout",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file, keeping its permissions (never a "
        "symbolic link, nor a file of the database being read)",
    )
    add_readonly(parser)


async def _export(args: argparse.Namespace) -> int:
    async with opened_session(args) as (ws, db, session_id):
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
        print(printable(f"wrote {count} entries to {args.output}"), file=sys.stderr)
    return EXIT_OK


COMMANDS = [
    Command(
        "export",
        "write a session's transcript as Markdown or JSON",
        _configure_export,
        _export,
    ),
]
