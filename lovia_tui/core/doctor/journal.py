"""Doctor check on lovia-tui's own journal: actions on the open files that never finished.

An entry stays ``pending`` when the process performing it was killed, or
``failed`` when a commit failed after another file's went in. The database is
consistent either way (each file's change is one transaction), but the action
may be in, half in or out; the journal holds every row it touched, and
undoing the entry puts back exactly those now missing.
"""

from __future__ import annotations

from pathlib import Path

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.doctor.findings import Finding, FindingList, Fix, command
from lovia_tui.core.formatting import timestamp
from lovia_tui.core.store.workspace import Workspace


async def journal_findings(
    ws: Workspace, found: FindingList, journal: Journal | None = None
) -> None:
    """One finding per unfinished journal entry touching an open file."""
    files = {str(db.path.resolve()): db.path for db in ws.databases}
    for entry in await (journal or Journal()).unfinished(files.values()):
        file = next((files[d] for d in entry.databases if d in files), None)
        what = f"{entry.action} of {entry.subject}" if entry.subject else entry.action
        found.add(
            Finding(
                "unfinished-action", "error", file or Path(entry.databases[0]),
                f"journal entry {entry.id} ({what}, {timestamp(entry.created_at)} by "
                f"{entry.user}) never finished ({entry.status}): the process was killed, "
                "or a commit failed; some of its rows may be gone, and the journal holds "
                "every one (unless it is running in another lovia-tui right now)",
                fix=Fix(
                    "undo",
                    f"put back the journaled rows now missing: {command('undo', str(entry.id))}",
                    journal_entry=entry.id,
                ),
            )
        )  # fmt: skip
