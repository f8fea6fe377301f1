"""``doctor``: audit the stores for inconsistencies, each with its suggested fix.

Opens the files read-only (the audit never writes, not even the switch to
WAL, so it reports the journal mode as it is). Exit 0 when nothing needs
attention (``info`` findings aside), 1 when something does, 2 on an error.
"""

from __future__ import annotations

import argparse
from functools import partial

from rich.table import Table
from rich.text import Text

from lovia_tui.cli.command import (
    EXIT_FINDINGS,
    EXIT_OK,
    Command,
    add_json,
    add_paths,
    add_stale_after,
    console,
    open_workspace,
    printed,
    progress_bar,
)
from lovia_tui.cli.integrity import integrity
from lovia_tui.cli.json_output import (
    print_json,
)
from lovia_tui.cli.option_types import DAY, duration, duration_text
from lovia_tui.core.doctor.audit import DEFAULT_OLDER_THAN_DAYS, Report, diagnose
from lovia_tui.core.doctor.findings import SEVERITY_STYLES, summary
from lovia_tui.core.formatting import printable, size


def _configure(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    add_json(parser)
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="accepted as on every read: the doctor always opens the files with "
        "SQLite mode=ro",
    )
    add_stale_after(parser)
    parser.add_argument(
        "--older-than",
        type=duration("d"),
        default=DEFAULT_OLDER_THAN_DAYS * DAY,
        metavar="DURATION",
        help="report interrupted and failed runs not saved for this long (12h, 7d, "
        f"plain days; default {duration_text(DEFAULT_OLDER_THAN_DAYS * DAY)})",
    )
    parser.add_argument(
        "--integrity",
        action="store_true",
        help="run SQLite's integrity_check over every table and say which store is damaged "
        "(reads every page: long on a large file)",
    )


async def _diagnose(args: argparse.Namespace) -> Report:
    ws = await open_workspace(args, readonly=True)
    try:
        with progress_bar("reading") as progress:
            return await diagnose(
                ws,
                stale_after=args.stale_after,
                older_than_days=args.older_than / DAY,
                progress=progress,
            )
    finally:
        await ws.close()


async def _doctor(args: argparse.Namespace) -> int:
    if args.integrity:
        return await integrity(args)
    report = await _diagnose(args)
    status = EXIT_FINDINGS if report.needs_attention else EXIT_OK
    if args.json:
        findings = {"findings": [finding.as_dict() for finding in report.findings]}
        return printed(status, partial(print_json, findings))
    return printed(status, partial(_print_report, report))


def _print_report(report: Report) -> None:
    out = console()
    files = Table(
        "file",
        "stores",
        "journal",
        "lovia schema",
        "size",
        "WAL",
        title="files",
        title_justify="left",
    )
    files.columns[0].overflow = "fold"
    for info in report.files:
        versions = ", ".join(
            f"{store} v{version}" for store, version in info.schema_versions.items()
        )
        files.add_row(
            str(info.path), "+".join(info.stores), info.journal_mode,
            versions or "-", size(info.db_bytes), size(info.wal_bytes),
        )  # fmt: skip
    out.print_table(files)
    if not report.findings:
        out.print("no findings: the stores are consistent", style="green")
        return
    table = Table(title="findings", title_justify="left", expand=True)
    table.add_column("finding", no_wrap=True)
    piped = not out.is_terminal  # ids whole, one finding per line
    table.add_column("run / session", max_width=None if piped else 24, overflow="fold")
    table.add_column("why → suggested fix", ratio=1)
    for finding in report.findings:
        subject = "\n".join(
            filter(
                None,
                [
                    finding.run_id,
                    finding.session_id and f"session {finding.session_id}",
                ],
            )
        )
        # One line each, whatever ids they quote: a stored newline shows as ␊.
        text = Text(printable(finding.message))
        if finding.fix:
            text.append(f"\n→ {printable(finding.fix.text)}", "cyan")
        kind = Text(finding.severity, style=SEVERITY_STYLES[finding.severity]).append(
            f"\n{finding.kind}", style=""
        )
        table.add_row(kind, subject or finding.file.name, text)
    out.print_table(table)
    out.print(summary(report.findings), markup=False)


COMMANDS = [
    Command(
        "doctor",
        "audit sessions and checkpoints for inconsistencies, each with a suggested fix",
        _configure,
        _doctor,
    )
]
