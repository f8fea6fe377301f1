"""A run's status, defined once: lovia's head statuses, ``stale``, and the effective status.

A crashed run's head still says ``running``; only a stale save, or lovia
web's own run record (settled at its restart), tells it is dead. The app,
the CLI and doctor all label runs and explain them from here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson

from lovia_tui.core.formatting import age_since
from lovia_tui.core.stored import UNREADABLE

if TYPE_CHECKING:  # the records carry their status; this module only reads them
    from lovia_tui.core.models import RunInfo


class RunStatus(StrEnum):
    """A checkpoint's status as shown and filtered: lovia's four, and ``stale``
    (running, but lovia web settled it or it saved nothing for ``stale_after``).

    ``StrEnum`` members compare equal to the strings lovia stores
    (``RunStatus.RUNNING == "running"``); their order is the filters' order.
    """

    RUNNING = "running"
    STALE = "stale"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    COMPLETED = "completed"


STATUS_FILTERS = tuple(status.value for status in RunStatus)
"""What ``--status`` and the runs pane's filter accept (besides :data:`ALL_RUNS`)."""
ALL_RUNS = "all"
"""The runs pane's filter that hides nothing."""
# UNREADABLE: the status of a head that does not parse, listed with the
# unfinished runs (defined with the other stored values that do not read).
OTHER = "other"
"""Where a head status lovia does not write is counted (a future lovia's, a
foreign writer's: ``"bogus"``, a number, an object); shown as it is stored."""
STATUS_GROUPS = frozenset({*STATUS_FILTERS, UNREADABLE})
"""The statuses counted under their own name; any other is :data:`OTHER`."""
LIST_ORDER: tuple[str | None, ...] = (
    RunStatus.RUNNING.value,
    RunStatus.INTERRUPTED.value,
    RunStatus.FAILED.value,
    None,
    RunStatus.COMPLETED.value,
)
"""The order of every list of runs (the Runs pane, ``lovia-tui runs``), by the
status the head stores: running heads first (live or crashed: what a person
diagnosing a crash comes to look at), then interrupted, failed, any other or
unreadable status (None), completed last. Each group is most recently saved
first across the files, but completed runs go file by file (the pane finds a
position in one file's walk; interleaving files would hold every completed
head). Stored status, not staleness: a run going stale keeps its place."""
DEFAULT_STALE_AFTER = 300.0
"""Seconds without a save after which a running head counts as stale (``--stale-after``)."""
WEB_SETTLED = frozenset({"interrupted", "failed", "cancelled", "completed"})
"""``chat_runs`` statuses lovia web writes once a run is over (never while live)."""

RUNNING_CALL = "⏳ running: no result yet"
"""A live run's pending call: its process is executing it right now."""
DANGLING_CALL = "⚠ no result: a resume re-executes it"
"""A dead run's pending call: no result will come unless it is resumed."""


def status_text(value: Any) -> str:
    """A stored head status as shown: text as it is, any other JSON value as its
    JSON text (as SQLite's ``json_extract`` gives it), ``unreadable`` if none."""
    if value is None:
        return UNREADABLE
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def list_rank(status: str) -> int:
    """Where a head that stores ``status`` goes in :data:`LIST_ORDER`."""
    return LIST_ORDER.index(status if status in LIST_ORDER else None)


def status_group(label: str) -> str:
    """Which count a status label goes to: its own, or :data:`OTHER`."""
    return label if label in STATUS_GROUPS else OTHER


def head_is_stale(
    status: str,
    updated_at: float | None,
    web_settled: bool,
    now: float,
    stale_after: float,
) -> bool:
    """The rule: running in its head, yet dead (lovia web settled it, or no save
    for ``stale_after`` seconds). Shared by full records and the run index's marks.
    A save time that does not read is no evidence of death: such a run may be live."""
    return status == RunStatus.RUNNING and (
        web_settled or (updated_at is not None and now - updated_at >= stale_after)
    )


def effective_status(
    status: str,
    updated_at: float | None,
    web_settled: bool,
    now: float,
    stale_after: float,
) -> str:
    """``stale`` where :func:`head_is_stale`, else the head's own status."""
    stale = head_is_stale(status, updated_at, web_settled, now, stale_after)
    return RunStatus.STALE.value if stale else status


def status_label(run: RunInfo, now: float, stale_after: float) -> str:
    """A run's effective status: running / stale / its head status."""
    return effective_status(
        run.status, run.updated_at, run.web_settled, now, stale_after
    )


def web_reason(run: RunInfo) -> str:
    """What lovia web's record says of a run its head calls running."""
    when = " at restart" if run.web_status == RunStatus.INTERRUPTED else ""
    return f"lovia web marked it {run.web_status}{when}"


def stale_reason(run: RunInfo, now: float, stale_after: float) -> str | None:
    """Why a run whose head says running is not live, as a clause; None if it may be."""
    if run.web_settled:
        return web_reason(run)
    if run.is_stale(now, stale_after):
        crashed = f"no save for {age_since(now, run.updated_at)}: likely crashed"
        return crashed + WEB_MAY_RUN if run.web_status == RunStatus.RUNNING else crashed
    return None


WEB_MAY_RUN = (
    ", unless lovia web's server is up: its record still says running, as while "
    "the server waits for an approval or after it reconnected the run (its "
    "start-up marks a dead run's record interrupted)"
)
"""A stale head whose lovia web record says running: the server saves nothing
while it waits for an approval (up to 10 minutes) nor, once reconnected,
before the run's next turn; only the person knows whether it is up."""
