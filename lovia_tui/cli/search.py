"""``search`` and ``index``: content search through the index kept outside the file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from lovia_tui.cli.command import (
    EXIT_OK,
    Command,
    add_json,
    add_paths,
    add_paths_and_id,
    add_readonly,
    open_workspace,
    split_paths_and_id,
)
from lovia_tui.cli.json_output import (
    print_json,
)
from lovia_tui.cli.option_types import count, duration
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.formatting import plural

PROGRESS_EVERY = 0.5


def _configure_search(parser: argparse.ArgumentParser) -> None:
    add_paths_and_id(parser, "QUERY", "what to look for")
    add_json(parser)
    add_readonly(parser)
    parser.add_argument(
        "--limit",
        type=count(1),
        default=50,
        metavar="N",
        help="at most N sessions (default 50)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="report indexing progress on stderr"
    )
    parser.add_argument(
        "--wait",
        type=duration("s"),
        metavar="DURATION",
        help="index for at most this long first (30s, 2m, plain seconds), scan what "
        "is left (default: index all)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="count every match (by default the newest 5,000 are counted)",
    )


def _build(search: Any, path: Path, until: float | None, progress: bool) -> Any:
    """Bring ``search``'s index up to date (until ``until``), reporting on stderr."""
    if search.index.notice:
        print(f"lovia-tui: {path.name}: {search.index.notice}", file=sys.stderr)
        return search.progress()
    while True:
        step = time.monotonic() + PROGRESS_EVERY
        done = search.build(deadline=step if until is None else min(step, until))
        if progress:
            print(
                f"\rindexing {path.name}: {done.indexed:,}/{done.total:,} rows "
                f"({done.fraction:.0%})",
                end="" if not done.done else "\n",
                file=sys.stderr,
                flush=True,
            )
        if done.done or (until is not None and time.monotonic() >= until):
            if progress and not done.done:
                print(file=sys.stderr)
            return done


async def _search(args: argparse.Namespace) -> int:
    from lovia_tui.core.search.file_search import POSTING_CAP, FileSearch
    from lovia_tui.core.search.query import parse_query

    args.paths, text = split_paths_and_id(args.paths, "QUERY")
    query = parse_query(text)
    ws = await open_workspace(args)
    until = None if args.wait is None else time.monotonic() + args.wait
    results: list[dict[str, Any]] = []
    footer = {"indexed": 0, "rows": 0, "scanned": 0, "capped": False}
    try:
        for db in ws.session_dbs + [
            d for d in ws.checkpoint_dbs if d not in ws.session_dbs
        ]:
            search = FileSearch(db.path, immutable=db.immutable)
            try:
                _build(search, db.path, until, args.progress)
                found = search.search(
                    query, args.limit, None if args.all else POSTING_CAP
                )
            finally:
                search.close()
            footer["indexed"] += found.progress.indexed
            footer["rows"] += found.progress.total
            footer["scanned"] += found.scanned
            footer["capped"] = footer["capped"] or found.capped
            entry_cap = found.entry_cap
            results += [_record(db.path, group) for group in found.groups]
        links = await ws.links(r["run_id"] for r in results if r["session_id"] is None)
    finally:
        await ws.close()
    results = _linked(results, links)[: args.limit]
    summary = {
        "query": text,
        "indexed_rows": footer["indexed"],
        "total_rows": footer["rows"],
        "scanned_rows": footer["scanned"],
        "counts_capped": footer["capped"],
        "entry_cap": entry_cap,
        "counts_cap": None if args.all else POSTING_CAP,
        "results": results,
    }
    if args.json:
        print_json(summary)
    else:
        _print_results(summary)
    return EXIT_OK


def _linked(
    results: list[dict[str, Any]], links: dict[str, Any]
) -> list[dict[str, Any]]:
    """Checkpoint hits with the session their run belongs to; a checkpoint of a
    run already appended to a listed session is that session's hit again."""
    listed = {(r["file"], r["session_id"]) for r in results if r["session_id"]}
    kept = []
    for record in results:
        link = links.get(record["run_id"]) if record["session_id"] is None else None
        if link is not None:
            if link.kind == "segment" and (str(link.file), link.session_id) in listed:
                continue
            record["session_id"], record["session_link"] = link.session_id, link.kind
            record["in_flight"] = link.kind != "segment"
        kept.append(record)
    return kept


