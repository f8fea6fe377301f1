"""Undo from the inspector (`u`) and the doctor: say what the journal entry
did, ask, then restore its rows exactly (refused if they changed since).

Run by :meth:`~lovia_tui.screens.action_flows.ActionFlows.undo` in a worker
of its host screen.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.screen import Screen

from lovia_tui.core.actions.actor import acted_by, served_person
from lovia_tui.core.errors import ActionError
from lovia_tui.core.formatting import plural
from lovia_tui.core.store.workspace import Workspace


async def undo_flow(host: Screen, workspace: Workspace, entry_id: int | None) -> bool:
    """Undo an action (the newest on the open files), after saying what it
    was; whether it was undone."""
    from lovia_tui.core.actions.describe import undo_effect
    from lovia_tui.core.actions.journal import Journal
    from lovia_tui.core.actions.journal_undo import stored_since
    from lovia_tui.core.actions.perform import undo
    from lovia_tui.screens.action_dialog import ActionScreen

    journal = Journal()
    files = [db.path for db in workspace.databases]
    person = served_person()  # through serve, u undoes your own last action
    try:
        entry = (
            await journal.get(entry_id)
            if entry_id is not None
            else await journal.last_undoable(
                [Path(f).resolve() for f in files], by=person
            )
        )
    except ActionError as exc:
        host.notify(str(exc), severity="error")
        return False
    if entry is None:
        yours = "" if person is None else f" of {person}'s"
        host.notify(f"nothing{yours} to undo in the journal for these files")
        return False
    if person is not None and not acted_by(entry.user, person):
        # The doctor offers any unfinished entry's undo: through serve, each
        # person's actions are theirs to undo.
        host.notify(
            f"journal #{entry.id} is {entry.user}'s action: through serve you "
            "undo only your own",
            severity="error",
        )
        return False
    what = f"{entry.action} of {entry.subject}" if entry.subject else entry.action
    running = journal.running(entry.id) if entry.unfinished else None
    if running:
        state = (
            f"it is running right now in {running}: undo waits a few seconds for "
            "it to finish, then refuses"
        )
    elif entry.unfinished:
        state = (
            "it never finished (interrupted): puts back the journaled rows now "
            "missing or altered, leaves the others as they are"
        )
    else:
        effect = await asyncio.to_thread(undo_effect, entry, journal.get_sync)
        state = "restores the rows exactly as they were before it" + (
            f" ({effect})" if effect else ""
        )
    since = await asyncio.to_thread(stored_since, journal, entry)
    lines = [
        f"undo journal entry #{entry.id}: {what} by {entry.user}",
        state,
        *since,
        "refused if anything changed those rows since",
    ]
    answer = await host.app.push_screen_wait(
        ActionScreen(f"Undo {entry.action}", lines, noop=False, ask_reason=False)
    )
    if answer is None or not answer.confirm:
        return False
    try:
        result = await undo(workspace, entry.id, journal)
    except ActionError as exc:
        host.notify(str(exc), severity="error")
        return False
    if result.recorded:
        host.notify(
            f"journal #{entry.id} was undone already: its undo #{result.undo_entry_id} "
            "had committed before it was interrupted; the journal now says so"
        )
        return True
    in_place = (
        f"; {result.rows_in_place} were already in place"
        if entry.unfinished and result.rows_in_place
        else ""
    )
    restored = plural(result.rows_restored, "row")
    effect = await asyncio.to_thread(undo_effect, entry, journal.get_sync)
    host.notify(
        f"undone: journal #{entry.id} ("
        + (f"{effect}; " if effect else "")
        + f"{restored} restored{in_place})"
    )
    return True
