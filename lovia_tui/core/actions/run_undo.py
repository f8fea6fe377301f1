"""Undoing an interrupted resume or replay: what its entry says the run did,
and when the rows show that another writer went on with the run.

The run names each row before lovia writes it (core.runs.run_journal): its
batches (with the time, and marked written once lovia saved them), its
segment, and its checkpoint's deletion. Everything else found on its rows
since it was interrupted is another writer's, and undoing over it would
lose that: :func:`refuse_moved_on` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lovia_tui.core.actions.row_undo import ChangedSinceError, Journaled
from lovia_tui.core.store.rows import Captured, identity

RUN_ACTIONS = frozenset({"resume", "replay"})
"""Actions journaled while lovia writes over minutes (core.runs.run_journal):
interrupted, their rows are as journaled, as the run left them, or between."""
POINTER_COLUMNS = frozenset({"active_run_id", "updated_at"})
"""What a run's settling changes in its chat's row; anything else is the chat's."""


WRITTEN = "written "
"""Before a row's name in a resume's entry: lovia wrote it (named first, then
written: a row named but not marked may be another writer's)."""
NAMED_AT = "named at "
"""Before the time a batch was named and its name, in a resume's entry."""
DELETED = "checkpoint deleted by the run"
"""In a resume's entry: the run deletes its checkpoint (``delete_on_success``)."""


class MovedOnError(ChangedSinceError):
    """An interrupted resume or replay whose run another writer went on with."""


def refuse_moved_on(
    groups: Sequence[Journaled], current: Sequence[Captured], what: str
) -> None:
    """Refuse to undo an interrupted resume or replay over what others did
    since. Its rows are as journaled, as the run left them, or between; the
    run named each row before adding it and each batch again once written,
    and its checkpoint's deletion before it (core.runs.run_journal); it
    clears its chat's pointer only once its segment is stored. Anything else
    is another writer's: lovia or lovia web went on with the run, stopped it,
    started another in the chat, or the chat was edited."""
    found = {rows.group.table: (rows, added or (), now)
             for (rows, _, added), now in zip(groups, current, strict=True)}  # fmt: skip
    heads, deleting, _ = found["snapshot_heads"]
    segment = identity("text", heads.group.key.encode())
    stored = "session_runs" in found and segment in found["session_runs"][1]
    for table, (rows, added, now) in found.items():
        journaled = dict(zip(rows.identities(), rows.rows, strict=True))
        present = dict(zip(now.identities(), now.rows, strict=True))
        if table == "snapshot_turns":
            written = _written(added, found["snapshot_heads"][2])
            moved = any(
                name not in journaled
                and name not in written
                or journaled.get(name, row) != row
                for name, row in present.items()
            )
        elif table == "session_runs":
            moved = segment in present and segment not in journaled and not stored
        elif table == "snapshot_heads":
            moved = bool(journaled) and not present and DELETED not in deleting
        elif table == "chat_sessions" and rows.rows and now.rows:
            was, cells = _cells(rows), _cells(now)
            pointer = cells.get("active_run_id")
            cleared = pointer is not None and pointer[0] == "null"
            edited = any(
                was.get(column) != cell
                for column, cell in cells.items()
                if column not in POINTER_COLUMNS
            )
            # Its run clears the pointer on success, once its segment is stored.
            repointed = pointer != was.get("active_run_id") and not (stored and cleared)
            moved = edited or repointed
        else:
            moved = False
        if moved:
            raise MovedOnError(
                f"cannot undo {what}: it was interrupted, and its run moved on "
                f"since (the {table} rows for {rows.group.key!r} changed: lovia "
                "went on with it or stopped it, or the chat was edited); the "
                "files are sound as they are, and undoing would lose that",
                rows.group,
            )


def _written(added: Sequence[str], head: Captured) -> set[str]:
    """The batches a run wrote: those it marked written, and one it named
    after the head saved last was made (killed between lovia's write and the
    mark: lovia makes a save's head, stamped with its time, before it calls
    the checkpointer that names the batch; another writer's save, made after
    the run died, is stamped later)."""
    written = {n.removeprefix(WRITTEN) for n in added if n.startswith(WRITTEN)}
    kind, saved = _cells(head).get("updated_at", ("null", None))
    if kind != "real":
        return written
    for note in (n.removeprefix(NAMED_AT) for n in added if n.startswith(NAMED_AT)):
        named, name = note.split(" ", 1)
        if float(saved) <= float(named):
            written.add(name)
    return written


def _cells(rows: Captured) -> dict[str, Any]:
    """A one-row group's cells by column (a head, a chat's row); {} when empty."""
    return dict(zip(rows.columns, rows.rows[0], strict=True)) if rows.rows else {}
