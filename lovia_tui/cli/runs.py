"""``runs``: every checkpoint for scripts, streamed in the Runs pane's order
(:data:`~lovia_tui.core.run_status.LIST_ORDER`: running heads first, each
status most recently saved first, completed last)."""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_json,
    add_paths,
    add_readonly,
    add_stale_after,
    console,
    note,
    open_workspace,
)
from lovia_tui.cli.json_output import (
    print_json_lazy,
    print_json_lines,
)
from lovia_tui.cli.option_types import count, since_time
from lovia_tui.core.formatting import age_since, plural
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import (
    LIST_ORDER,
    STATUS_FILTERS,
    RunStatus,
    list_rank,
    stale_reason,
)
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.head_reads import RunFilter, dangling_by_run, stream_runs
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import time_order

TABLE_ROWS = 1_000
"""Runs the table shows unless ``--limit`` says otherwise: Rich lays out a
table whole, ~0.65 ms a row (a 200,000-checkpoint file printed nothing for
over two minutes); ``--json`` streams every run."""


def _configure_runs(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    formats = parser.add_mutually_exclusive_group()  # --json is always one object
    add_json(formats)
    formats.add_argument(
        "--jsonl", action="store_true", help="print one JSON object per line"
    )
    add_readonly(parser)
    add_stale_after(parser)
    parser.add_argument(
        "--status",
        choices=STATUS_FILTERS,
        help="only runs with this status (stale: running with no recent save)",
    )
    parser.add_argument(
        "--since",
        type=since_time,
        metavar="WHEN",
        help="only runs saved since WHEN: an age (90s, 30m, 12h, 7d) or an ISO date/time",
    )
    parser.add_argument(
        "--limit",
        type=count(1),
        metavar="N",
        help=f"at most N runs (default: all with --json/--jsonl, {TABLE_ROWS:,} in the table)",
    )


async def stream_records(
    ws: Workspace, wanted: RunFilter, limit: int | None = None
) -> AsyncIterator[dict[str, Any]]:
    """One plain record per checkpoint, as ``runs --json`` prints it, in the
    Runs pane's order: one pass over the heads per status group (each one
    head range of each file in memory), newest first across the files,
    completed runs file by file."""
    emitted = 0
    for rank in _ranks(wanted.status):
        group = dataclasses.replace(wanted, rank=rank)
        left = None if limit is None else limit - emitted
        streams = [_file_records(ws, db, group, left) for db in ws.checkpoint_dbs]
        merged = (
            _one_after_another(streams)
            if LIST_ORDER[rank] == RunStatus.COMPLETED
            else merge_newest(streams)
        )
        async for record in merged:
            if limit is not None and emitted >= limit:
                return
            yield record
            emitted += 1


def _ranks(status: str | None) -> list[int]:
    """The groups of the list a ``--status`` can find runs in."""
    if status is None:
        return list(range(len(LIST_ORDER)))
    return [list_rank(RunStatus.RUNNING if status == RunStatus.STALE else status)]


async def _one_after_another(
    streams: list[AsyncIterator[dict[str, Any]]],
) -> AsyncIterator[dict[str, Any]]:
    for stream in streams:
        async for record in stream:
            yield record


async def _file_records(
    ws: Workspace, db: Database, wanted: RunFilter, limit: int | None
) -> AsyncIterator[dict[str, Any]]:
    async for batch in stream_runs(db, wanted, limit):
        links = await ws.links(run.run_id for run in batch)
        dangling = await dangling_by_run(db, [r.run_id for r in batch])
        for run in batch:
            yield _record(run, links.get(run.run_id), dangling[run.run_id], wanted)


async def merge_newest(
    streams: list[AsyncIterator[dict[str, Any]]],
) -> AsyncIterator[dict[str, Any]]:
    """Records of several newest-first streams, newest first (one held per stream)."""
    heads = {n: await anext(s, None) for n, s in enumerate(streams)}
    while live := {n: r for n, r in heads.items() if r is not None}:
        n = max(live, key=lambda k: time_order(live[k]["updated_at"]))
        yield live[n]
        heads[n] = await anext(streams[n], None)


STORED_HEAD_FIELDS = (
    "usage",
    "last_input_tokens",
    "output",
    "error",
    "pending_handoff",
    "context_state",
)
"""The head fields ``runs --json`` prints as stored (with the status, agent,
turns and times above: every field of lovia's ``RunHead``)."""


def _record(
    run: RunInfo, link: SessionLink | None, dangling: list, wanted: RunFilter
) -> dict[str, Any]:
    now = wanted.now
    return {
        "run_id": run.run_id,
        "status": run.status,
        "agent": run.agent_name,
        "turns": run.turns,
        # The rest of the head exactly as lovia stored it.
        **{field: run.head.get(field) for field in STORED_HEAD_FIELDS},
        "started_at": run.started_at,
        "updated_at": run.updated_at,
        "age_s": None if run.updated_at is None else round(now - run.updated_at, 3),
        "stale": run.is_stale(now, wanted.stale_after),
        "stale_reason": stale_reason(run, now, wanted.stale_after),
        "web_record": run.web_status,
        "entries": run.entries,
        "dangling": [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in dangling
        ],
        "session_id": link.session_id if link else None,
        "session_link": link.kind if link else None,
        "file": str(run.file),
    }


async def _runs(args: argparse.Namespace) -> int:
    wanted = RunFilter(args.status, args.since, time.time(), args.stale_after)
    ws = await open_workspace(args)
    try:
        if args.jsonl:
            await print_json_lines(stream_records(ws, wanted, args.limit))
            return EXIT_OK
        if args.json:
            await print_json_lazy({"runs": stream_records(ws, wanted, args.limit)})
            return EXIT_OK
        shown = args.limit or TABLE_ROWS
        found = stream_records(ws, wanted, shown + 1)  # one past: whether more exist
        records = [record async for record in found]
    finally:
        await ws.close()
    from lovia_tui.cli.data_console import DataTable

    table = DataTable(
        "run", "status", "agent", "turns", "age", "dangling", "session", "file"
    )
    for column in (table.columns[0], table.columns[6]):
        column.overflow, column.no_wrap = "fold", False
    for r in records[:shown]:
        status = f"stale: {r['stale_reason']}" if r["stale"] else r["status"]
        dangling = ", ".join(d["name"] for d in r["dangling"]) or "-"
        session = r["session_id"] or "unlinked"
        table.add_row(
            r["run_id"],
            status,
            r["agent"],
            str(r["turns"]),
            age_since(wanted.now, r["updated_at"]),
            dangling,
            session,
            r["file"],
        )
    console().print_table(table)
    if len(records) > shown:
        note(
            f"the first {plural(shown, 'run')} only (running first); more exist "
            "(--limit N, --status, --since or --json show more)"
        )
    return EXIT_OK


COMMANDS = [
    Command(
        "runs",
        "list checkpoints: status, staleness, dangling calls, session",
        _configure_runs,
        _runs,
    ),
]
