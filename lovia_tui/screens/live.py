"""Live tail: watch every open file and follow runs while they happen.

A part of the inspector. One worker per database loops over the core's
``live_changes`` (a file watch confirmed by ``data_version``, or polling)
and hands each burst of changes to the screen through a ``ChangeFeed``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import work

from lovia_tui import messages
from lovia_tui.core.errors import LoviaTuiError
from lovia_tui.core.live.changes import ChangeFeed, Changes
from lovia_tui.core.live.tail import Tail, live_changes
from lovia_tui.core.live.watch import CommitWatch
from lovia_tui.core.models import RunInfo, SegmentInfo
from lovia_tui.core.store.database import Database
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.view.kinds import Group, Pane
from lovia_tui.view.transcript_loader import BATCH, inflight_rows, run_entry_rows

LOCK_RETRY = 1.0
"""Seconds between looks at a file the live tail found locked."""


async def _until_readable(db: Database) -> None:
    """Return once ``db`` reads again (a lock on it was released)."""
    while True:
        await asyncio.sleep(LOCK_RETRY)
        try:
            await db.data_version()
            return
        except LoviaTuiError:
            continue


class LiveTail(InspectorBase):
    """Keeps every view current without a key press; `f` toggles following."""

    tails: dict[Path, Tail]
    watch_modes: dict[Path, str]
    follow_enabled: bool = True

    def start_live(self) -> None:
        """Watch every file: first thing on mount, so a view loaded next is followed."""
        self.tails = {}
        self.watch_modes = {}
        for db in self.workspace.databases:
            if db.immutable:
                self.watch_modes[db.path] = "static (immutable: changes are not seen)"
                continue
            self.run_worker(
                self._live(db),
                group=Group.LIVE.of(db.path),
                exclusive=True,
                exit_on_error=False,
            )

    async def _live(self, db: Database) -> None:
        watch = CommitWatch(db)
        feed = ChangeFeed()
        tail: Tail | None = None
        while True:
            try:
                if tail is None:
                    tail = await Tail.start(db)
                    self.tails[db.path] = tail
                async for changes in live_changes(watch, tail):
                    self.watch_modes[db.path] = watch.mode
                    if feed.put(changes):
                        self.post_message(messages.LiveChanged(db.path, feed))
                return
            except LoviaTuiError as exc:
                # A writer held its lock past the busy timeout: keep watching
                # once it lets go, and reload what changed meanwhile.
                self.notify(
                    f"{exc}; live updates resume once it is released",
                    severity="warning",
                )
                await _until_readable(db)
                if feed.put(Changes(sessions_changed=True)):
                    self.post_message(messages.LiveChanged(db.path, feed))

    def on_live_changed(self, message: messages.LiveChanged) -> None:
        changes = message.feed.take()
        self.describe_files()
        if changes.stores_changed or changes.sessions_changed:
            self.action_refresh()
            return
        if changes.heads or changes.deleted_runs:
            self.load_runs()
        if changes.segments:
            self.sessions.bring_to_front(
                [(str(message.path), s.session_id) for s in changes.segments]
            )
        if rewritten := changes.rewritten_sessions:
            # A rewind or trim elsewhere: their run counts and titles changed.
            self.sessions.outdated |= {(str(message.path), sid) for sid in rewritten}
        if changes.segments or rewritten:
            self.fetch_visible_summaries()
        key = self.session_key
        if self.run_view and any(
            head.run_id == self.run_view for head in changes.heads
        ):
            self.load_runs()
        if key and key[0] == str(message.path):
            touched = changes.session_ids | changes.rewritten_sessions
            if key[1] in touched:
                self.load_transcript(key)
                return
        transcript = self.transcript
        transcript.set_seam_statuses(
            {head.run_id: head.status for head in changes.heads}
        )
        entries = changes.run_entries
        if entries and self.followed == (message.path, entries.run_id):
            run = transcript.seam_run(entries.run_id)
            if run is not None:
                offset = transcript.entries_of_run(run.run_id)
                transcript.extend(run_entry_rows(run, entries, offset))
                self.title_transcript()

    def follow_inflight(self, run_seqs: dict[str, int]) -> None:
        """Follow the running checkpoint shown at the seam, from the batch shown."""
        self.followed = None
        for tail in self.tails.values():
            tail.follow_run(None)
        if not self.follow_enabled:
            return
        for run_id, seq in run_seqs.items():
            run = self.transcript.seam_run(run_id)
            if run is not None and run.status == "running" and run.file in self.tails:
                self.tails[run.file].follow_run(run_id, seq)
                self.followed = (run.file, run_id)
                return

    def follow_session(
        self, file: Path, session_id: str, shown: list[SegmentInfo], total: int
    ) -> None:
        """Watch the session's newest batch, as just listed (before its entries are read)."""
        if (tail := self.tails.get(file)) is not None:
            tail.follow_session(session_id, shown, total)

    async def watch_older(self, file: Path) -> None:
        """Watch the followed session's next older batch too (call before loading it)."""
        if (tail := self.tails.get(file)) is not None:
            await tail.watch_older(BATCH)

    async def watch_newer(self, file: Path) -> None:
        """Watch the followed session's next newer batch too (call before loading it)."""
        if (tail := self.tails.get(file)) is not None:
            await tail.watch_newer(BATCH)

    async def watch_window(self, file: Path, from_id: int, to_id: int | None) -> None:
        """Watch only the segments the transcript still holds."""
        if (tail := self.tails.get(file)) is not None:
            await tail.watch_ids(from_id, to_id)

    def show_run_alone(self, run: RunInfo) -> None:
        """A run no record links to a session: its own entries, behind a seam."""
        self.session_key = None
        self.run_view = run.run_id
        self.runs.highlight_session(None)
        self.load_run_view(run)

    @work(exclusive=True, group=Group.TRANSCRIPT)
    async def load_run_view(self, run: RunInfo) -> None:
        rows, seq = await inflight_rows(
            self.workspace.database(run.file), run, self.runs.status_of(run)
        )
        self.post_message(messages.RunViewLoaded(run.run_id, rows, seq))

    def on_run_view_loaded(self, message: messages.RunViewLoaded) -> None:
        if self.run_view != message.run_id:
            return
        self.transcript.show(message.rows)
        self.follow_inflight({message.run_id: message.last_seq})
        self.title_transcript()

    def action_follow(self) -> None:
        """Follow the run selected in the runs pane, or toggle following."""
        selection = self.selection
        run = selection.run if selection.pane is Pane.RUNS else None
        if run is not None and (
            self.followed is None or self.followed[1] != run.run_id
        ):
            self.follow_enabled = True
            self.open_run(run)
            return
        self.follow_enabled = not self.follow_enabled
        state = (
            "on: a running run's new entries appear as they are saved"
            if self.follow_enabled
            else "off"
        )
        self.notify(f"follow {state}")
        self.reload_transcript()
