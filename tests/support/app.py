"""Shared pilot helpers: the deterministic app, confirming a dialog, reading rows.

Waiting for the app is :func:`lovia_tui.pilot.settle`, shared with the
screenshot script and the benchmarks.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

from lovia_tui.app import LoviaTui, make_app
from lovia_tui.pilot import settle
from support.reliability import AppWatch
from support.snapshot_db import FILE_NAME, VIEWED_AT


@asynccontextmanager
async def watched_app(
    app: LoviaTui, size: tuple[int, int]
) -> AsyncIterator[tuple[Any, AppWatch]]:
    """``app`` running headless at ``size`` and settled, what it posts and
    says watched: ``(pilot, watch)``."""
    watch = AppWatch()
    async with app.run_test(size=size, message_hook=watch.hook) as pilot:
        watch.attach(app)
        await settle(pilot)
        yield pilot, watch


def snapshot_app(directory: Path, monkeypatch, **options) -> LoviaTui:
    """The app on the deterministic database (already copied into ``directory``),
    viewed an hour after it was written."""
    monkeypatch.chdir(directory)
    monkeypatch.setattr(time, "time", lambda: VIEWED_AT)
    return make_app([FILE_NAME], **options)


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


async def runs_look_crashed(directory: Path, stale_after: float) -> None:
    """Wait until the last save of every checkpoint in ``directory``'s files is
    ``stale_after`` old: the demo's crashed runs look live that long after it
    is built, and a test run alone may start sooner."""
    saved = 0.0
    for db in directory.glob("*.db"):
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'snapshot_heads'"
            ).fetchone():
                [(newest,)] = conn.execute(
                    "SELECT MAX(updated_at) FROM snapshot_heads"
                ).fetchall()
                saved = max(saved, newest or 0.0)
    # bounded: stale_after at most, whatever time a head holds
    await asyncio.sleep(min(stale_after, max(0.0, saved + stale_after - time.time())))


def user_rows(transcript) -> list[int]:
    """Visible positions of the transcript's user messages (where turns start)."""
    return [
        n
        for n, row in enumerate(transcript.shown_rows)
        if transcript.rows[row].kind == "entry"
        and transcript.rows[row].entry.data.get("role") == "user"
    ]
