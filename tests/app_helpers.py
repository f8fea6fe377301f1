"""Shared pilot helpers: the deterministic app and waiting without sleeps."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from snapshot_db import FILE_NAME, VIEWED_AT
from textual.screen import ModalScreen

from lovia_tui.app import LoviaTui, make_app

# Worker groups that wait on the user or run for the whole session.
LONG_LIVED = ("preflight", "action", "live")


def snapshot_app(directory: Path, monkeypatch, **options) -> LoviaTui:
    """The app on the deterministic database (already copied into ``directory``),
    viewed an hour after it was written."""
    monkeypatch.chdir(directory)
    monkeypatch.setattr(time, "time", lambda: VIEWED_AT)
    return make_app([FILE_NAME], **options)


def _waits_on_user(worker, app) -> bool:
    """The live tail runs for the whole session; an action or preflight worker
    waits on the user while a dialog is open, and works (to be waited for) after."""
    group = str(worker.group)
    if group.startswith("live"):
        return True
    return group.startswith(LONG_LIVED) and isinstance(app.screen, ModalScreen)


SETTLE_SECONDS = 60
"""How long settle waits for busy workers before it fails (a loaded machine)."""


def _consume(wait: asyncio.Future) -> None:
    """A waiter's outcome is the worker's, reported by the app: only retrieve it."""
    if not wait.cancelled():
        wait.exception()


async def settle(pilot) -> None:
    """Wait until no worker is busy but those waiting on the user (a dialog) or
    living for the whole session (the live tail), and the messages they posted
    are handled. Bounded by time, not by rounds: on a loaded machine a worker
    may take seconds, and returning early would let a test read too soon.
    """
    quiet = 0
    deadline = time.monotonic() + SETTLE_SECONDS
    # One waiter per worker, never cancelled: Worker.wait awaits the worker's
    # own task, so cancelling a waiter would cancel the work itself.
    waiting: dict[object, asyncio.Future] = {}
    while quiet < 3:
        busy = [
            worker
            for worker in pilot.app.workers
            if not worker.is_finished and not _waits_on_user(worker, pilot.app)
        ]
        if busy:
            quiet = 0
            for worker in busy:
                if worker not in waiting:
                    waiting[worker] = asyncio.ensure_future(worker.wait())
                    waiting[worker].add_done_callback(_consume)
            # Short waits: a worker may open a dialog and wait on the user.
            await asyncio.wait([waiting[worker] for worker in busy], timeout=0.05)
            assert time.monotonic() < deadline, f"workers still busy: {busy}"
        else:
            quiet += 1
        await pilot.pause()


async def ready_to_confirm(pilot) -> None:
    """Do what a user deliberately confirming does before pressing Enter: type
    the confirmation a wide removal asks for, and move to the button that acts
    (Cancel, in a dialog with nothing to do)."""
    from textual.widgets import Button, Input

    dialog = pilot.app.screen
    for _ in range(200):  # bounded: the dialog's own first focus lands after mount
        focused = pilot.app.focused
        if focused is not None and focused.screen is dialog:
            break
        await pilot.pause()
    typed = list(dialog.query("#typed").results(Input))
    token = getattr(dialog, "token", None)
    if token and typed:
        typed[0].value = token[0]
        await pilot.pause()  # the typed text enables Confirm
    buttons = list(dialog.query("#confirm, #go").results(Button)) or list(
        dialog.query("#cancel").results(Button)
    )
    if not buttons:
        return  # the dialog closed meanwhile
    button = buttons[0]
    for _ in range(200):  # bounded: the typed text enables Confirm a moment later
        if pilot.app.focused is button or pilot.app.screen is not dialog:
            return
        if not button.disabled:
            dialog.set_focus(button)  # at once (Widget.focus waits a refresh)
            continue
        await pilot.pause()
    raise AssertionError(f"{button} never took the focus")


async def confirm(pilot) -> None:
    """Confirm the dialog on top deliberately (see :func:`ready_to_confirm`)."""
    await ready_to_confirm(pilot)
    await pilot.press("enter")


def user_rows(transcript) -> list[int]:
    """Visible positions of the transcript's user messages (where turns start)."""
    return [
        n
        for n, row in enumerate(transcript.window.visible)
        if transcript.rows[row].kind == "entry"
        and transcript.rows[row].entry.data.get("role") == "user"
    ]
