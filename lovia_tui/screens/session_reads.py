"""The sessions list's reads: the newest page first, then every session in
the background; summaries (title, runs, activity) only for the rows on
screen; the transcript follows the highlighted session.

A part of :class:`~lovia_tui.screens.inspector.InspectorScreen`.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, replace

from textual import on, work
from textual.widgets import Label

from lovia_tui import messages
from lovia_tui.core.formatting import printable
from lovia_tui.core.models import SessionKey, SessionSummary
from lovia_tui.core.run_status import DEFAULT_STALE_AFTER
from lovia_tui.core.runs.listing import RunList
from lovia_tui.core.store import session_reads
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.screens.inspector_base import InspectorBase
from lovia_tui.screens.worker_errors import EXPECTED
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.row_list import RowList

FIRST_PAGE = 200
HIGHLIGHT_SETTLE = 0.06
"""Seconds the cursor rests on a session before its transcript is read."""


@dataclass(frozen=True)
class FirstPage:
    """The newest sessions and the summaries of a screenful of them, read
    before the screen is composed so that its first frame shows them."""

    keys: list[SessionKey]
    summaries: dict[SessionKey, SessionSummary]
    runs: RunList | None = None
    """The newest checkpoints' first rows (``RunList.first_rows``)."""

    @classmethod
    async def read(cls, workspace: Workspace, rows: int) -> FirstPage | None:
        try:
            keys = await workspace.recent_sessions(FIRST_PAGE)
            page = cls(keys, await workspace.summaries(keys[:rows]))
        except EXPECTED:
            return None  # the screen's own worker reads again and says why
        runs = RunList(workspace.checkpoint_dbs, workspace.links, DEFAULT_STALE_AFTER)
        try:
            await runs.first_rows(rows)
        except EXPECTED:
            return page  # the runs pane's own walk reads again and says why
        return replace(page, runs=runs)


class SessionReads(InspectorBase):
    """Loads the sessions list and the summaries on screen."""

    first_page: FirstPage | None = None

    @work(exclusive=True, group=Group.SESSIONS)
    async def load_sessions(self) -> None:
        """First the newest page (a short walk), then the full index in the background."""
        if self.first_page is None:
            keys = await self.workspace.recent_sessions(FIRST_PAGE)
            self.post_message(messages.SessionsLoaded(keys))
        else:
            keys, self.first_page = self.first_page.keys, None
        index: dict[SessionKey, int] = {}
        for db in self.workspace.session_dbs:
            async for chunk, _ in session_reads.session_index(db):
                for session_id, (_, last_id) in chunk.items():
                    key = (str(db.path), session_id)
                    index[key] = max(index.get(key, 0), last_id)
        first = set(keys)
        rest = sorted(
            (k for k in index if k not in first), key=lambda k: index[k], reverse=True
        )
        self.post_message(messages.SessionsLoaded(keys + rest))
        # The index is most of what lives as long as the app: keeping it out of
        # full garbage collections spares the UI their ~90 ms pauses.
        gc.freeze()

    def on_sessions_loaded(self, message: messages.SessionsLoaded) -> None:
        self._show_sessions(message.keys)

    def _show_sessions(self, keys: list[SessionKey]) -> None:
        pane = self.sessions
        pane.set_keys(keys)
        if self.session_key is None and self.run_view is None and pane.selected:
            self._select_session(pane.selected)
        self.fetch_visible_summaries()

    def fetch_visible_summaries(self) -> None:
        pane = self.sessions
        if any(pane.needs_summary(key) for key in pane.visible_keys()):
            self._read_summaries()

    @work(exclusive=True, group=Group.SUMMARIES)
    async def _read_summaries(self) -> None:
        pane = self.sessions
        # A screenful ahead each way: scrolling row by row then reads once a
        # screen, not once a key.
        found = await self.workspace.summaries(
            key for key in pane.visible_keys(margin=1) if pane.needs_summary(key)
        )
        if found:
            self.post_message(messages.SummariesLoaded(found))

    def on_summaries_loaded(self, message: messages.SummariesLoaded) -> None:
        pane = self.sessions
        pane.take_summaries(message.summaries)
        # Redraw only the rows that got their summary, not the whole list.
        top = int(pane.row_list.scroll_offset.y)
        for offset, key in enumerate(pane.visible_keys()):
            if key in message.summaries:
                pane.row_list.refresh_line(top + offset)

    @on(RowList.Highlighted, "#sessions")
    def _session_highlighted(self, event: RowList.Highlighted) -> None:
        self.fetch_visible_summaries()
        key = self.sessions.selected
        if key and key != self.session_key:
            self._select_session(key, settle=HIGHLIGHT_SETTLE)

    @on(RowList.Selected, "#sessions")
    def _session_chosen(self) -> None:
        self.action_focus_pane("transcript")

    def _select_session(self, key: SessionKey, *, settle: float = 0.0) -> None:
        first = self.session_key is None
        self.session_key = key
        self.run_view = None
        if first:
            # Only whether a session is selected matters to the bindings; a
            # refresh on every move would recompose the footer per key press.
            self.refresh_bindings()
        self.runs.highlight_session(key)
        self.query_one("#transcript-title", Label).update(
            printable(f"Transcript · {key[1]} · loading…"), layout=False
        )
        if self.runs_loaded:
            # Otherwise on_runs_loaded loads it: the seam needs the runs' links.
            self.load_transcript(key, settle)
