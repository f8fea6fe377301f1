"""Performing a previewed action through lovia, journaled so it can be undone.

``perform`` journals the rows the preview was computed from (refusing if they
changed), then, in one write transaction per file held across the check and
the change (:mod:`lovia_tui.core.actions.locked_stores`), checks them again, runs
lovia's own store methods (never raw SQL) and reads what they left. No other
process can write those rows in between, so nothing outside the preview is
removed and the journal holds every row that is. Everything that can be
prepared — lovia's imports, the capture, the journal entry — is done before
the lock is taken; lovia's writers wait for it, they do not fail.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lovia_tui.core.actions import journal_undo
from lovia_tui.core.actions.entry_locks import RunInUseError, refuse_runs_in_use
from lovia_tui.core.actions.journal import UNDO_WAIT_SECONDS, Journal
from lovia_tui.core.actions.journal_file import JournalError, size_note
from lovia_tui.core.actions.performers import PERFORMERS
from lovia_tui.core.actions.plans import capture_groups, refuse_readonly
from lovia_tui.core.actions.previews import (
    ClearPreview,
    FinalizePreview,
    Preview,
    RewindPreview,
    TrimPreview,
    preview_dict,
    subject,
)
from lovia_tui.core.actions.undo import UndoResult
from lovia_tui.core.errors import ActionError, RowsChangedError
from lovia_tui.core.formatting import command_line
from lovia_tui.core.store import row_check
from lovia_tui.core.store.rows import (
    Captured,
    RowGroup,
    capture_all,
    capture_tail,
    combined,
    identity,
)
from lovia_tui.core.store.workspace import Workspace

if TYPE_CHECKING:
    from pathlib import Path

    from lovia_tui.core.actions.locked_stores import HeldConnection, Stores
    from lovia_tui.core.actions.lovia_served import Prepared


@dataclass(frozen=True)
class ActionResult:
    """What an action did; ``journal_id`` undoes it (None when nothing was done).

        ``warnings`` are sentences to show beside the result: lovia's counts
        differing from the preview's (a bug to report: the change is committed,
        and the journal holds every row it removed), or a journal that could not
        record the outcome. ``held_ms`` is how long the files were locked (from
    the last lock taken to the commit).
    """

    action: str
    journal_id: int | None
    counts: dict[str, int]
    warnings: tuple[str, ...] = ()
    held_ms: float = 0.0


class _Changed(Exception):
    """The rows differ from the preview's, seen under the lock."""


def _changed(action: str) -> RowsChangedError:
    return RowsChangedError(
        f"the rows this {action} touches changed since the preview; "
        "nothing was done: preview it again"
    )


async def perform(
    ws: Workspace,
    preview: Preview,
    *,
    reason: str | None = None,
    journal: Journal | None = None,
) -> ActionResult:
    """Do what ``preview`` says, or raise ActionError without changing anything.

    Refused in a read-only workspace, and when the rows the preview was
    computed from have changed since (preview again and confirm again). If
    the process dies part-way the journal entry stays pending, and undoing
    it puts back every row removed.
    """
    refuse_readonly(ws)
    if preview.noop:
        return ActionResult(preview.action, None, {})
    journal = journal or Journal()
    refuse_runs_in_use(journal.path, preview.plan.groups)  # again under the lock
    load_lovia()
    before = await capture_groups(ws, preview.plan.groups)
    if combined(before) != preview.plan.fingerprint:
        raise _changed(preview.action)
    entry_id = await journal.begin(
        preview.action, preview_dict(preview), reason, before,
        subject=subject(preview), adds=_adds(preview),
    )  # fmt: skip
    try:
        return await _perform_journaled(ws, preview, before, journal, entry_id)
    finally:
        journal.release(entry_id)  # however it ends: the entry runs no more


async def _perform_journaled(
    ws: Workspace,
    preview: Preview,
    before: list[Captured],
    journal: Journal,
    entry_id: int,
) -> ActionResult:
    """Act under the entry's lock, and record the outcome."""
    write_lock = load_lovia()
    try:
        counts, after, held_ms = await asyncio.to_thread(
            _act_locked, preview, before, journal.path
        )
    except _Changed:
        await journal.finish(
            entry_id, "rolled back", {}, "rows changed since the preview"
        )
        raise _changed(preview.action) from None
    except RunInUseError as exc:
        await journal.finish(entry_id, "rolled back", {}, str(exc))
        raise
    except write_lock.PartlyCommitted as exc:
        await journal.finish(entry_id, "failed", {}, str(exc))
        raise ActionError(
            f"{preview.action} was interrupted half way ({exc}); "
            f"`{command_line('undo', *ws.paths, entry_id, '--yes')}` puts back "
            "every row it removed"
        ) from exc
    except Exception as exc:
        error = str(exc) or type(exc).__name__
        await journal.finish(entry_id, "rolled back", {}, error)
        raise ActionError(
            f"{preview.action} failed and was rolled back, nothing changed: {error}"
        ) from exc
    mismatches = _mismatches(preview, counts)
    warnings = [
        f"BUG (please report): {mismatch}; the change is committed and journal "
        f"entry {entry_id} holds every row it removed"
        for mismatch in mismatches
    ]
    try:
        await journal.finish(
            entry_id, "done", counts, "; ".join(mismatches) or None,
            list(zip(before, after, strict=True)),
        )  # fmt: skip
    except JournalError as exc:  # committed: say so, and how to undo it anyway
        warnings.append(
            f"done, but the journal could not record that it finished ({exc}): "
            f"entry {entry_id} stays pending, and undoing it puts every row back"
        )
    if note := size_note(journal.path):
        warnings.append(note)
    return ActionResult(preview.action, entry_id, counts, tuple(warnings), held_ms)


