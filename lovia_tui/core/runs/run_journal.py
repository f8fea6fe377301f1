"""A resume or replay journaled like any action, so that undo puts the files back.

A run continued through lovia changes rows over minutes, not under one
lock: its checkpoint (new batches, its head, deleted on success), its
session (its segment appended) and lovia web's records of it. Before lovia
starts, those rows are journaled as they are. Each batch lovia is about to
save is named in the entry before lovia writes it, so undoing a run that was
killed part-way takes out exactly the batches it saved. When the run ends,
what it left is recorded, as for any action. Only the run's own rows are
journaled: another writer's segments in the same session are never touched
by the undo.

lovia numbers a run's batches ``MAX(seq) + 1`` in the transaction that
writes them (``SQLiteCheckpointer._append_sync``), and nothing else writes a
run that is resumed (a lock file per run keeps a second lovia-tui out; lovia
itself would find the run live): the next batch is the one after the last
journaled.
``tests/core/test_run_journal.py`` fails if lovia numbers them otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia_tui.core.actions.describe import counts_text
from lovia_tui.core.actions.entry_locks import EntryLock, run_lock_name
from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.journal_file import JournalError
from lovia_tui.core.actions.row_undo import only_rows
from lovia_tui.core.actions.run_undo import DELETED, NAMED_AT, WRITTEN
from lovia_tui.core.formatting import plural
from lovia_tui.core.runs.run_start import start_entry
from lovia_tui.core.store.connect import read_rows
from lovia_tui.core.store.rows import Captured, RowGroup, capture_now, identity

if TYPE_CHECKING:
    from lovia import SQLiteCheckpointer, SQLiteSession

    from lovia_tui.core.runs.preflight import Preflight


def _run_groups(pf: Preflight) -> list[RowGroup]:
    """The rows a resume or replay may change (its session's first, if any)."""
    run_id, file = pf.run.run_id, pf.checkpoint_file
    groups = [
        RowGroup(file, "snapshot_heads", run_id),
        RowGroup(file, "snapshot_turns", run_id),
    ]
    if pf.web_chat is not None:
        groups += [
            RowGroup(file, "chat_runs", run_id),
            RowGroup(file, "chat_sessions", pf.web_chat),
        ]
    if pf.session_file is not None and pf.session_id is not None:
        groups.insert(0, RowGroup(pf.session_file, "session_runs", pf.session_id))
    return groups


STORED_SQL = "SELECT 1 FROM session_runs WHERE session_id = ? AND run_id = ? LIMIT 1"
LAST_SEQ_SQL = "SELECT MAX(seq) FROM snapshot_turns WHERE run_id = ?"


@dataclass
class RunJournal:
    """The journal entry of one resume or replay while it runs."""

    journal: Journal
    entry_id: int
    before: list[Captured]
    adding: list[list[str]]
    """Per group, the rows the run adds: its segment, then each batch it saves."""
    segment: str
    """The name of the run's segment in its session's group."""
    next_seq: int
    run_lock: EntryLock
    """Held while the run goes: a second lovia-tui resuming the same run is
    refused (its tool calls would run twice, and lovia mix both runs' batches)."""
    unnamed: list[str] = field(default_factory=list)
    """Why batches went unnamed (the journal was busy): interrupted, the
    entry's undo then refuses rather than leave them (core.actions.run_undo)."""
    moved: bool = False
    """Its checkpoint was not as the run left it when it saved a batch: another
    process deleted it or saved batches of it (a lovia-tui with another
    journal), and lovia numbered on from what it found."""
    preempted: bool = False
    """Another process stored a segment of this run in its session while it
    went (a keep-partial, a finalize): lovia's append then keeps that one, so
    this run's result is only in its checkpoint, which is therefore kept."""

    @classmethod
    async def begin(
        cls, journal: Journal, pf: Preflight, reason: str | None = None
    ) -> RunJournal:
        """Journal the run's rows as they are now; ActionError when another
        lovia-tui resumes the run or a file has triggers of its own,
        JournalError when the journal cannot be written: then the run does
        not start."""
        run_lock = await asyncio.to_thread(
            EntryLock.take, journal.path, run_lock_name(pf.checkpoint_file, pf.run.run_id), 0.0,
            f"a resume or replay of run {pf.run.run_id!r}",
        )  # fmt: skip
        try:
            return await cls._begin(journal, pf, run_lock, reason)
        except BaseException:
            run_lock.release(remove=True)
            raise

    @classmethod
    async def _begin(
        cls, journal: Journal, pf: Preflight, run_lock: EntryLock, reason: str | None
    ) -> RunJournal:
        groups = _run_groups(pf)
        entry_id, before = await asyncio.to_thread(
            start_entry, journal, pf, groups, reason
        )
        segment = identity("text", pf.run.run_id.encode())
        adding: list[list[str]] = [[] for _ in before]
        turns = next(r for r in before if r.group.table == "snapshot_turns")
        seqs = turns.column("seq") if turns.rows else []
        # A seq stored as another type (not lovia's) makes lovia's own
        # numbering differ: the batches then go unclaimed, never misnamed.
        next_seq = max((q for q in seqs if type(q) is int), default=-1) + 1
        return cls(journal, entry_id, before, adding, segment, next_seq, run_lock)

    @functools.cached_property
    def at(self) -> dict[str, int]:
        """Each table's group, by position in :attr:`before`."""
        return {rows.group.table: at for at, rows in enumerate(self.before)}

    async def save_batch(self, write: Callable[[], Awaitable[None]]) -> None:
        """Have lovia save a batch, named in the entry (with the time) before
        it is written and marked written once it is: a batch named but not
        marked is the run's only if the head saved last was made before it
        was named (killed between lovia's write and the mark), else another
        writer's, saved after this run was killed."""
        turns = self.at["snapshot_turns"]
        group = self.before[turns].group
        [(last,)] = await asyncio.to_thread(
            read_rows, group.file, LAST_SEQ_SQL, (str(group.key),)
        )
        if last != (self.next_seq - 1 if self.next_seq else None):
            self.moved = True  # deleted or saved over by another process meanwhile
        name = identity("integer", self.next_seq)
        self.next_seq += 1
        await self._name(turns, name, f"{NAMED_AT}{time.time()!r} {name}")
        await write()
        await self._name(turns, WRITTEN + name)

    async def before_delete(self) -> None:
        """Say in the entry that the run deletes its checkpoint (lovia's
        ``delete_on_success``), before lovia does."""
        await self._name(self.at["snapshot_heads"], DELETED)

    async def before_append(self, session_id: str, run_id: str | None) -> None:
        """Name the run's segment before lovia appends it to its session."""
        at = self.at.get("session_runs")
        ours = run_id is not None and identity("text", run_id.encode()) == self.segment
        if at is None or not ours or session_id != self.before[at].group.key:
            return
        if self.segment in self.before[at].identities():
            return  # stored before the run began: lovia ignores the append
        group = self.before[at].group
        stored = (session_id, str(run_id))
        if await asyncio.to_thread(read_rows, group.file, STORED_SQL, stored):
            self.preempted = True  # stored by another process since
        else:
            await self._name(at, self.segment)

    async def _name(self, at: int, *names: str) -> None:
        """A row the run is about to add, named in its entry first. A journal
        too busy to say so does not fail the run (its tool calls have run):
        the row goes unnamed, and the run's end records it."""
        try:
            await self.journal.adding(self.entry_id, at, *names)
        except JournalError as exc:
            self.unnamed.append(str(exc))
        else:
            self.adding[at] += names

    def checkpointer(self, file: Path) -> SQLiteCheckpointer:
        """lovia's checkpointer on ``file``, saying in the entry what it is
        about to write or delete first."""
        from lovia import SQLiteCheckpointer

        run_journal = self

        class Journaled(SQLiteCheckpointer):
            async def append(self, run_id: str, entries: Any, head: Any) -> None:
                write = super().append
                if entries:
                    await run_journal.save_batch(lambda: write(run_id, entries, head))
                else:
                    await write(run_id, entries, head)

            async def delete(self, run_id: str) -> None:
                if run_journal.preempted:
                    return  # the run's result is in the checkpoint alone
                await run_journal.before_delete()
                await super().delete(run_id)

        return Journaled(file, wal=True)

    def session(self, file: Path) -> SQLiteSession:
        """lovia's session store on ``file``, naming the run's segment in the
        entry before lovia appends it."""
        from lovia import SQLiteSession

        run_journal = self

        class Journaled(SQLiteSession):
            async def append(
                self, session_id: str, entries: Any, **options: Any
            ) -> str:
                await run_journal.before_append(session_id, options.get("run_id"))
                return await super().append(session_id, entries, **options)

        return Journaled(file, wal=True)

    async def finish(self) -> str:
        """Record what the run left; says how undo puts it back."""
        now = await asyncio.to_thread(capture_now, [r.group for r in self.before])
        new = [
            [n for n in rows.identities() if n not in was.identities()]
            for rows, was in zip(now, self.before, strict=True)
        ]
        turns = self.at["snapshot_turns"]
        foreign = set(new[turns]) - set(self.adding[turns])
        if (foreign and not self.unnamed) or self.moved:
            # Another process (a lovia-tui with another journal) saved batches
            # of this run meanwhile, or deleted its checkpoint: which rows are
            # whose is unknown, so the entry stays unfinished and its undo
            # refuses rather than guess.
            note = "another process changed this run's checkpoint meanwhile"
            await self.journal.finish(self.entry_id, "failed", {}, note)
            return f"journal entry {self.entry_id}: {note}; it cannot be undone"
        if self.unnamed:  # then its new batches and segment are its own, named or not
            self.adding[turns] = new[turns]
            if (at := self.at.get("session_runs")) is not None:
                self.adding[at] = [
                    n for n in new[at] if n == self.segment and not self.preempted
                ]
        after = [
            only_rows(rows, [*was.identities(), *added])
            for rows, was, added in zip(now, self.before, self.adding, strict=True)
        ]
        if all(
            left.rows == was.rows for left, was in zip(after, self.before, strict=True)
        ):
            # Nothing to undo: a bare undo then passes over it to the action before.
            note = "the run changed no rows"
            await self.journal.finish(self.entry_id, "rolled back", {}, note)
            return f"journal entry {self.entry_id}: {note}"
        counts = _counts(self.before, after, self.adding)
        changes = list(zip(self.before, after, strict=True))
        await self.journal.finish(self.entry_id, "done", counts, None, changes)
        unnamed = (
            f"; {plural(len(self.unnamed), 'batch', 'batches')} could not be named "
            f"in it beforehand ({self.unnamed[0]})"
            if self.unnamed
            else ""
        )
        preempted = (
            "; another process stored a segment of this run in its session "
            "meanwhile, which lovia kept: this run's result was not stored there, "
            "and its checkpoint, which holds it, was kept"
            if self.preempted
            else ""
        )
        return (
            f"journal entry {self.entry_id}: undo puts back what this run changed "
            f"({counts_text(counts, undone=True)}){unnamed}{preempted}"
        )

    def release(self) -> None:
        """Let go of the entry's and the run's locks whatever happened (idempotent)."""
        self.journal.release(self.entry_id)
        self.run_lock.release(remove=True)


def _counts(
    before: list[Captured], after: list[Captured], adding: list[list[str]]
) -> dict[str, int]:
    counts = dict.fromkeys(
        (
            "segments_appended",
            "batches_saved",
            "checkpoints_deleted",
            "web_records_changed",
        ),
        0,
    )
    for was, now, added in zip(before, after, adding, strict=True):
        table, present = was.group.table, set(now.identities())
        new = sum(name in present for name in added)
        if table == "session_runs":
            counts["segments_appended"] += new
        elif table == "snapshot_turns":
            counts["batches_saved"] += new
        elif table == "snapshot_heads":
            counts["checkpoints_deleted"] += bool(was.rows) and not now.rows
        elif was.rows != now.rows:
            counts["web_records_changed"] += 1
    return counts


def undo_standing(journal: Journal, entry_id: int) -> int | None:
    """The undo whose rows stand for entry ``entry_id`` now, or None when
    what the entry did stands (never undone, or its undo undone in turn).

    An undo is an entry like any other, so it can be undone too (a redo):
    the chain of ``undone_by`` is followed to its end, each link flipping
    whether the entry's own changes are in the files. Raises ActionError
    when the journal no longer holds the entry (pruned)."""
    standing: int | None = None
    entry = journal.get_sync(entry_id)
    while entry.undone_by is not None and entry.undone_by > entry.id:  # ids grow
        entry = journal.get_sync(entry.undone_by)
        standing = entry.id if standing is None else None
    return standing
