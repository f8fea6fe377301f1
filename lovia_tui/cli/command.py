"""What a subcommand is, and the plumbing every subcommand shares.

Each module under ``lovia_tui.cli`` lists its subcommands as :class:`Command`
values. The exit statuses are the ones docs/cli.md tabulates: 0 done (a
preview included), 1 findings (``doctor``) or a run that did not complete
(``resume``, ``replay``), 2 a usage error or a refusal (one line on stderr),
130 interrupted by Ctrl+C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from lovia_tui.cli.option_types import (
    duration,
    duration_text,
    require_text,
    require_text_arguments,
)
from lovia_tui.core.errors import LoviaTuiError, os_error_text
from lovia_tui.core.formatting import clipped, printable
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace

if TYPE_CHECKING:
    from lovia_tui.cli.data_console import DataConsole

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class CommandParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line on stderr and exit 2, as every
    other refusal: the option named as it was typed, and where its help is."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("lovia-tui").strip()
        said = f"{where + ': ' if where else ''}{message} (see {self.prog} --help)"
        if _JsonErrors.lines is not None:
            from lovia_tui.cli.json_output import print_json_error

            print_json_error("usage", said, EXIT_ERROR, lines=_JsonErrors.lines)
        self.exit(EXIT_ERROR, f"lovia-tui: {printable(said)}\n")


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help, arguments and async body."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Coroutine[Any, Any, int] | int]
    json_lines: bool = False
    """``--json`` prints one object per line (an error ends it as one more)."""


def add_paths(parser: argparse.ArgumentParser) -> None:
    """``PATH...``, as the app takes them: none means ``./.lovia/*.db``."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="lovia SQLite file(s) or directories of *.db (default: ./.lovia/*.db)",
    )


def add_paths_and_id(
    parser: argparse.ArgumentParser, what: str, meaning: str = "the session's id"
) -> None:
    """``PATH... WHAT``: the files, then the one thing the command is about."""
    parser.add_argument(
        "paths",
        nargs="+",
        metavar=f"PATH... {what}",
        help=f"lovia SQLite file(s) or directories of *.db, then {meaning}",
    )


def add_json(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON instead of tables"
    )


def add_yes_or_readonly(parser: argparse.ArgumentParser) -> None:
    """An action's ``--yes``, or ``--readonly`` for its preview alone: not both."""
    either = parser.add_mutually_exclusive_group()
    either.add_argument(
        "--yes", action="store_true", help="do it (without: print what it would do)"
    )
    add_readonly(either)


def not_done(args: argparse.Namespace) -> str:
    """What an action previewed without ``--yes`` says last."""
    if args.readonly:
        return "nothing changed: --readonly previews only"
    return "nothing changed: add --yes to do it"


def add_readonly(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="open with SQLite mode=ro: no write of any kind",
    )


def add_stale_after(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stale-after",
        type=duration("s"),
        default=DEFAULT_STALE_AFTER,
        metavar="DURATION",
        help="a running run with no save for this long is stale (likely crashed): "
        f"30s, 5m, 2h, plain seconds; default {duration_text(DEFAULT_STALE_AFTER)}",
    )


class UsageError(LoviaTuiError):
    """Arguments the parser could not judge (which positional is the id):
    said as the parser says its own, the command named and its help."""


def split_paths_and_id(paths: list[str], what: str) -> tuple[list[str], str]:
    """``PATH... ID``: the last positional is the id."""
    if len(paths) < 2:
        raise UsageError(f"expected PATH... {what}")
    return paths[:-1], require_text(paths[-1], what)


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
        raise UsageError(f"expected PATH... {what}{first}")
    return positionals[:count], [require_text(i, what) for i in positionals[count:]]


async def open_workspace(
    args: argparse.Namespace, *, readonly: bool | None = None
) -> Workspace:
    """The command's files opened; what a file's opening had to say (read as
    immutable, WAL refused) goes to stderr, so no output hides it."""
    if readonly is None:
        readonly = getattr(args, "readonly", False)
    ws = await Workspace.open(args.paths, readonly=readonly)
    for why in ws.skipped:
        note(f"skipped {why}")
    for db in ws.databases:
        if db.notice:
            note(f"{db.path}: {db.notice}")
    return ws


def note(text: str) -> None:
    """A note on stderr, so no output hides it (stored text in it is escaped)."""
    print(f"lovia-tui: note: {printable(text)}", file=sys.stderr)


@asynccontextmanager
async def opened_session(
    args: argparse.Namespace,
) -> AsyncIterator[tuple[Workspace, Database, str]]:
    """``PATH... SESSION_ID`` opened: the workspace, the file holding the
    session, its id; a one-line error when no file holds it."""
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    ws = await open_workspace(args)
    try:
        db = await ws.find_session(session_id)
        if db is None:
            raise LoviaTuiError(f"no session {session_id!r} in the open files")
        yield ws, db, session_id
    finally:
        await ws.close()


@contextmanager
def progress_bar(
    start: str, *, shown: bool = True
) -> Iterator[Callable[[str, float], None] | None]:
    """A transient progress bar on standard error, where that is a terminal
    (and ``shown``): yields what moves it (what is read, the fraction done),
    or None where there is none."""
    if not (shown and sys.stderr.isatty()):
        yield None
        return
    # Imported for a terminal only: 40 ms of every scripted run's start.
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}", markup=False), BarColumn(),
        TimeElapsedColumn(), console=console(stderr=True), transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task(start, total=1.0)

        def progress(what: str, fraction: float) -> None:
            bar.update(task, description=printable(what), completed=fraction)

        yield progress


def console(*, stderr: bool = False) -> DataConsole:
    """Rich, for human output only (``--json`` never imports it)."""
    from lovia_tui.cli.data_console import DataConsole

    stream = sys.stderr if stderr else sys.stdout
    return DataConsole(
        highlight=False,
        markup=False,
        emoji=False,
        stderr=stderr,
        soft_wrap=not stream.isatty(),  # piped: a line goes out whole, ids unbroken
    )


def print_preview(lines: list[str]) -> None:
    """An action's preview, its first line bold and warnings yellow: each line
    one line, whatever ids, titles or reasons it quotes (a newline stored in
    an id shows as ␊ instead of forging a line of the preview)."""
    out = console()
    for number, line in enumerate(lines):
        style = (
            "bold" if number == 0 else "yellow" if line.startswith("WARNING") else ""
        )
        out.print(printable(line), style=style)


class _JsonErrors:
    """How the command running prints JSON, if it does: its errors too."""

    lines: bool | None = None
    """None: no ``--json``; True: one object per line; False: one object."""


def fail(message: str, code: int = EXIT_ERROR, kind: str = "refused") -> int:
    """Say why the command stops, as one line on stderr and, with ``--json``,
    as a JSON error object on stdout (see :func:`print_json_error`); ``code``."""
    print(f"lovia-tui: {clipped(printable(message))}", file=sys.stderr)
    if _JsonErrors.lines is not None:
        from lovia_tui.cli.json_output import print_json_error

        print_json_error(kind, clipped(message), code, lines=_JsonErrors.lines)
    return code


def wants_json(args: argparse.Namespace | list[str]) -> bool:
    """Whether a command was asked for JSON (its parsed or its raw arguments)."""
    if isinstance(args, list):
        return "--json" in args or "--jsonl" in args
    return bool(getattr(args, "json", False) or getattr(args, "jsonl", False))


def json_errors(
    command: Command | None, args: argparse.Namespace | list[str] | None = None
) -> None:
    """From now on, :func:`fail` and usage errors also print JSON if the
    command's ``args`` (parsed, or as typed before parsing) ask for it."""
    from lovia_tui.cli.json_output import json_started

    json_started()
    if command is None or args is None or not wants_json(args):
        _JsonErrors.lines = None
        return
    jsonl = "--jsonl" in args if isinstance(args, list) else getattr(args, "jsonl", 0)
    _JsonErrors.lines = command.json_lines or bool(jsonl)


def reader_gone() -> None:
    """The reader went away (`| head`): what is left to print goes nowhere,
    quietly, as with Unix tools."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def printed(status: int, show: Callable[[], object]) -> int:
    """``show`` a result whose exit status is known before its first line
    (the doctor's findings): a reader that goes away cuts the text short, not
    the status (`doctor | head` exits 1 when something needs attention)."""
    try:
        show()
    except BrokenPipeError:
        reader_gone()
    return status


def run_command(command: Command, args: argparse.Namespace) -> int:
    """Run a subcommand's body (sync or async); known errors become one line
    (and a JSON error object with ``--json``), exit 2."""
    json_errors(command, args)
    try:
        require_text_arguments(args)
        result = command.run(args)
        return result if isinstance(result, int) else asyncio.run(result)
    except UsageError as exc:
        return fail(
            f"{command.name}: {exc} (see lovia-tui {command.name} --help)",
            kind="usage",
        )
    except LoviaTuiError as exc:
        return fail(str(exc))
    except sqlite3.Error as exc:
        # Raised where no file is known (the read layer names it when it can).
        return fail(f"SQLite error: {exc}")
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED, "interrupted")
    except BrokenPipeError:
        reader_gone()
        return EXIT_OK
    except OSError as exc:
        # A file the command writes (export -o): a missing directory, no
        # permission, a full disk.
        return fail(os_error_text(exc))
