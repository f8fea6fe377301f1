"""The doctor: audit the session and checkpoint stores for inconsistencies.

:func:`diagnose` walks every open file in bounded memory (checkpoints one by
one, segments in id-range chunks) and returns :class:`Finding` records, each
with a suggested :class:`Fix` that goes through the action layer
(:func:`lovia_tui.core.doctor.fixes.fix_preview`) or through resume/replay.
Nothing here writes. The checks live in :mod:`~lovia_tui.core.doctor.checkpoints`
(checkpoints and the web UI's records), :mod:`~lovia_tui.core.doctor.segments`
(segments) and :mod:`~lovia_tui.core.doctor.journal` (actions that never finished).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from lovia_tui.core.doctor.checkpoints import checkpoint_findings
from lovia_tui.core.doctor.findings import (
    Finding,
    FindingList,
    Fix,
    Progress,
    Severity,
    with_open_files,
)
from lovia_tui.core.doctor.journal import journal_findings
from lovia_tui.core.doctor.segments import segment_findings
from lovia_tui.core.doctor.web import WebState, unsaved_run_findings, web_findings
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.store import database
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.schema import stored_version
from lovia_tui.core.store.workspace import Workspace

DEFAULT_OLDER_THAN_DAYS = 7.0

__all__ = [
    "DEFAULT_OLDER_THAN_DAYS",
    "FileInfo",
    "Finding",
    "Fix",
    "Report",
    "Severity",
    "diagnose",
]


@dataclass(frozen=True)
class FileInfo:
    """What the doctor says about a file itself: informational, never a finding."""

    path: Path
    stores: tuple[str, ...]
    journal_mode: str
    schema_versions: dict[str, int]
    db_bytes: int
    wal_bytes: int


@dataclass(frozen=True)
class Report:
    """Every finding, worst first, and the files they were looked for in."""

    findings: tuple[Finding, ...]
    files: tuple[FileInfo, ...]

    @property
    def needs_attention(self) -> bool:
        """Whether anything above ``info`` was found: the CLI's exit status 1."""
        return any(f.severity != "info" for f in self.findings)


async def diagnose(
    ws: Workspace,
    *,
    stale_after: float = DEFAULT_STALE_AFTER,
    older_than_days: float = DEFAULT_OLDER_THAN_DAYS,
    progress: Progress | None = None,
    agent: tuple[str | None, str | None] = (None, None),
) -> Report:
    """Audit every open file; reads only, in short statements and bounded memory.

    ``progress`` is called with what is being scanned and the fraction done;
    ``agent`` (spec, deps) is named in the resumes it suggests.
    """
    report = progress or (lambda what, fraction: None)
    found = FindingList()
    now = time.time()
    files = []
    for db in ws.databases:
        files.append(await file_info(db))
        if db.journal_mode != "wal":
            found.add(_journal_finding(db))
        for finding in await _index_findings(db):
            found.add(finding)
    web = await WebState.read(ws)
    await checkpoint_findings(
        ws,
        found,
        web,
        now=now,
        stale_after=stale_after,
        older_than_days=older_than_days,
        progress=report,
    )
    await web_findings(ws, found, web, now=now, stale_after=stale_after)
    await unsaved_run_findings(ws, found)
    await journal_findings(ws, found)
    for db in ws.databases:
        if db.stores.session:
            await segment_findings(db, found, progress=report)
    findings = (
        with_open_files(f, ws.paths, stale_after, agent) for f in found.finished()
    )
    return Report(tuple(findings), tuple(files))


def _journal_finding(db: Database) -> Finding:
    remedy = (
        "opening it read-write with lovia-tui switches it to WAL (sticky), as does wal=True on lovia's stores"
        if db.readonly
        else f"the switch to WAL was refused ({db.notice}); wal=True on lovia's stores asks again"
    )
    return Finding(
        "journal-mode", "info", db.path,
        f"{db.name} is in {db.journal_mode} journal mode: every read holds up lovia's writers; {remedy}",
    )  # fmt: skip


_PRIMARY_KEY = (
    "lovia's is the table's primary key, which only a new table gets: "
    "CREATE INDEX {table}_key ON {table}({columns}) in the sqlite3 shell stands in for it"
)
LOOKUP_INDEXES = [
    ("session", "session_runs", "session_id, id", "session",
     "lovia creates it (idx_session_runs_sid) the next time its session store opens the file"),
    ("checkpoint", "snapshot_heads", "run_id", "run's head", _PRIMARY_KEY),
    ("checkpoint", "snapshot_turns", "run_id, seq", "run's entries", _PRIMARY_KEY),
]  # fmt: skip
"""The tables lovia reads by key: their store, lovia's index on them (its
columns), what one key names, and how the index comes back."""


async def _index_findings(db: Database) -> list[Finding]:
    """A store's table with no index led by its key (lovia's schema has one;
    another program's copy of the tables may not): every read of one session
    or run scans the whole table."""
    found = []
    for store, table, columns, what, remedy in LOOKUP_INDEXES:
        if not getattr(db.stores, store):
            continue
        column = columns.split(",")[0]
        indexed = await db.fetchall(
            "SELECT 1 FROM pragma_index_list(?1) AS l, pragma_index_info(l.name) AS i "
            "WHERE i.seqno = 0 AND i.name = ?2 LIMIT 1",
            (table, column),
        )
        if not indexed:
            found.append(
                Finding(
                    "missing-index",
                    "warning",
                    db.path,
                    f"{db.name}: {table} has no index that starts with {column}, "
                    f"as lovia's schema does: every read of one {what} scans the "
                    "whole table, holding up lovia's writers meanwhile; "
                    + remedy.format(table=table, columns=columns),
                )
            )
    return found


async def file_info(db: Database) -> FileInfo:
    """Stores, journal mode, lovia schema versions and sizes of one open file."""
    versions: dict[str, int] = {}
    try:
        rows = await db.fetchall("SELECT store, version FROM lovia_schema")
        # A version lovia cannot read refused its store at open (and said so).
        versions = {
            str(store): number
            for store, version in rows
            if (number := stored_version(version)) is not None
        }
    except sqlite3.OperationalError as exc:
        if not database.is_missing_table(exc):
            raise
    stores = (
        ("session", db.stores.session),
        ("checkpoint", db.stores.checkpoint),
        ("web", db.stores.chat),
    )
    wal = Path(f"{db.path}-wal")
    return FileInfo(
        path=db.path,
        stores=tuple(name for name, has in stores if has),
        journal_mode=db.journal_mode,
        schema_versions=versions,
        db_bytes=db.path.stat().st_size,
        wal_bytes=wal.stat().st_size if wal.exists() else 0,
    )
