"""Shared pilot helpers: the deterministic app and waiting without sleeps."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from snapshot_db import FILE_NAME, VIEWED_AT

from lovia_tui.app import LoviaTui, make_app

# Worker groups that wait on the user or run for the whole session.
LONG_LIVED = ("preflight", "action", "live")


def snapshot_app(directory: Path, monkeypatch, **options) -> LoviaTui:
    """The app on the deterministic database (already copied into ``directory``),
    viewed an hour after it was written."""
    monkeypatch.chdir(directory)
    monkeypatch.setattr(time, "time", lambda: VIEWED_AT)
    return make_app([FILE_NAME], **options)


async def settle(pilot, rounds: int = 100) -> None:
    """Wait until no short-lived worker is busy and the messages they posted
    are handled. Workers that wait on the user (a dialog) or live for the whole
    session (the live tail) are not waited for. Bounded; no fixed sleeps.
    """
    quiet = 0
    for _ in range(rounds):
        busy = [
            worker
            for worker in pilot.app.workers
            if not worker.is_finished and not str(worker.group).startswith(LONG_LIVED)
        ]
        if busy:
            quiet = 0
            waits = [worker.wait() for worker in busy]
            await asyncio.wait_for(
                asyncio.gather(*waits, return_exceptions=True), timeout=30
            )
        else:
            quiet += 1
            if quiet >= 3:
                return
        await pilot.pause()


async def ready_to_confirm(pilot) -> None:
    """Do what a user deliberately confirming does before pressing Enter: type
    the confirmation a wide removal asks for, and move to the button that acts."""
    from textual.widgets import Button, Input

    dialog = pilot.app.screen
    token = getattr(dialog, "token", None)
    if token:
        dialog.query_one("#typed", Input).value = token[0]
        await pilot.pause()  # the typed text enables Confirm
    dialog.query("#confirm, #go").first(Button).focus()
    await pilot.pause()


async def confirm(pilot) -> None:
    """Confirm the dialog on top deliberately (see :func:`ready_to_confirm`)."""
    await ready_to_confirm(pilot)
    await pilot.press("enter")
