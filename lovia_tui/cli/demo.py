"""``lovia-tui demo``: build a workspace from real lovia runs and open it."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from lovia_tui.cli.command import EXIT_OK, Command
from lovia_tui.cli.launch import launch_app
from lovia_tui.cli.option_types import duration, duration_text
from lovia_tui.core.formatting import command_line
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER

if TYPE_CHECKING:
    from lovia_tui.demo import DemoWorkspace

DEMO_AGENT = "lovia_tui.demo:agent"
DEMO_STALE_AFTER = 2.0
"""The demo's runs were saved seconds ago: with the usual 300 s its crashed
runs would look live for five minutes."""
SIDECARS = ("", "-wal", "-shm", "-journal")
JOURNAL = Path("journal", "journal.db")
"""A temporary demo's journal, in its directory (a folder of its own: the app
opens the directory's ``*.db``)."""


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        type=Path,
        help="where to write the demo, kept afterwards (default: a temporary "
        "directory, removed when the app is closed)",
    )
    parser.add_argument(
        "--no-tui",
        action="store_true",
        help="write the demo, print how to open it, exit (the demo is kept)",
    )
    parser.add_argument(
        "--stale-after",
        type=duration("s"),
        default=DEMO_STALE_AFTER,
        metavar="DURATION",
        help="staleness threshold for the demo's runs (30s, 5m, plain seconds; "
        f"default {duration_text(DEMO_STALE_AFTER)})",
    )


def open_command(directory: Path, stale_after: float) -> str:
    """How to open the demo again: its agent and its staleness said."""
    return command_line(
        directory, "--stale-after", f"{stale_after:g}", "--agent", DEMO_AGENT
    )


def _demo(args: argparse.Namespace) -> int:
    from lovia_tui.demo import DemoWorkspace, build_demo

    temporary = args.dir is None
    directory = (
        Path(tempfile.mkdtemp(prefix="lovia-tui-demo-")) if temporary else args.dir
    )
    created = temporary or not directory.exists()
    ours = _files(DemoWorkspace(directory))
    theirs = {path for path in ours if path.exists()}
    try:
        workspace = build_demo(directory)
    except BaseException:  # Ctrl+C too: a half-built demo would refuse a rerun
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        else:  # only what this build wrote: the user's files stay
            for path in ours - theirs:
                path.unlink(missing_ok=True)
        raise
    print(f"demo written to {directory}")
    for path in workspace.files:
        print(f"  {path}")
    if temporary and not args.no_tui:
        print("a temporary demo: removed when you quit (keep one with --dir)")
    else:
        print(f"open it with:  {open_command(directory, args.stale_after)}")
        print(
            f"CLI commands on it (resume, rewind, ...) take --stale-after "
            f"{args.stale_after:g} too, as the app does: by default a run saved in "
            f"the last {DEFAULT_STALE_AFTER:g} s may be live and is refused"
        )
    if args.no_tui:
        return EXIT_OK
    if temporary and not os.environ.get("LOVIA_TUI_JOURNAL"):
        # Removed on quit, with what was done to it: not in the user's journal.
        os.environ["LOVIA_TUI_JOURNAL"] = str(directory / JOURNAL)
    args.paths, args.readonly = [str(directory)], False
    args.agent, args.deps = DEMO_AGENT, None
    try:
        return launch_app(args)
    finally:
        if temporary:  # the app has closed the files: nothing holds them
            shutil.rmtree(directory, ignore_errors=True)


def _files(workspace: DemoWorkspace) -> set[Path]:
    """The demo's databases and the files SQLite keeps beside them."""
    return {
        path.with_name(path.name + suffix)
        for path in workspace.files
        for suffix in SIDECARS
    }


COMMANDS = [
    Command(
        "demo",
        "write a demo workspace from real lovia runs and open it",
        _configure,
        _demo,
    )
]
