"""The Transcript pane: what one session (or a run on its own) holds, read
in batches, with its title, its cursor and a content search's hits.

It owns its reads: a session's newest batch, older and newer batches as the
user scrolls, Home's first batch, flat indices counted in the background, a
run shown alone. Every read runs in a named worker and reports back by
message; a result for a session the user has already left is dropped. The
live tail is told, before each read, which segments the view is about to
hold, so a rewrite of them is never missed (``transcript_loader.Watcher``);
the runs linked to the session come from the Runs pane (``Runs``).
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.worker import Worker, WorkerState

from lovia_tui import messages
from lovia_tui.core.formatting import plural
from lovia_tui.core.live.changes import Changes
from lovia_tui.core.models import RunInfo, SessionKey
from lovia_tui.core.run_status import RunStatus
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import Group, RowKind
from lovia_tui.view.transcript_loader import (
    Runs,
    Seams,
    Starts,
    Watcher,
    held_ids,
    inflight_rows,
    newer_rows,
    newest_batch,
    older_rows,
    run_entry_rows,
    session_rows,
    set_indices,
    uncounted,
)
from lovia_tui.widgets.pane_title import PaneTitle
from lovia_tui.widgets.transcript import Transcript
from lovia_tui.widgets.transcript_hits import Hits
from lovia_tui.widgets.worker_errors import EXPECTED, WorkerErrors


class TranscriptPane(WorkerErrors, Vertical):
    """The title and the transcript of the selected session."""

    def __init__(
        self, workspace: Workspace, live: Watcher, runs: Runs, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.workspace = workspace
        self.live = live
        self.runs = runs
        self.session_key: SessionKey | None = None
        """The session shown (None: a run shown alone, or nothing)."""
        self.run_view: str | None = None
        """The run shown on its own (no session is known for it)."""
        self.followed: tuple[Path, str] | None = None
        """(file, run id) of the running run followed at the seam."""
        self.follow_enabled = True
        self.hits = Hits(self)
        self._runs_known = False
        self._pending_row: str | None = None
        self._focus_when_loaded = False
        self._flat_starts: Starts | None = None
        self._shown_key: SessionKey | None = None
        self._row_kind: tuple[str, bool] | None = None

    def compose(self) -> ComposeResult:
        yield PaneTitle("Transcript", id="transcript-title")
        yield Transcript(moved=self._cursor_moved, id="transcript")

    def on_mount(self) -> None:
        # The "new entries" count clears on scrolling, which says nothing.
        self.set_interval(1.0, self.show_title)

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    # ----- what to show -----

    def open_session(
        self,
        key: SessionKey,
        *,
        settle: float = 0.0,
        focus_row: str | None = None,
        focus: bool = False,
    ) -> None:
        """Show ``key`` (read once the cursor rested ``settle`` seconds), its
        cursor on ``focus_row``; ``focus``: take the focus once its rows arrive."""
        self.session_key, self.run_view = key, None
        self._pending_row = focus_row
        self._focus_when_loaded = self._focus_when_loaded or focus
        if not settle:
            self._show_loading(key)
        if self._runs_known:
            # Otherwise runs_known loads it: the seam needs the runs' links.
            self._load_session(key, settle)

    def open_run(self, run: RunInfo) -> None:
        """A run no record links to a session: its own entries, behind a seam."""
        self.session_key, self.run_view = None, run.run_id
        self.hits.clear()
        self._load_run(run)

    def reload(self) -> None:
        """Read what is shown again (the cursor stays on its row)."""
        if self.session_key:
            self._load_session(self.session_key)
        elif self.run_view and (run := self.runs.find(self.run_view)):
            self._load_run(run)

    def runs_known(self) -> None:
        """The runs (and so the seams' links) are read: show the session now."""
        if not self._runs_known:
            self._runs_known = True
            if self.session_key:
                self._load_session(self.session_key)

    def focus_loaded(self) -> None:
        """Take the focus if asked to once the rows arrived (or now, at the latest)."""
        if self._focus_when_loaded:
            self._focus_when_loaded = False
            self.transcript.focus()

    # ----- a session's batches -----

    def _show_loading(self, key: SessionKey) -> None:
        self.query_one(PaneTitle).show(f"Transcript · {key[1]} · loading…")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A session or run not read says so (WorkerErrors says why), never
        "loading…" for good over the rows shown before, which go."""
        worker, key = event.worker, self.session_key
        if worker.group != Group.TRANSCRIPT or event.state != WorkerState.ERROR:
            return
        if not isinstance(worker.error, EXPECTED) or (key and key == self._shown_key):
            return  # a session read again keeps its rows
        self._shown_key = None
        self.transcript.show([])
        name = key[1] if key else self.run_view
        self.query_one(PaneTitle).show(f"Transcript · {name} · not read")

    @work(exclusive=True, group=Group.TRANSCRIPT)
    async def _load_session(
        self, key: SessionKey, settle: float = 0.0, starts: Starts | None = None
    ) -> None:
        """Read the session's newest rows, then (unless ``starts`` are known
        and hold) count every older segment for the flat indices."""
        if settle:
            # Moving through the list: load once the cursor rests, not for
            # every session passed over (each one repaints the whole screen);
            # the title too, or each key press costs a second frame.
            await asyncio.sleep(settle)
            self._show_loading(key)
        db = self.workspace.database(Path(key[0]))
        with db.foreground():
            batch, older = listed = await newest_batch(db, key[1])
            self.live.follow_session(db.path, key[1], batch, older + len(batch))
            if starts is not None and any(s.row_id not in starts for s in batch):
                starts = None  # a run was appended since they were counted
            rows, seqs = await session_rows(
                db, key[1], listed, self._seams(key), starts
            )
        self.post_message(messages.TranscriptLoaded(key, rows, seqs))
        if starts is None or uncounted(rows):
            # Shown first; the flat indices need every older segment counted.
            from lovia_tui.core.store import segment_reads

            starts = await segment_reads.flat_starts(db, key[1])
        self.post_message(messages.IndicesCounted(key, starts))

    def on_transcript_loaded(self, message: messages.TranscriptLoaded) -> None:
        message.stop()
        if message.key != self.session_key:
            return
        transcript = self.transcript
        current = transcript.current_row
        # A reload of the session shown (ctrl+r, an action, a change elsewhere)
        # keeps the cursor on its row, unless it was on the newest (following).
        keep = (
            current.key
            if self._shown_key == message.key
            and current is not None
            and current is not transcript.rows[-1]
            else None
        )
        self._shown_key = message.key
        self._flat_starts = None
        transcript.show(message.rows)
        if keep and not self._pending_row:
            transcript.select_key(keep)
        transcript.set_needle(self.hits.needle)
        self._follow_inflight(message.run_seqs)
        if self._pending_row:
            transcript.select_key(self._pending_row)
            self._pending_row = None
        self.focus_loaded()
        self.hits.session_shown(message.key)  # before the title: the old hits go
        self.show_title()

    def _seams(self, key: SessionKey) -> Seams:
        return Seams(self.workspace, self.runs.linked_to(key), self.runs.stale_after)

    def on_indices_counted(self, message: messages.IndicesCounted) -> None:
        message.stop()
        if message.key == self.session_key and uncounted(self.transcript.rows):
            # A large run is counted now (its part kept): read its last entries.
            self._load_session(message.key, starts=message.starts)
        elif message.key == self.session_key:
            self._flat_starts = message.starts
            set_indices(self.transcript.rows, message.starts)
            self.transcript.refresh()
            self.refresh_bindings()  # rewind applies now that entries are counted

    @on(Transcript.LoadOlder)
    def load_older(self) -> None:
        """The batch above what is shown (scrolling up, or a hit beyond it)."""
        rows = self.transcript.rows
        if self.session_key and rows and rows[0].kind == RowKind.OLDER:
            self._load_older(self.session_key, rows[0].boundary)

    @work(exclusive=True, group=Group.OLDER)
    async def _load_older(self, key: SessionKey, before_id: int) -> None:
        db = self.workspace.database(Path(key[0]))
        await self.live.watch_older(db.path)
        rows = await older_rows(db, key[1], before_id, self._flat_starts)
        self.post_message(messages.OlderLoaded(key, rows))

    def on_older_loaded(self, message: messages.OlderLoaded) -> None:
        message.stop()
        if message.key == self.session_key:
            set_indices(message.rows, self._flat_starts)  # counted meanwhile?
            self.transcript.prepend(message.rows)
            self._watch_window()
            self.hits.older_shown()

    def on_transcript_load_start(self) -> None:
        if self.session_key:
            self._load_start(self.session_key)

    @work(exclusive=True, group=Group.OLDER)
    async def _load_start(self, key: SessionKey) -> None:
        """The session's first batch (then a "newer" row), for Home."""
        db = self.workspace.database(Path(key[0]))
        rows, seqs = await newer_rows(
            db, key[1], 0, self._flat_starts, self._seams(key)
        )
        self.post_message(messages.StartLoaded(key, rows, seqs))

    def on_start_loaded(self, message: messages.StartLoaded) -> None:
        message.stop()
        if message.key == self.session_key:
            set_indices(message.rows, self._flat_starts)
            self.transcript.show(message.rows, at_start=True)
            if message.run_seqs:
                self._follow_inflight(message.run_seqs)
            self._watch_window()
            self.show_title()

    def on_transcript_load_newer(self) -> None:
        rows = self.transcript.rows
        if self.session_key and rows and rows[-1].kind == RowKind.NEWER:
            self._load_newer(self.session_key, rows[-1].boundary)

    @work(exclusive=True, group=Group.NEWER)
    async def _load_newer(self, key: SessionKey, after_id: int) -> None:
        db = self.workspace.database(Path(key[0]))
        await self.live.watch_newer(db.path)
        rows, seqs = await newer_rows(
            db, key[1], after_id, self._flat_starts, self._seams(key)
        )
        self.post_message(messages.NewerLoaded(key, rows, seqs))

    def on_newer_loaded(self, message: messages.NewerLoaded) -> None:
        message.stop()
        if message.key == self.session_key:
            set_indices(message.rows, self._flat_starts)
            self.transcript.append_newer(message.rows)
            if message.run_seqs:
                self._follow_inflight(message.run_seqs)
            self._watch_window()

    def _watch_window(self) -> None:
        """The live tail watches the segments the transcript still holds."""
        held = held_ids(self.transcript.rows)
        if self.session_key and held:
            self.run_worker(
                partial(self.live.watch_window, Path(self.session_key[0]), *held),
                group=Group.WATCH,
                exclusive=True,
            )

    # ----- a run on its own, and following a running one -----

    @work(exclusive=True, group=Group.TRANSCRIPT)
    async def _load_run(self, run: RunInfo) -> None:
        rows, seq = await inflight_rows(self.workspace, run, self.runs.stale_after)
        self.post_message(messages.RunViewLoaded(run.run_id, rows, seq))

    def on_run_view_loaded(self, message: messages.RunViewLoaded) -> None:
        message.stop()
        if self.run_view != message.run_id:
            return
        self.transcript.show(message.rows)
        self._follow_inflight({message.run_id: message.last_seq})
        self.show_title()

    def _follow_inflight(self, run_seqs: dict[str, int]) -> None:
        """Follow the running checkpoint shown at the seam, from the batch shown."""
        self.followed = None
        self.live.stop_following()
        if not self.follow_enabled:
            return
        for run_id, seq in run_seqs.items():
            run = self.transcript.window.seam_run(run_id)
            if (
                run is not None
                and run.status == RunStatus.RUNNING
                and self.live.follow_run(run.file, run_id, seq)
            ):
                self.followed = (run.file, run_id)
                return

    def toggle_follow(self) -> bool:
        """Follow running runs, or stop; whether it follows now."""
        self.follow_enabled = not self.follow_enabled
        return self.follow_enabled

    def take_live(self, path: Path, changes: Changes) -> None:
        """Another process committed to ``path``: the session shown is read
        again if it changed; else seams take their run's status, and the
        followed run's new entries are appended."""
        key = self.session_key
        touched = changes.session_ids | changes.rewritten_sessions
        if key and key[0] == str(path) and key[1] in touched:
            self._load_session(key)
            return
        transcript, window = self.transcript, self.transcript.window
        if window.set_seam_statuses({h.run_id: h.status for h in changes.heads}):
            transcript.refresh()
        entries = changes.run_entries
        if entries and self.followed == (path, entries.run_id):
            run = window.seam_run(entries.run_id)
            if run is not None:
                offset = window.entries_of_run(run.run_id)
                transcript.extend(run_entry_rows(run, entries, offset))
                self.hits.entries_added()  # and the title

    # ----- the title and the cursor -----

    def show_title(self) -> None:
        """What is shown and where the cursor is; first what the user's acts
        change (hits, the follow, new rows): a narrow title ends in "…"."""
        transcript = self.transcript
        if self.session_key and self.session_key != self._shown_key:
            return  # another session's rows are on screen until it loads
        following = f" · following {self.followed[1]}" if self.followed else ""
        news = self.hits.title + following
        if transcript.new_below:
            news += f" · {plural(transcript.new_below, 'new entry', 'new entries')} ↓"
        entries = plural(transcript.window.entries, "entry", "entries")
        if self.session_key:
            shown = f"Transcript{news} · {self.session_key[1]} · {entries} shown"
        elif self.run_view:
            shown = f"Run {self.run_view}{news} · session unknown · {entries}"
        else:
            return
        self.query_one(PaneTitle).show(f"{shown} · {transcript.position}")

    def _cursor_moved(self) -> None:
        """The title and the key bar, in the frame of the move."""
        self.show_title()
        row = self.transcript.current_row
        kind = (
            (row.kind, row.entry is not None and row.entry.index is not None)
            if row
            else None
        )
        if kind != self._row_kind:
            # w, W, o, r apply to some rows only: the key bar says so, redrawn
            # when the kind of row changes, not on every move.
            self._row_kind = kind
            self.refresh_bindings()

    # ----- a content search's hits -----

    def on_search_hits(self, message: messages.SearchHits) -> None:
        message.stop()
        self.hits.found(message)
