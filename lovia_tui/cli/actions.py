"""Actions through lovia for scripts: ``rewind``, ``trim``, ``delete-run``,
``finalize``, ``keep-partial``, ``clear`` (the journal behind them: :mod:`lovia_tui.cli.journal`).

Each prints what it would do and changes nothing unless ``--yes``; ``--json``
prints ``{"preview": ..., "result": ... | null}``. Every change is journaled
(``--reason`` is recorded with it) and ``undo`` puts the rows back.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Awaitable, Callable
from dataclasses import asdict

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_json,
    add_paths_and_id,
    add_stale_after,
    add_yes_or_readonly,
    console,
    not_done,
    open_workspace,
    print_preview,
    split_paths_and_id,
    split_paths_and_ids,
)
from lovia_tui.cli.json_output import (
    print_json,
)
from lovia_tui.cli.option_types import DAY, count, duration
from lovia_tui.core.actions.describe import counts_text, describe
from lovia_tui.core.actions.perform import load_lovia, perform
from lovia_tui.core.actions.previews import Preview, preview_dict
from lovia_tui.core.actions.run_plans import preview_delete_runs, preview_finalize
from lovia_tui.core.actions.session_plans import preview_clear, preview_rewind
from lovia_tui.core.actions.trim_plan import preview_trim
from lovia_tui.core.formatting import command_line, printable
from lovia_tui.core.run_status import STATUS_FILTERS
from lovia_tui.core.store.workspace import Workspace


def _configure_action(
    parser: argparse.ArgumentParser,
    ids: str,
    meaning: str = "the session's id",
) -> None:
    add_paths_and_id(parser, ids, meaning)
    parser.add_argument("--reason", metavar="TEXT", help="why, recorded in the journal")
    add_json(parser)
    add_yes_or_readonly(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="act even on a run saved recently (maybe live)",
    )
    add_stale_after(parser)


async def _act(
    args: argparse.Namespace, make: Callable[[Workspace], Awaitable[Preview]]
) -> int:
    """Preview, then perform only with ``--yes``; print either way."""
    if args.yes:
        load_lovia()  # before the preview: the rows have less time to move on
    ws = await open_workspace(args)
    try:
        preview = await make(ws)
        result = await perform(ws, preview, reason=args.reason) if args.yes else None
    finally:
        await ws.close()
    if args.json:
        print_json(
            {
                "preview": preview_dict(preview),
                "result": asdict(result) if result else None,
            }
        )
        return EXIT_OK
    print_preview(describe(preview))
    if result is None:
        if not preview.noop:
            console().print(not_done(args), style="dim")
    elif result.journal_id is not None:
        console().print(
            f"done: {counts_text(result.counts)}; undo with "
            f"`{command_line('undo', *ws.paths, result.journal_id)}`",
            style="green",
            markup=False,
        )
        for warning in result.warnings:
            console().print(printable(warning), style="yellow", markup=False)
    return EXIT_OK


def _configure_rewind(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "SESSION_ID")
    parser.add_argument(
        "--keep",
        type=count(0),
        required=True,
        metavar="N",
        help="keep the first N flat entries (N at or past the end: nothing to do)",
    )


async def _rewind(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    return await _act(
        args,
        lambda ws: preview_rewind(
            ws, session_id, args.keep, force=args.force, stale_after=args.stale_after
        ),
    )


def _configure_trim(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "SESSION_ID")
    parser.add_argument(
        "--keep-chars",
        type=count(0),
        default=400,
        metavar="N",
        help="keep N chars of each output (400)",
    )
    parser.add_argument(
        "--keep-runs",
        type=count(0),
        default=1,
        metavar="N",
        help="leave the last N runs whole (1)",
    )


async def _trim(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    return await _act(
        args,
        lambda ws: preview_trim(
            ws,
            session_id,
            args.keep_chars,
            args.keep_runs,
            force=args.force,
            stale_after=args.stale_after,
        ),
    )


def _configure_delete_run(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "[RUN_ID...]", "the checkpoints' run ids, if any")
    parser.add_argument(
        "--status", choices=STATUS_FILTERS, help="only checkpoints with this status"
    )
    parser.add_argument(
        "--older-than",
        type=duration("d"),
        metavar="DURATION",
        help="only checkpoints not saved for this long: 12h, 7d, plain days",
    )


async def _delete_run(args: argparse.Namespace) -> int:
    args.paths, run_ids = split_paths_and_ids(args.paths, "[RUN_ID...]")
    return await _act(
        args,
        lambda ws: preview_delete_runs(
            ws,
            run_ids,
            status=args.status,
            older_than_days=None if args.older_than is None else args.older_than / DAY,
            force=args.force,
            stale_after=args.stale_after,
        ),
    )


def _configure_finalize(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "RUN_ID", "the run's id")
    parser.add_argument(
        "--session",
        metavar="SID",
        help="the session to fold it into, when nothing links the run",
    )


async def _finalize(args: argparse.Namespace, keep_partial: bool = False) -> int:
    args.paths, run_id = split_paths_and_id(args.paths, "RUN_ID")
    return await _act(
        args,
        lambda ws: preview_finalize(
            ws,
            run_id,
            args.session,
            keep_partial=keep_partial,
            force=args.force,
            stale_after=args.stale_after,
        ),
    )


def _configure_clear(parser: argparse.ArgumentParser) -> None:
    _configure_action(parser, "SESSION_ID")


async def _clear(args: argparse.Namespace) -> int:
    args.paths, session_id = split_paths_and_id(args.paths, "SESSION_ID")
    return await _act(
        args,
        lambda ws: preview_clear(
            ws, session_id, force=args.force, stale_after=args.stale_after
        ),
    )


COMMANDS = [
    Command(
        "rewind",
        "drop a session's tail after its first N entries (lovia rewind)",
        _configure_rewind,
        _rewind,
    ),
    Command(
        "trim",
        "shorten old stored tool outputs (lovia trim_tool_results)",
        _configure_trim,
        _trim,
    ),
    Command(
        "delete-run",
        "delete checkpoints by run id, status or age",
        _configure_delete_run,
        _delete_run,
    ),
    Command(
        "finalize",
        "settle an abandoned run: a web chat's as lovia web's Stop does, "
        "any other's stored in its session",
        _configure_finalize,
        _finalize,
    ),
    Command(
        "keep-partial",
        "store everything an abandoned run saved in its session, its unfinished "
        "turn included, and drop its checkpoint",
        _configure_finalize,
        functools.partial(_finalize, keep_partial=True),
    ),
    Command(
        "clear",
        "remove every segment of a session (lovia clear)",
        _configure_clear,
        _clear,
    ),
]
