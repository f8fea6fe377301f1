"""Narrowing the sessions list: a filter on ids and titles as you type, and a
content search through the search index, stepping through its hits.

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`. The first
`s` starts the index's build in a thread worker (progress in the sessions
title; afterwards it follows other processes' commits); a search looks the
indexed part up and scans the rest (``core.search.workspace``). In the
transcript the cursor lands on the session's first hit and `n` / `N` step
through them, loading older batches when a hit lies beyond the ones shown.
"""

from __future__ import annotations

import time

from textual import work
from textual.widgets import Input
from textual.worker import get_current_worker

from lovia_tui import messages
from lovia_tui.core.search.query import QueryError, parse_query
from lovia_tui.core.search.workspace import WorkspaceSearch
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.view.kinds import Group, RowKind

BUILD_STEP = 0.25
"""Seconds of indexing between two progress reports (and cancel checks)."""
COMMIT_POLL = 0.5
"""Once built, how often the index looks for other processes' commits."""


class SessionSearch(InspectorBase):
    """`/` filters the sessions, `s` searches their content, `esc` undoes either."""

    filter_mode: str = "filter"
    search_query: str = ""
    """The search typed after `s`, as the index reads it."""

    async def action_filter_sessions(self) -> None:
        await self._open_input(
            "filter", "filter by id or title", self.sessions.filter_text
        )

    async def action_search_content(self) -> None:
        self._start_index()
        await self._open_input(
            "search",
            'search: words, "a phrase", prefix*, tool:NAME, error:, session:ID, run:ID',
            self.search_query,
        )

    async def _open_input(self, mode: str, placeholder: str, value: str) -> None:
        self.filter_mode = mode
        self.action_focus_pane("sessions")
        await self.sessions.open_input(placeholder, value)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "session-filter" and self.filter_mode == "filter":
            self.sessions.filter_by(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "session-filter":
            return
        if self.filter_mode == "search" and event.value:
            try:
                words = parse_query(event.value).words
            except QueryError as exc:
                self.notify(str(exc), severity="warning")
                return
            self.search_query = event.value
            self.search_needle = max(words, key=len, default="")
            self.sessions.show_matches(set())
            self.sessions.show_progress("searching… (esc cancels)")
            self.search(event.value)
        self.sessions.row_list.focus()

    @work(exclusive=True, group=Group.SEARCH)
    async def search(self, needle: str) -> None:
        self._start_index()
        found = await self.content_search.search(needle)
        self.post_message(
            messages.SearchProgress(needle, found.keys, 1.0, done=True, note=found.note)
        )

    def on_search_progress(self, message: messages.SearchProgress) -> None:
        if message.needle != self.search_query:
            return
        keys = set(message.keys)
        self.sessions.show_matches(keys)
        self.transcript.set_needle(self.search_needle)
        self.sessions.show_progress("")
        self.notify(f"{len(keys)} session(s) match {message.needle!r} ({message.note})")
        if self.session_key in keys:
            self.find_hits(self.session_key, message.needle)

    # ----- the index: built on first use, then kept current -----

    _content_search: WorkspaceSearch | None = None

    @property
    def content_search(self) -> WorkspaceSearch:
        """The workspace's indexes, made on first use."""
        if self._content_search is None:
            self._content_search = WorkspaceSearch(self.workspace)
        return self._content_search

    def _start_index(self) -> None:
        if not any(w.group == Group.SEARCH_INDEX for w in self.workers):
            self.build_index()

    @work(thread=True, exclusive=True, group=Group.SEARCH_INDEX)
    def build_index(self) -> None:
        """Index in steps, then follow commits, for as long as the screen lives (a
        "live:" group: a failure is a notification, not the end of the app).
        A thread: the index is plain sqlite3."""
        worker = get_current_worker()
        index = self.content_search
        try:
            done = False
            while not worker.is_cancelled:
                if done and not index.committed():
                    time.sleep(COMMIT_POLL)  # bounded: the thread's idle wait
                    continue
                progress = index.build_step(BUILD_STEP)
                if not (done and progress.done):
                    self.post_message(
                        messages.IndexProgress(progress.fraction, progress.done)
                    )
                done = progress.done
        finally:
            index.close()

    def on_index_progress(self, message: messages.IndexProgress) -> None:
        if any(w.group == Group.SEARCH and w.is_running for w in self.workers):
            return  # the search's own progress has the title
        self.sessions.show_progress(
            "" if message.done else f"indexing {message.fraction:.0%}"
        )

    # ----- hits in the transcript -----

    search_hits: list[str] = []
    hit_at: int = -1

    # Textual calls a handler of each class in the MRO: these run after
    # TranscriptFlows' handlers of the same messages, not instead of them.
    def on_transcript_loaded(self, message: messages.TranscriptLoaded) -> None:
        self.search_hits, self.hit_at = [], -1
        matches = self.sessions.matches
        if self.search_query and matches and message.key in matches:
            self.find_hits(message.key, self.search_query)

    @work(exclusive=True, group=Group.HITS)
    async def find_hits(self, key: tuple[str, str], needle: str) -> None:
        rows = await self.content_search.row_keys(needle, key)
        self.post_message(messages.SearchHits(key, needle, rows))

    def on_search_hits(self, message: messages.SearchHits) -> None:
        if message.key == self.session_key and message.needle == self.search_query:
            self.search_hits = message.rows
            self._show_hit(0)

    def action_next_hit(self, step: int) -> None:
        if self.search_hits:
            self._show_hit((self.hit_at + step) % len(self.search_hits))

    def _show_hit(self, at: int) -> None:
        """Put the cursor on hit ``at``; a hit older than the rows shown loads
        the previous batch first (and is tried again when it arrives)."""
        self.hit_at = at
        if not self.search_hits or self.transcript.select_key(self.search_hits[at]):
            self.title_transcript()
            return
        rows = self.transcript.rows
        if self.session_key and rows and rows[0].kind == RowKind.OLDER:
            self.load_older(self.session_key, rows[0].boundary)

    def on_older_loaded(self, message: messages.OlderLoaded) -> None:
        if 0 <= self.hit_at < len(self.search_hits):
            self.call_after_refresh(self._show_hit, self.hit_at)

    def action_back(self) -> None:
        if self.workers and any(
            w.group == Group.SEARCH and w.is_running for w in self.workers
        ):
            self.workers.cancel_group(self, Group.SEARCH)
            self.sessions.show_progress("")
            self.notify("search cancelled")
            return
        if self.sessions.narrowed:
            self.search_query = self.search_needle = ""
            self.search_hits, self.hit_at = [], -1
            self.transcript.set_needle("")
            self.sessions.clear_narrowing()
            return
        self.back_a_pane()
