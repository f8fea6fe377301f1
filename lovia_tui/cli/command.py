"""What a subcommand is, and the plumbing every subcommand shares.

Each module under ``lovia_tui.cli`` lists its subcommands as :class:`Command`
values; errors surface as one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import io
import json
import os
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from lovia_tui.core.errors import LoviaTuiError, os_error_text
from lovia_tui.core.formatting import printable, printable_json
from lovia_tui.core.workspace import Workspace

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help, arguments and async body."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Awaitable[int] | int]


def add_paths(parser: argparse.ArgumentParser, *, nargs: str = "+") -> None:
    parser.add_argument(
        "paths",
        nargs=nargs,
        metavar="PATH",
        help="lovia SQLite file(s) or directories of *.db",
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON instead of tables"
    )


def add_readonly(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="open with SQLite mode=ro: no write of any kind",
    )


def add_stale_after(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stale-after",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a running run with no save for this long is stale (likely crashed); default 300",
    )


def split_paths_and_id(paths: list[str], what: str) -> tuple[list[str], str]:
    """``PATH... ID``: the last positional is the id."""
    if len(paths) < 2:
        raise LoviaTuiError(f"expected PATH... {what}")
    return paths[:-1], paths[-1]


def split_paths_and_ids(
    positionals: list[str], what: str
) -> tuple[list[str], list[str]]:
    """``PATH... [ID...]``: leading positionals naming an existing file or directory
    are paths, the rest are ids."""
    count = 0
    while count < len(positionals) and Path(positionals[count]).exists():
        count += 1
    if count == 0:
        first = (
            f": {positionals[0]!r} is not a file or directory" if positionals else ""
        )
        raise LoviaTuiError(f"expected PATH... {what}{first}")
    return positionals[:count], positionals[count:]


async def open_workspace(args: argparse.Namespace) -> Workspace:
    return await Workspace.open(args.paths, readonly=getattr(args, "readonly", False))


def _encodes_everything(stream: Any) -> bool:
    """Whether ``stream`` can write any character (a UTF encoding)."""
    try:
        "\U0001f5fe".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def tolerate_narrow_output() -> None:
    """Under a non-UTF-8 locale (``LANG=C``, ``PYTHONIOENCODING=ascii``) print
    what the terminal cannot show as "?" instead of failing on the first emoji."""
    for stream in (sys.stdout, sys.stderr):
        if (
            isinstance(stream, io.TextIOWrapper)
            and stream.errors == "strict"
            and not _encodes_everything(stream)
        ):
            stream.reconfigure(errors="replace")


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """``data`` as JSON to print: exact, with what a terminal would act on
    escaped (\\u escapes also where stdout cannot encode a character)."""
    return printable_json(
        json.dumps(
            data,
            ensure_ascii=not _encodes_everything(sys.stdout),
            indent=indent,
            default=str,
        )
    )


def print_json(data: Any) -> None:
    print(json_text(data))


class DataConsole(Console):
    """A console for text that quotes stored data: strings are never read as
    markup and come out printable (table cells, rules, plain prints alike).
    Code that builds a :class:`~rich.text.Text` passes data through
    :func:`printable` itself."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = kwargs["emoji"] = False
        return super().render_str(printable(text, multiline=True), **kwargs)


def console(*, stderr: bool = False) -> Console:
    return DataConsole(highlight=False, markup=False, emoji=False, stderr=stderr)


def fail(message: str) -> int:
    print(f"lovia-tui: {printable(message)}", file=sys.stderr)
    return EXIT_ERROR


def run_command(command: Command, args: argparse.Namespace) -> int:
    """Run a subcommand's body (sync or async); known errors become one line, exit 2."""
    try:
        result = command.run(args)
        return asyncio.run(result) if inspect.isawaitable(result) else result
    except LoviaTuiError as exc:
        return fail(str(exc))
    except sqlite3.Error as exc:
        # Raised where no file is known (the read layer names it when it can).
        return fail(f"SQLite error: {exc}")
    except KeyboardInterrupt:
        return fail("interrupted")
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        # A file the command writes (export -o): a missing directory, no
        # permission, a full disk.
        return fail(os_error_text(exc))
