"""Narrowing the sessions list: a filter on ids and titles as you type, and a
content search over every segment with progress and cancel.

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`. The search
reads the files in short statements (``queries.search_segments``) and
reports at most every ``SEARCH_PROGRESS_EVERY`` seconds, in the sessions
title: re-filtering the list is the costly part, not the reading.
"""

from __future__ import annotations

import time

from textual import work
from textual.widgets import Input

from lovia_tui import messages
from lovia_tui.core import queries
from lovia_tui.kinds import Group
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.selection import SessionKey

SEARCH_PROGRESS_EVERY = 0.25


class SessionSearch(InspectorBase):
    """`/` filters the sessions, `s` searches their content, `esc` undoes either."""

    filter_mode: str = "filter"

    async def action_filter_sessions(self) -> None:
        await self._open_input(
            "filter", "filter by id or title", self.sessions.filter_text
        )

    async def action_search_content(self) -> None:
        await self._open_input(
            "search",
            "search message text (Enter to start, Esc to cancel)",
            self.search_needle,
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
            self.search_needle = event.value
            self.sessions.show_matches(set())
            self.sessions.show_progress("searching… (esc cancels)")
            self.search(event.value)
        self.sessions.row_list.focus()

    @work(exclusive=True, group=Group.SEARCH)
    async def search(self, needle: str) -> None:
        found: dict[SessionKey, None] = {}
        posted = 0.0
        for db in self.workspace.session_dbs:
            async for matches, fraction in queries.search_segments(db, needle):
                found.update(((str(db.path), sid), None) for sid, _ in matches)
                # Chunks take ~25 ms: report at most every SEARCH_PROGRESS_EVERY
                # so the UI is not busy re-filtering the list all along.
                if time.monotonic() - posted >= SEARCH_PROGRESS_EVERY:
                    posted = time.monotonic()
                    self.post_message(
                        messages.SearchProgress(
                            needle, list(found), fraction, done=False
                        )
                    )
        self.post_message(messages.SearchProgress(needle, list(found), 1.0, done=True))

    def on_search_progress(self, message: messages.SearchProgress) -> None:
        if message.needle != self.search_needle:
            return
        pane = self.sessions
        pane.show_progress(f"searching {message.fraction:.0%} (esc cancels)")
        keys = set(message.keys)
        if message.done or keys != pane.matches:
            # Re-filtering walks every session: only when the matches changed.
            pane.show_matches(keys)
            self.transcript.set_needle(self.search_needle)
        if message.done:
            pane.show_progress("")
            self.notify(f"{len(message.keys)} session(s) contain {message.needle!r}")

    def action_back(self) -> None:
        if self.workers and any(
            w.group == Group.SEARCH and w.is_running for w in self.workers
        ):
            self.workers.cancel_group(self, Group.SEARCH)
            self.sessions.show_progress("")
            self.notify("search cancelled")
            return
        if self.sessions.narrowed:
            self.search_needle = ""
            self.transcript.set_needle("")
            self.sessions.clear_narrowing()
            return
        self.back_a_pane()
