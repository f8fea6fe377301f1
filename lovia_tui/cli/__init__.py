"""The ``lovia-tui`` command: the app by default, subcommands for scripts.

``lovia-tui [PATH...]`` opens the inspector; ``lovia-tui SUBCOMMAND ...`` runs
one of the script-facing commands listed by ``lovia-tui --help``.
"""

from __future__ import annotations

import argparse
import sys

from lovia_tui import __version__
from lovia_tui.cli import actions, browse, demo, doctor, resume, search
from lovia_tui.cli.command import Command, run_command, tolerate_narrow_output
from lovia_tui.cli.launch import configure_app, launch_app

COMMANDS: list[Command] = [
    *demo.COMMANDS,
    *browse.COMMANDS,
    *resume.COMMANDS,
    *actions.COMMANDS,
    *doctor.COMMANDS,
    *search.COMMANDS,
]


def _app_parser() -> argparse.ArgumentParser:
    lines = "\n".join(f"  {c.name:<11} {c.help}" for c in COMMANDS)
    parser = argparse.ArgumentParser(
        prog="lovia-tui",
        description="Inspect and debug lovia runs: sessions, checkpoints, dangling tool calls.",
        epilog=f"subcommands (lovia-tui SUBCOMMAND --help):\n{lines}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"lovia-tui {__version__}"
    )
    configure_app(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tolerate_narrow_output()
    by_name = {command.name: command for command in COMMANDS}
    if argv and argv[0] in by_name:
        command = by_name[argv[0]]
        parser = argparse.ArgumentParser(
            prog=f"lovia-tui {command.name}", description=command.help
        )
        command.configure(parser)
        return run_command(command, parser.parse_args(argv[1:]))
    return launch_app(_app_parser().parse_args(argv))
