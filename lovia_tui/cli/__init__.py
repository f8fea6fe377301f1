"""The ``lovia-tui`` command: the app by default, subcommands for scripts.

``lovia-tui [PATH...]`` opens the inspector; ``lovia-tui SUBCOMMAND ...`` runs
one of the script-facing commands listed by ``lovia-tui --help``. Only the
module of the chosen subcommand is imported: ``runs --json`` must not pay
for the actions layer, Rich's tables or Textual.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from lovia_tui import __version__
from lovia_tui.cli.command import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    Command,
    CommandParser,
    fail,
    json_errors,
    run_command,
)
from lovia_tui.cli.json_output import (
    tolerate_narrow_output,
)

SUBCOMMANDS: dict[str, str] = {
    "demo": "demo",
    "sessions": "browse",
    "show": "browse",
    "runs": "runs",
    "export": "export",
    "resume": "resume",
    "replay": "resume",
    "rewind": "actions",
    "trim": "actions",
    "delete-run": "actions",
    "finalize": "actions",
    "keep-partial": "actions",
    "clear": "actions",
    "journal": "journal",
    "undo": "journal",
    "fork": "fork",
    "doctor": "doctor",
    "search": "search",
    "index": "search",
    "serve": "serve",
}
"""Each subcommand's module under ``lovia_tui.cli``, in ``--help`` order."""


def command_modules() -> list[str]:
    return list(dict.fromkeys(SUBCOMMANDS.values()))


def load_command(name: str) -> Command:
    module = importlib.import_module(f"lovia_tui.cli.{SUBCOMMANDS[name]}")
    return next(c for c in module.COMMANDS if c.name == name)


def all_commands() -> list[Command]:
    """Every subcommand (imports every command module: for ``--help`` only)."""
    return [
        command
        for module in command_modules()
        for command in importlib.import_module(f"lovia_tui.cli.{module}").COMMANDS
    ]


class _AppParser(CommandParser):
    """The app's parser; the subcommand list is built only when help is shown."""

    def format_help(self) -> str:
        lines = "\n".join(f"  {c.name:<11} {c.help}" for c in all_commands())
        self.epilog = f"subcommands (lovia-tui SUBCOMMAND --help):\n{lines}"
        return super().format_help()


def _app_parser() -> argparse.ArgumentParser:
    from lovia_tui.cli.launch import configure_app

    parser = _AppParser(
        prog="lovia-tui",
        description="Inspect and debug lovia runs: sessions, checkpoints, dangling tool calls.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"lovia-tui {__version__}"
    )
    configure_app(parser)
    return parser


def command_parser(command: Command) -> argparse.ArgumentParser:
    parser = CommandParser(prog=f"lovia-tui {command.name}", description=command.help)
    command.configure(parser)
    return parser


class _Parsed(Exception):
    """argparse is done before a command ran: help shown, or a usage error."""

    def __init__(self, code: int) -> None:
        self.code = code


def _parsed(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The arguments; argparse's exit (help shown, a usage error) becomes a
    status ``main`` returns, as every other outcome."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        raise _Parsed(exc.code if isinstance(exc.code, int) else EXIT_ERROR) from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tolerate_narrow_output()
    try:
        if argv and argv[0] in SUBCOMMANDS:
            command = load_command(argv[0])
            json_errors(command, argv[1:])  # a usage error too, with --json
            return run_command(command, _parsed(command_parser(command), argv[1:]))
        json_errors(None)
        from lovia_tui.cli.launch import launch_app

        return launch_app(_parsed(_app_parser(), argv))
    except _Parsed as done:  # --help, --version, or a usage error said on stderr
        return done.code
    except KeyboardInterrupt:  # outside a command's body: importing, parsing
        return fail("interrupted", EXIT_INTERRUPTED, "interrupted")
