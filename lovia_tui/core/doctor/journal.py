"""Doctor check on lovia-tui's own journal: actions on the open files that never finished.

An entry stays ``pending`` when the process performing it was killed, or
``failed`` when a commit failed after another file's went in. The database is
consistent either way (each file's change is one transaction), but the action
may be in, half in or out; the journal holds every row it touched, and
undoing the entry puts back exactly those now missing. An entry whose
process still holds its lock is running, not interrupted: it is reported as
such, with no fix. An interrupted undo is settled by undoing the entry it
undoes (which reads its outcome from the rows first). A journal that cannot
be read is one finding: the audit of the lovia files goes on without it.
"""

from __future__ import annotations

from pathlib import Path

from lovia_tui.core.actions.journal import Journal, JournalEntry
from lovia_tui.core.actions.journal_file import JournalError
from lovia_tui.core.doctor.findings import Finding, FindingList, Fix, command
from lovia_tui.core.formatting import timestamp
from lovia_tui.core.store.workspace import Workspace


async def journal_findings(
    ws: Workspace, found: FindingList, journal: Journal | None = None
) -> None:
    """One finding per unfinished journal entry touching an open file."""
    journal = journal or Journal()
    files = {str(db.path.resolve()): db.path for db in ws.databases}
    try:
        unfinished = await journal.unfinished(files.values())
    except JournalError as exc:
        first = next(iter(files.values()), journal.path)
        found.add(
            Finding(
                "journal-unreadable", "warning", first,
                f"{exc}; the lovia files were audited without it, and no action "
                "can be journaled (or undone) until it is readable",
            )
        )  # fmt: skip
        return
    for entry in unfinished:
        file = next((files[d] for d in entry.databases if d in files), None)
        found.add(_finding(entry, file or Path(entry.databases[0]), journal))


def _finding(entry: JournalEntry, file: Path, journal: Journal) -> Finding:
    what = f"{entry.action} of {entry.subject}" if entry.subject else entry.action
    said = f"journal entry {entry.id} ({what}, {timestamp(entry.created_at)} by {entry.user})"
    if where := journal.running(entry.id):
        return Finding(
            "running-action", "info", file,
            f"{said} is running right now in {where}: leave it to finish",
        )  # fmt: skip
    if entry.action == "undo" and entry.undoes is not None:
        return Finding(
            "unfinished-action", "error", file,
            f"{said} was interrupted: its commit may or may not have gone in; "
            f"undoing entry {entry.undoes} reads which from the rows, records it, "
            "and finishes the job if needed",
            fix=Fix(
                "undo",
                f"settle the undo: {command('undo', str(entry.undoes))}",
                journal_entry=entry.undoes,
            ),
        )  # fmt: skip
    return Finding(
        "unfinished-action", "error", file,
        f"{said} never finished ({entry.status}): the process was killed, or a "
        "commit failed; some of its rows may be gone, and the journal holds every one",
        fix=Fix(
            "undo",
            f"put back the journaled rows now missing: {command('undo', str(entry.id))}",
            journal_entry=entry.id,
        ),
    )  # fmt: skip
