"""Pruning the journal: which entries may go, and taking them out.

The journal holds full rows, so it grows with every action (a few clears of
a large session make hundreds of MB). What may go is what no undo the user
could still want needs, as the user dates it: an entry older than the cut
(``--older-than DAYS``, 30 by default) whose outcome is settled — ``done``,
``rolled back`` (it changed nothing), or ``superseded`` (an interrupted undo
another completed). Never an entry still ``pending`` or ``failed`` (its rows
may be half out: it is the only copy), and never one running in a process
right now. Each entry holds its own rows, so pruning one never breaks the
undo of another; an action past the cut simply cannot be undone any more,
which is what the cut says.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path

from lovia_tui.core.actions.entry_locks import remove_locks
from lovia_tui.core.actions.journal import (
    MOVED_ON,
    Journal,
    JournalEntry,
    select_entries,
)

SETTLED = ("done", "rolled back", "superseded", MOVED_ON)
"""Statuses of an entry whose outcome is recorded: it may be pruned once old."""
DEFAULT_DAYS = 30.0
BATCH = 500


async def prune(
    journal: Journal,
    older_than_days: float,
    files: Iterable[Path] | None,
    apply: bool,
) -> list[JournalEntry]:
    """The settled entries older than the cut (on ``files``, if given), oldest
    first; removed, and the file compacted, when ``apply``."""
    wanted = None if files is None else [str(Path(f).resolve()) for f in files]
    cutoff = time.time() - older_than_days * 86400
    return await asyncio.to_thread(_prune, journal, cutoff, wanted, apply)


def _prune(
    journal: Journal, cutoff: float, files: list[str] | None, apply: bool
) -> list[JournalEntry]:
    if not journal.path.exists():
        return []
    with journal.connect() as conn:
        found = [
            e
            for e in select_entries(conn, files, limit=-1)
            if e.created_at < cutoff and e.status in SETTLED
        ]
    found = [e for e in reversed(found) if journal.running(e.id) is None]
    if not apply or not found:
        return found
    ids = [e.id for e in found]
    with journal.connect() as conn:
        for start in range(0, len(ids), BATCH):
            chunk = ids[start : start + BATCH]
            marks = ",".join("?" * len(chunk))
            conn.execute("BEGIN IMMEDIATE")
            for table, column in (
                ("cells", "entry_id"),
                ("groups", "entry_id"),
                ("entries", "id"),
            ):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
            conn.execute("COMMIT")
    remove_locks(journal.path, ids)
    with journal.connect() as conn:
        conn.execute("VACUUM")  # give the space back to the disk
    return found