def load_lovia() -> Any:
    """Import what acting needs of lovia (slow: ~0.3 s cold), never under the lock.

    Call it before the preview too when the action will follow at once (the
    CLI's ``--yes``): the shorter the gap, the less likely the rows moved on.
    """
    import lovia.transcript  # noqa: F401  (the finalize's)
    import lovia.web.sse  # noqa: F401  (lovia_private.usage_dict's)

    from lovia_tui.core.actions import write_lock  # and locked_stores, lovia's

    return write_lock


def _act_locked(
    preview: Preview, journaled: list[Captured], journal: Path
) -> tuple[dict[str, int], list[Captured], float]:
    """Check, act and read back under one write lock per file (on a worker thread).

    The check: every row exactly as journaled (which matched the preview),
    under the same rowid, and no resume of a run whose rows they are running.
    """
    from lovia_tui.core.actions.locked_stores import Stores
    from lovia_tui.core.actions.write_lock import held_write, locked_since

    prepared = _prepare(preview, journaled)

    def stage(held: dict[Path, HeldConnection]) -> None:
        row_check.stage(Stores(held).connection, journaled)

    def check(held: dict[Path, HeldConnection]) -> None:
        if not row_check.unchanged(Stores(held).connection, journaled):
            raise _Changed

    files = (g.file for g in preview.plan.groups)
    with held_write(files, check, stage) as held:
        refuse_runs_in_use(journal, preview.plan.groups)
        stores = Stores(held)
        # A loop of its own: the locked stores run lovia's statements inline.
        counts = asyncio.run(PERFORMERS[type(preview)](preview, stores, prepared))
        after = _read_back(stores, preview, journaled)
        if isinstance(preview, ClearPreview):  # its session's rows come first
            counts["segments_removed"] = len(journaled[0].rows) - len(after[0].rows)
    return counts, after, (time.perf_counter() - locked_since(held)) * 1000


def _prepare(preview: Preview, journaled: list[Captured]) -> Prepared | None:
    """What lovia would compute under the lock that can be computed before it,
    from the rows captured (the check under the lock finds them so, or
    nothing is done): a rewind's read of its session from the cut, a trim's
    of the whole session, and what each computes from it
    (:mod:`~lovia_tui.core.actions.lovia_served`)."""
    if not isinstance(preview, RewindPreview | TrimPreview):
        return None
    from lovia_tui.core.actions import lovia_served

    session = RowGroup(preview.file, "session_runs", preview.session_id)
    rows = next((c for c in journaled if c.group == session), None)
    if rows is None or not {"id", "run_id", "entries_json"} <= set(rows.columns):
        return None
    run, text = rows.columns.index("run_id"), rows.columns.index("entries_json")
    if isinstance(preview, TrimPreview):
        return lovia_served.prepare_trim(
            [
                (rowid, row[text])
                for rowid, row in zip(rows.rowids, rows.rows, strict=True)
            ],
            preview.keep_chars,
            preview.keep_runs,
        )
    if preview.cut_row is None:
        return None
    return lovia_served.prepare_rewind(
        (rowid, row[run], row[text])
        for rowid, row in zip(rows.rowids, rows.rows, strict=True)
        if rowid >= preview.cut_row
    )


def _read_back(
    stores: Stores, preview: Preview, before: list[Captured]
) -> list[Captured]:
    """The groups' rows after the action, under its lock. A rewind changes no
    session row before its cut (``LockedSession.rewind_from``; a test fails
    if lovia's rewind writes otherwise): its session is read from the cut."""
    if not isinstance(preview, RewindPreview) or preview.cut_row is None:
        return capture_all(stores.connection, [c.group for c in before])
    cut_row = preview.cut_row
    session = RowGroup(preview.file, "session_runs", preview.session_id)
    others = [c.group for c in before if c.group != session]
    read = dict(zip(others, capture_all(stores.connection, others), strict=True))
    return [
        capture_tail(stores.connection(c.group.file), c, cut_row)
        if c.group == session
        else read[c.group]
        for c in before
    ]


def _adds(preview: Preview) -> list[tuple[str, ...]]:
    """Per plan group, the rows the action means to add: a finalize's segment."""
    if not isinstance(preview, FinalizePreview) or preview.entries_appended == 0:
        return []
    target = RowGroup(preview.file, "session_runs", preview.session_id)
    name = identity("text", preview.run_id.encode())
    return [(name,) if group == target else () for group in preview.plan.groups]


def _expected(preview: Preview) -> dict[str, int]:
    if isinstance(preview, RewindPreview):
        return {"entries_removed": preview.entries_removed}
    if isinstance(preview, TrimPreview):
        return {"results_trimmed": preview.results_trimmed}
    if isinstance(preview, FinalizePreview):
        return {"entries_appended": preview.entries_appended}
    if isinstance(preview, ClearPreview):
        return {"segments_removed": preview.segments}
    return {}


def _mismatches(preview: Preview, counts: dict[str, int]) -> list[str]:
    """lovia's counts that differ from the preview's, each with both numbers."""
    return [
        f"{what.replace('_', ' ')}: lovia {counts[what]}, the preview {expected}"
        for what, expected in _expected(preview).items()
        if counts.get(what) != expected
    ]


async def undo(
    ws: Workspace,
    entry_id: int,
    journal: Journal | None = None,
    wait: float = UNDO_WAIT_SECONDS,
) -> UndoResult:
    """Undo a journaled action on the workspace's files (see
    :func:`~lovia_tui.core.actions.journal_undo.undo`)."""
    refuse_readonly(ws)
    files = [db.path for db in ws.databases]
    return await journal_undo.undo(journal or Journal(), entry_id, files, wait)
