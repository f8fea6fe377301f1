"""Driving the app headless: wait for its workers, never for a fixed time.

One definition of "the app has settled" for the tests, the screenshot script
and the benchmarks: no worker busy but those waiting on the user (an open
dialog) or living as long as the screen (the live tail).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.worker import Worker

from lovia_tui.view.kinds import Group

LONG_LIVED = (Group.PREFLIGHT.value, Group.ACTION.value, Group.LIVE.value)
"""Worker groups (by prefix) that wait on the user or run for the whole session."""
SETTLE_SECONDS = 60.0
"""How long :func:`settle` waits for busy workers before it fails (a loaded machine)."""


def waits_on_user(worker: Worker[Any], app: App[Any]) -> bool:
    """The live tail runs for the whole session; an action or preflight worker
    waits on the user while a dialog is open, and works (to be waited for) after."""
    group = str(worker.group)
    if group.startswith(Group.LIVE.value):
        return True
    return group.startswith(LONG_LIVED) and isinstance(app.screen, ModalScreen)


def busy_workers(
    app: App[Any], groups: tuple[str, ...] | None = None
) -> list[Worker[Any]]:
    """The workers still working that the app's next state depends on (only
    those of ``groups``, by prefix, when given)."""
    return [
        worker
        for worker in app.workers
        if not worker.is_finished
        and not waits_on_user(worker, app)
        and (groups is None or str(worker.group).startswith(groups))
    ]


def _consume(wait: asyncio.Future[Any]) -> None:
    """A waiter's outcome is the worker's, reported by the app: only retrieve it."""
    if not wait.cancelled():
        wait.exception()


async def settle(
    pilot: Pilot[Any],
    seconds: float = SETTLE_SECONDS,
    *,
    quiet: float = 0.0,
    groups: tuple[str, ...] | None = None,
) -> None:
    """Wait until :func:`busy_workers` is empty and the messages they posted are
    handled (and, with ``quiet``, has stayed so that long: a timer may start a
    worker a moment later). Bounded by time, not by rounds: on a loaded machine
    a worker may take seconds, and returning early would let a caller read too soon.
    ``groups``: wait for those workers only; beside a writer committing many
    times a second the panes' reloads never all rest at once.
    """
    calm_rounds, calm_since = 0, time.monotonic()
    deadline = calm_since + seconds
    # One waiter per worker, never cancelled: Worker.wait awaits the worker's
    # own task, so cancelling a waiter would cancel the work itself.
    waiting: dict[Worker[Any], asyncio.Future[Any]] = {}
    while calm_rounds < 3 or time.monotonic() - calm_since < quiet:
        busy = busy_workers(pilot.app, groups)
        if busy:
            calm_rounds, calm_since = 0, time.monotonic()
            for worker in busy:
                if worker not in waiting:
                    waiting[worker] = asyncio.ensure_future(worker.wait())
                    waiting[worker].add_done_callback(_consume)
            # Short waits: a worker may open a dialog and wait on the user.
            await asyncio.wait([waiting[worker] for worker in busy], timeout=0.05)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"workers still busy after {seconds:g} s: {busy}")
        else:
            calm_rounds += 1
        # Once calm, poll on a clock until ``quiet`` has passed.
        await pilot.pause(0.01 if quiet and calm_rounds >= 3 else 0)
