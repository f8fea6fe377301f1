"""``lovia-tui serve``: the inspector in a browser (see docs/support-staff.md)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
from pathlib import Path

from lovia_tui.cli.command import EXIT_OK, Command, add_readonly, fail
from lovia_tui.cli.option_types import count
from lovia_tui.core.formatting import printable
from lovia_tui.core.store.workspace import Workspace

LAST_PORT = 65535


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="lovia SQLite files or directories"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on; default %(default)s",
    )
    parser.add_argument(
        "--port",
        type=count(0, LAST_PORT),
        default=8000,
        help="the port to listen on (0: any free one); default %(default)s",
    )
    add_readonly(parser)
    parser.add_argument(
        "--public-url", metavar="URL", help="the URL browsers use (behind a proxy)"
    )
    parser.add_argument(
        "--max-sessions",
        type=count(1),
        default=4,
        metavar="N",
        help="open tabs at most (one app process each); default %(default)s",
    )
    parser.add_argument(
        "--users", type=Path, metavar="FILE", help="name:hash logins (mode 600)"
    )
    parser.add_argument(
        "--add-user",
        metavar="NAME",
        help="ask for NAME's password, store its hash in --users FILE, exit",
    )


def _serve(args: argparse.Namespace) -> int:
    from lovia_tui.serve.gate import add_user, read_users
    from lovia_tui.serve.server import LockedServer, app_argv

    if args.add_user:
        if args.users is None:
            return fail("--add-user needs --users FILE")
        password = getpass.getpass(f"{args.add_user}'s password: ")
        changed = add_user(args.users, args.add_user, password)
        done = "password changed in" if changed else "added to"
        print(printable(f"{args.add_user} {done} {args.users}"))
        return EXIT_OK
    if not args.paths:
        return fail("serve needs at least one PATH")
    server = LockedServer(
        app_argv(args.paths, readonly=args.readonly),
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        max_sessions=args.max_sessions,
        users=read_users(args.users) if args.users else None,
    )
    asyncio.run(check_opens(args))
    server.serve()
    return EXIT_OK


async def check_opens(args: argparse.Namespace) -> None:
    """Fail on paths that do not open, before the server starts (nothing is created)."""
    workspace = await Workspace.open(args.paths, readonly=args.readonly)
    await workspace.close()


COMMANDS = [
    Command(
        "serve", "the inspector in a browser, for support staff", _configure, _serve
    )
]
