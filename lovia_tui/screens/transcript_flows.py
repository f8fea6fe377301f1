"""The transcript pane's loading: a session's newest batch, older and newer
batches as the user scrolls, flat indices counted in the background.

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`. Every read
runs in a worker and reports back by message; a result for a session the user
has already left is dropped. The live tail is told, before each read, which
segments the view is about to hold, so a rewrite of them is never missed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import work
from textual.widgets import Label

from lovia_tui import messages
from lovia_tui.core.formatting import printable
from lovia_tui.core.models import SessionKey
from lovia_tui.core.store import segment_reads
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.view.kinds import Group, RowKind
from lovia_tui.view.transcript_loader import (
    Inflight,
    newer_rows,
    newest_batch,
    older_rows,
    session_rows,
    set_indices,
)
from lovia_tui.widgets.transcript import Transcript


class TranscriptFlows(InspectorBase):
    """Loads the transcript of the selected session and pages through it."""

    shown_key: SessionKey | None = None
    """The session whose rows the transcript holds (a load of it is a reload)."""
    row_kind: tuple[str, bool] | None = None
    """The cursor row's kind, and whether it has a flat index (the key bar's say)."""

    @work(exclusive=True, group=Group.TRANSCRIPT)
    async def load_transcript(self, key: SessionKey, settle: float = 0.0) -> None:
        if settle:
            # Moving through the list: load once the cursor rests, not for
            # every session passed over (each one repaints the whole screen).
            await asyncio.sleep(settle)
        db = self.workspace.database(Path(key[0]))
        batch, older = listed = await newest_batch(db, key[1])
        self.follow_session(db.path, key[1], batch, older + len(batch))
        rows, seqs = await session_rows(db, key[1], listed, self._inflight(key))
        self.post_message(messages.TranscriptLoaded(key, rows, seqs))
        # Shown first; the flat indices need every older segment counted.
        self.post_message(
            messages.IndicesCounted(key, await segment_reads.flat_starts(db, key[1]))
        )

    def on_transcript_loaded(self, message: messages.TranscriptLoaded) -> None:
        if message.key != self.session_key:
            return
        transcript = self.transcript
        current = transcript.current_row
        # A reload of the session shown (ctrl+r, an action, a change elsewhere)
        # keeps the cursor on its row, unless it was on the newest (following).
        keep = (
            current.key
            if self.shown_key == message.key
            and current is not None
            and current is not transcript.rows[-1]
            else None
        )
        self.shown_key = message.key
        self.flat_starts = None
        transcript.show(message.rows)
        if keep and not self.pending_row:
            transcript.select_key(keep)
        self.transcript.set_needle(self.search_needle)
        self.follow_inflight(message.run_seqs)
        if self.pending_row:
            self.transcript.select_key(self.pending_row)
            self.pending_row = None
        self.focus_loaded()
        self.title_transcript()

    def _inflight(self, key: SessionKey) -> Inflight:
        return [
            (self.workspace.database(run.file), run, self.runs.status_of(run))
            for run in self.runs.linked_to(key)
        ]

    def on_indices_counted(self, message: messages.IndicesCounted) -> None:
        if message.key == self.session_key:
            self.flat_starts = message.starts
            set_indices(self.transcript.rows, message.starts)
            self.transcript.refresh()
            self.refresh_bindings()  # rewind applies now that entries are counted

    def reload_transcript(self) -> None:
        if self.session_key:
            self.load_transcript(self.session_key)
        elif self.run_view and (run := self.runs.find(self.run_view)):
            self.load_run_view(run)

    def title_transcript(self) -> None:
        transcript = self.transcript
        if self.session_key:
            title = f"Transcript · {self.session_key[1]} · {transcript.entries:,} entries shown · {transcript.position}"
        elif self.run_view:
            title = f"Run {self.run_view} · session unknown · {transcript.entries:,} entries · {transcript.position}"
        else:
            return
        if self.followed:
            title += f" · following {self.followed[1]}"
        if self.transcript.new_below:
            title += f" · {self.transcript.new_below} new entries ↓"
        label = self.query_one("#transcript-title", Label)
        title = printable(title)
        if title != label.content:
            label.update(title, layout=False)

    def on_transcript_row_highlighted(self, message: Transcript.RowHighlighted) -> None:
        self.title_transcript()
        row = message.row
        kind = (
            (row.kind, row.entry is not None and row.entry.index is not None)
            if row
            else None
        )
        if kind != self.row_kind:
            # w, W, o, r apply to some rows only: the key bar says so, redrawn
            # when the kind of row changes, not on every move.
            self.row_kind = kind
            self.refresh_bindings()

    def on_transcript_load_older(self) -> None:
        rows = self.transcript.rows
        if self.session_key and rows and rows[0].kind == RowKind.OLDER:
            self.load_older(self.session_key, rows[0].boundary)

    @work(exclusive=True, group=Group.OLDER)
    async def load_older(self, key: SessionKey, before_id: int) -> None:
        db = self.workspace.database(Path(key[0]))
        await self.watch_older(db.path)
        rows = await older_rows(db, key[1], before_id, self.flat_starts)
        self.post_message(messages.OlderLoaded(key, rows))

    def on_older_loaded(self, message: messages.OlderLoaded) -> None:
        if message.key == self.session_key:
            if self.flat_starts is not None:  # counted while this batch loaded
                set_indices(message.rows, self.flat_starts)
            self.transcript.prepend(message.rows)
            self._watch_window()

    def on_transcript_load_start(self) -> None:
        if self.session_key:
            self.load_start(self.session_key)

    @work(exclusive=True, group=Group.OLDER)
    async def load_start(self, key: SessionKey) -> None:
        """The session's first batch (then a "newer" row), for Home."""
        db = self.workspace.database(Path(key[0]))
        rows, seqs = await newer_rows(
            db, key[1], 0, self.flat_starts, self._inflight(key)
        )
        self.post_message(messages.StartLoaded(key, rows, seqs))

    def on_start_loaded(self, message: messages.StartLoaded) -> None:
        if message.key == self.session_key:
            if self.flat_starts is not None:
                set_indices(message.rows, self.flat_starts)
            self.transcript.show(message.rows, at_start=True)
            if message.run_seqs:
                self.follow_inflight(message.run_seqs)
            self._watch_window()
            self.title_transcript()

    def on_transcript_load_newer(self) -> None:
        rows = self.transcript.rows
        if self.session_key and rows and rows[-1].kind == RowKind.NEWER:
            self.load_newer(self.session_key, rows[-1].boundary)

    @work(exclusive=True, group=Group.NEWER)
    async def load_newer(self, key: SessionKey, after_id: int) -> None:
        db = self.workspace.database(Path(key[0]))
        await self.watch_newer(db.path)
        rows, seqs = await newer_rows(
            db, key[1], after_id, self.flat_starts, self._inflight(key)
        )
        self.post_message(messages.NewerLoaded(key, rows, seqs))

    def on_newer_loaded(self, message: messages.NewerLoaded) -> None:
        if message.key == self.session_key:
            if self.flat_starts is not None:
                set_indices(message.rows, self.flat_starts)
            self.transcript.append_newer(message.rows)
            if message.run_seqs:
                self.follow_inflight(message.run_seqs)
            self._watch_window()

    def _watch_window(self) -> None:
        """The live tail watches the segments the transcript still holds."""
        rows = self.transcript.rows
        ids = [
            row.segment.row_id
            for row in rows
            if row.kind == RowKind.SEGMENT and row.segment
        ]
        if self.session_key and ids:
            to_id = ids[-1] if rows[-1].kind == RowKind.NEWER else None
            file = Path(self.session_key[0])
            self.run_worker(
                self.watch_window(file, ids[0], to_id),
                group=Group.WATCH,
                exclusive=True,
            )

    def focus_loaded(self) -> None:
        if self.focus_when_loaded:
            self.focus_when_loaded = False
            self.action_focus_pane("transcript")
