"""``doctor --integrity``: which store of which file SQLite finds damaged.

Opens no workspace (a damaged file cannot be opened as one): each file is
checked on a read-only connection of its own, in a thread, with progress on
a terminal. Exit 0 when every file is sound, 1 when one is damaged.
"""

from __future__ import annotations

import argparse
import asyncio
from functools import partial

from rich.table import Table

from lovia_tui.cli.command import (
    EXIT_FINDINGS,
    EXIT_OK,
    console,
    printed,
    progress_bar,
)
from lovia_tui.cli.json_output import (
    print_json,
)
from lovia_tui.core.doctor.integrity import TableCheck, check_integrity
from lovia_tui.core.formatting import printable
from lovia_tui.core.store.connect import check_file
from lovia_tui.core.store.workspace import resolve_paths


async def integrity(args: argparse.Namespace) -> int:
    files = resolve_paths(args.paths)
    for path in files:
        check_file(path)
    results: dict[str, list[TableCheck]] = {}
    with progress_bar("checking", shown=not args.json) as progress:
        for path in files:
            results[str(path)] = await asyncio.to_thread(
                check_integrity, path, progress=progress
            )
    damaged = any(not check.ok for checks in results.values() for check in checks)
    status = EXIT_FINDINGS if damaged else EXIT_OK
    if args.json:
        return printed(status, partial(print_json, _as_json(results)))
    return printed(status, partial(_print_checks, results))


def _as_json(results: dict[str, list[TableCheck]]) -> dict:
    return {
        "files": [
            {
                "file": file,
                "ok": all(check.ok for check in checks),
                "checks": [
                    {
                        "store": check.store,
                        "table": check.table,
                        "ok": check.ok,
                        "problems": list(check.problems),
                    }
                    for check in checks
                ],
            }
            for file, checks in results.items()
        ]
    }


def _print_checks(results: dict[str, list[TableCheck]]) -> None:
    out = console()
    for file, checks in results.items():
        table = Table(
            "store", "table", "SQLite's integrity_check", title=printable(file)
        )
        table.columns[2].overflow = "fold"
        for check in checks:
            verdict = "ok" if check.ok else "\n".join(check.problems)
            table.add_row(
                check.store,
                printable(check.table),
                printable(verdict, multiline=True),
                style=None if check.ok else "red",
            )
        out.print_table(table)
        bad = sorted({check.store for check in checks if not check.ok})
        if bad:
            out.print(
                f"damaged: {', '.join(bad)}. lovia-tui changes nothing in a damaged "
                "file; restore it from a backup, or recover what reads with "
                "`sqlite3 FILE .recover`.",
                style="red",
                markup=False,
            )
        else:
            out.print(
                "sound: every table passed SQLite's integrity_check", style="green"
            )
