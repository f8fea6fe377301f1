"""The soak's actions on the sessions the writers are appending to, and their undo.

The app rewinds, trims and clears a writer's own session through its dialogs
while the writer keeps appending to it. Each is either refused (the rows moved
on between the preview and Confirm: nothing changed, and the app shows the
new preview to confirm again) or done under one write lock, removing nothing
outside its preview. When the writers have stopped,
every such action is undone, newest first — keeping what the writers appended
since — so every row a writer ever committed must read back byte for byte.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.perform import undo
from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.workspace import Workspace

REFUSED = "rows moved on since the preview"
"""What the app says when it shows the preview again (a warning, not an error)."""
DONE = "u undoes it"
"""The end of the app's note for an action done."""
PLAN = ("rewind", "trim", "clear")


def is_live(session_id: object) -> bool:
    """A writer's session (``w{n}-s{k}``), not a seeded victim."""
    return isinstance(session_id, str) and session_id.startswith("w")


def live_target(number: int, writers: int) -> tuple[str, str]:
    """The action and writer session of the ``number``-th live action."""
    return PLAN[number % len(PLAN)], f"w{number % writers}-s{number % 3}"


async def act_live(
    act: Callable[..., Awaitable[str | None]], pilot, screen, db: Path, number: int,
    writers: int, watch, report,
) -> None:  # fmt: skip
    action, session_id = live_target(number, writers)
    report.app_steps[f"live {action}"] += 1
    seen = len(watch.notes)
    # The app previews again each time the rows moved on; act confirms again.
    problem = await act(pilot, screen, db, action, session_id)
    notes = [text for _, text in watch.notes[seen:]]
    if problem:  # with what the app said meanwhile: its toasts are gone by now
        report.app_errors.append(
            f"live {action} on {session_id}: {problem}; said {notes}"
        )
        return
    report.live_refused += sum(REFUSED in text for text in notes)
    if any(text.endswith(DONE + ")") for text in notes):
        report.live_done[action] += 1


async def undo_live(db: Path, report) -> None:
    """Undo every action done on a writer's session, newest first."""
    entries = await Journal().entries([db], 1_000)
    ws = await Workspace.open([db])
    try:
        for entry in entries:
            if entry.action == "undo" or entry.status != "done":
                continue
            if not is_live(entry.params.get("session_id")) or entry.undone_by:
                continue
            try:
                await undo(ws, entry.id)
            except ActionError as exc:
                report.app_errors.append(
                    f"undo of live {entry.action} #{entry.id}: {exc}"
                )
            else:
                report.live_undone += 1
    finally:
        await ws.close()
