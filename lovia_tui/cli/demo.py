"""``lovia-tui demo``: build a workspace from real lovia runs and open it."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from lovia_tui.cli.command import EXIT_OK, Command
from lovia_tui.cli.launch import launch_app

DEMO_AGENT = "lovia_tui.demo:agent"


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", type=Path, help="where to write the demo (default: a new temp dir)"
    )
    parser.add_argument(
        "--no-tui", action="store_true", help="write the demo, print its paths, exit"
    )
    parser.add_argument(
        "--stale-after",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="staleness threshold for the demo's runs (default 2)",
    )


def _demo(args: argparse.Namespace) -> int:
    from lovia_tui.demo import build_demo

    directory = args.dir or Path(tempfile.mkdtemp(prefix="lovia-tui-demo-"))
    workspace = build_demo(directory)
    print(f"demo written to {directory}")
    for path in workspace.files:
        print(f"  {path}")
    if args.no_tui:
        return EXIT_OK
    args.paths, args.readonly = [str(directory)], False
    args.agent, args.deps = DEMO_AGENT, None
    return launch_app(args)


COMMANDS = [
    Command(
        "demo",
        "write a demo workspace from real lovia runs and open it",
        _configure,
        _demo,
    )
]
