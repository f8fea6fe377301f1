"""Starting the inspector app from parsed arguments."""

from __future__ import annotations

import argparse

from lovia_tui.cli.command import EXIT_OK, add_readonly, add_stale_after, fail
from lovia_tui.core.errors import LoviaTuiError


def configure_app(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="lovia SQLite files or directories of *.db (default: ./.lovia/*.db)",
    )
    add_readonly(parser)
    add_stale_after(parser)
    parser.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="the entry Agent (or a zero-argument factory) used to resume runs",
    )
    parser.add_argument(
        "--deps", metavar="MODULE:ATTR", help="deps passed to resumed runs"
    )


def check_agent(args: argparse.Namespace) -> None:
    """Fail on an ``--agent`` or ``--deps`` that does not load, at launch rather
    than at the first resume (the same check ``resume`` makes)."""
    from lovia_tui.core.runs.agents import load_agent, load_deps

    if args.agent:
        load_agent(args.agent)
    if args.deps:
        load_deps(args.deps)


def launch_app(args: argparse.Namespace) -> int:
    """Open the app; bad paths or agents fail before the screen is taken, as one line."""
    try:
        check_agent(args)
    except LoviaTuiError as exc:
        return fail(str(exc))
    from lovia_tui.app import make_app

    app = make_app(
        args.paths,
        readonly=args.readonly,
        stale_after=args.stale_after,
        agent_spec=args.agent,
        deps_spec=args.deps,
    )
    app.run()
    if app.open_error:  # the files are opened once, by the app, before it draws
        return fail(app.open_error)
    return app.return_code or EXIT_OK
