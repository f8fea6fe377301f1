"""A content search's hits in the transcript: the cursor lands on the
session's first hit and `n` / `N` step through them, loading older batches
when a hit lies beyond the ones shown.

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`; the search
itself is the Sessions pane's (``SessionsPane.Searched``).
"""

from __future__ import annotations

from textual import work

from lovia_tui import messages
from lovia_tui.kinds import Group, RowKind
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.widgets.sessions_pane import SessionsPane


class SearchHits(InspectorBase):
    """The search's hits in the session shown."""

    search_query: str = ""
    search_hits: list[str] = []
    hit_at: int = -1

    def on_sessions_pane_searched(self, message: SessionsPane.Searched) -> None:
        self.search_query, self.search_needle = message.query, message.needle
        self.transcript.set_needle(message.needle)
        self.search_hits, self.hit_at = [], -1
        if message.keys and self.session_key in message.keys:
            self.find_hits(self.session_key, message.query)

    # Textual calls a handler of each class in the MRO: these run after
    # TranscriptFlows' handlers of the same messages, not instead of them.
    def on_transcript_loaded(self, message: messages.TranscriptLoaded) -> None:
        self.search_hits, self.hit_at = [], -1
        matches = self.sessions.matches
        if self.search_query and matches and message.key in matches:
            self.find_hits(message.key, self.search_query)

    @work(exclusive=True, group=Group.HITS)
    async def find_hits(self, key: tuple[str, str], needle: str) -> None:
        rows = await self.sessions.content_search.row_keys(needle, key)
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