def _record(path: Path, group: Any) -> dict[str, Any]:
    first = group.first
    return {
        "file": str(path),
        "session_id": group.session_id,
        "session_link": "segment" if group.session_id is not None else None,
        "run_id": first.run_id,
        "in_flight": group.session_id is None,
        "entry_index": first.entry_index,
        "hits": group.hits,
        "snippet": first.snippet,
    }


def _print_results(summary: dict[str, Any]) -> None:
    from rich.text import Text

    from lovia_tui.cli.command import console
    from lovia_tui.cli.data_console import DataTable

    table = DataTable("session", "hits", "run", "entry", "snippet", "file")
    for column in (*table.columns[:3], table.columns[5]):
        column.overflow, column.no_wrap = "fold", False
    for r in summary["results"]:
        session = r["session_id"] or "unlinked"
        if r["in_flight"]:
            session += " (in flight)"
        cells = (
            session, str(r["hits"]), r["run_id"], _entry(r), r["snippet"], r["file"]
        )  # fmt: skip
        table.add_row(*cells)
    out = console()
    out.print_table(table)
    out.print(Text(_footer(summary), style="dim"))


def _entry(record: dict[str, Any]) -> str:
    return "?" if record["entry_index"] is None else str(record["entry_index"])


def _footer(summary: dict[str, Any]) -> str:
    parts = [plural(len(summary["results"]), "session")]
    if summary["scanned_rows"]:
        parts.append(
            f"index covers {summary['indexed_rows']:,} of {summary['total_rows']:,} rows; "
            f"{summary['scanned_rows']:,} not yet indexed were scanned"
        )
    parts.append(
        f"entries indexed up to {summary['entry_cap']:,} characters "
        "(`sessions --search TEXT` scans all of them)"
    )
    if summary["counts_capped"]:
        parts.append(
            f"counts over the newest {summary['counts_cap']:,} matches (--all counts every one)"
        )
    return "; ".join(parts)


def _configure_index(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    add_json(parser)
    add_readonly(parser)
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--status", action="store_true", help="show the index, build nothing"
    )
    what.add_argument("--drop", action="store_true", help="delete the index files")
    parser.add_argument(
        "--progress", action="store_true", help="report indexing progress on stderr"
    )


async def _index(args: argparse.Namespace) -> int:
    from lovia_tui.core.search.file_search import FileSearch, drop_index
    from lovia_tui.core.search.index import index_path

    if args.drop and args.readonly:
        raise LoviaTuiError("index: --drop deletes files, which --readonly never does")
    ws = await open_workspace(args)
    records = []
    try:
        for db in ws.databases:
            if args.drop:
                dropped = drop_index(db.path)
                records.append(
                    {
                        "file": str(db.path),
                        "index": str(index_path(db.path)),
                        "dropped": dropped,
                    }
                )
                continue
            search = FileSearch(db.path, immutable=db.immutable)
            try:
                done = (
                    search.progress()
                    if args.status
                    else _build(search, db.path, None, args.progress)
                )
                state = search.index.state()
                records.append(
                    {
                        "file": str(db.path),
                        "index": str(search.index.path),
                        "indexed_rows": done.indexed,
                        "total_rows": done.total,
                        "complete": done.done,
                        "index_bytes": search.index.size(),
                        "database_bytes": db.path.stat().st_size,
                        "dead_entries": state.dead,
                    }
                )
            finally:
                search.close()
    finally:
        await ws.close()
    if args.json:
        print_json({"files": records})
        return EXIT_OK
    for r in records:
        print(_index_line(r))
    return EXIT_OK


def _index_line(r: dict[str, Any]) -> str:
    from lovia_tui.core.formatting import printable, size

    if "dropped" in r:
        verb = "dropped" if r["dropped"] else "no index for"
        return printable(f"{verb} {r['file']} ({r['index']})")
    share = r["index_bytes"] / max(1, r["database_bytes"])
    return printable(
        f"{r['file']}: {r['indexed_rows']:,}/{r['total_rows']:,} rows indexed"
        f"{'' if r['complete'] else ' (incomplete)'}, {size(r['index_bytes'])} "
        f"({share:.0%} of the database) at {r['index']}"
    )


COMMANDS = [
    Command(
        "search",
        "find sessions by what was said in them (an index kept in ~/.cache)",
        _configure_search,
        _search,
    ),
    Command(
        "index",
        "build, show (--status) or delete (--drop) the search index of files",
        _configure_index,
        _index,
    ),
]
