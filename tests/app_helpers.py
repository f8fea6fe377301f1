"""Shared pilot helpers: the deterministic app and waiting without sleeps."""

from __future__ import annotations

import time
from pathlib import Path

from snapshot_db import FILE_NAME, VIEWED_AT

from lovia_tui.app import LoviaTui, make_app


def snapshot_app(directory: Path, monkeypatch, **options) -> LoviaTui:
    """The app on the deterministic database (already copied into ``directory``),
    viewed an hour after it was written."""
    monkeypatch.chdir(directory)
    monkeypatch.setattr(time, "time", lambda: VIEWED_AT)
    return make_app([FILE_NAME], **options)


async def settle(pilot, rounds: int = 50) -> None:
    """Wait until no worker is busy and the messages they posted are handled.

    Workers chain (runs → transcript → summaries), so one wait is not enough;
    the loop is bounded and never sleeps for a fixed time.
    """
    quiet = 0
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        busy = any(not worker.is_finished for worker in pilot.app.workers)
        quiet = 0 if busy else quiet + 1
        if quiet >= 3:
            return
