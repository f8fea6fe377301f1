"""A run's effective status: its head, corrected by every other record lovia keeps.

A crashed run's head still says ``running``; only a stale save, or lovia
web's own run record (settled at its restart), tells it is dead. The app,
the CLI and doctor all label runs and explain them from here.
"""

from __future__ import annotations

from lovia_tui.core.formatting import age
from lovia_tui.core.models import RunInfo

RUNNING_CALL = "⏳ running: no result yet"
"""A live run's pending call: its process is executing it right now."""
DANGLING_CALL = "⚠ no result: a resume re-executes it"
"""A dead run's pending call: no result will come unless it is resumed."""


def status_label(run: RunInfo, now: float, stale_after: float) -> str:
    """running / stale (dead: crashed, or settled by lovia web) / its head status."""
    return "stale" if run.is_stale(now, stale_after) else run.status


def web_reason(run: RunInfo) -> str:
    """What lovia web's record says of a run its head calls running."""
    when = " at restart" if run.web_status == "interrupted" else ""
    return f"lovia web marked it {run.web_status}{when}"


def stale_reason(run: RunInfo, now: float, stale_after: float) -> str | None:
    """Why a run whose head says running is not live, as a clause; None if it may be."""
    if run.web_settled:
        return web_reason(run)
    if run.is_stale(now, stale_after):
        return f"no save for {age(now - run.updated_at)}: likely crashed"
    return None
