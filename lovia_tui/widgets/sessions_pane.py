"""The Sessions pane: the list of sessions across the open files, its reads,
its filter and its content search.

It owns its state and its workers: the newest page first, then every
session in the background; summaries (title, runs, activity) only for the
rows on screen; `/` filters ids and titles as you type, `s` searches the
content through the search index (built on first use in a thread, then
following other processes' commits; progress in the title).

Its interface: :meth:`load`, :meth:`renew`, :meth:`bring_to_front`,
:meth:`set_badges`, :meth:`open_filter`, :meth:`open_search`, :meth:`show`
and :meth:`back`; it posts :class:`Highlighted` when the cursor moves to
another session, :class:`Chosen` on Enter and :class:`Searched` when a
content search answered (the transcript then highlights and steps through
its hits). Results read for a list since replaced are dropped.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Label
from textual.worker import get_current_worker

from lovia_tui import messages
from lovia_tui.core import queries
from lovia_tui.core.formatting import printable
from lovia_tui.core.models import SessionSummary
from lovia_tui.core.search_query import QueryError, parse_query
from lovia_tui.core.search_workspace import WorkspaceSearch
from lovia_tui.core.workspace import Workspace
from lovia_tui.kinds import Group
from lovia_tui.selection import SessionKey
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.session_list import SessionList
from lovia_tui.widgets.worker_errors import WorkerErrors

FIRST_PAGE = 200
"""Sessions listed before the full index is walked."""
BUILD_STEP = 0.25
"""Seconds of indexing between two progress reports (and cancel checks)."""
COMMIT_POLL = 0.5
"""Once built, how often the index looks for other processes' commits."""


class SessionsPane(WorkerErrors, Vertical):
    """Filterable, virtual list of sessions across the open files."""

    @dataclass
    class Highlighted(Message):
        """The cursor is on another session, ``key``."""

        key: SessionKey

    @dataclass
    class Chosen(Message):
        """Enter on session ``key``."""

        key: SessionKey

    @dataclass
    class Searched(Message):
        """A content search answered: ``query`` as typed, ``needle`` its longest
        word (what the transcript highlights), the matching sessions (None:
        the search was cleared)."""

        query: str
        needle: str
        keys: set[SessionKey] | None

    def __init__(self, workspace: Workspace, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workspace = workspace
        self.list = SessionList()
        self.progress = ""
        """What a running content search says in the title (its progress)."""
        self.filter_mode = "filter"
        self.search_query = ""
        """The search typed after `s`, as the index reads it."""
        self.needle = ""
        self._content_search: WorkspaceSearch | None = None

    def compose(self) -> ComposeResult:
        yield Label("Sessions", classes="pane-title", id="sessions-title", markup=False)
        yield RowList(self.list.render_row, empty="no sessions", id="sessions")

    # ----- what the screen reads -----

    @property
    def row_list(self) -> RowList:
        return self.query_one("#sessions", RowList)

    @property
    def keys(self) -> list[SessionKey]:
        """Every session, newest first."""
        return self.list.keys

    @property
    def shown(self) -> list[SessionKey]:
        """The sessions the filter and a search let through."""
        return self.list.shown

    @property
    def summaries(self) -> dict[SessionKey, SessionSummary]:
        return self.list.summaries

    @property
    def matches(self) -> set[SessionKey] | None:
        return self.list.matches

    @property
    def selected(self) -> SessionKey | None:
        rows, shown = self.row_list, self.list.shown
        return shown[rows.cursor] if shown and rows.cursor < len(shown) else None

    @property
    def narrowed(self) -> bool:
        """A filter or a search narrows the list (or its box is open)."""
        return (
            self.filter_open
            or self.list.matches is not None
            or bool(self.list.filter_text)
        )

    @property
    def filter_open(self) -> bool:
        return any(not box.has_class("hidden") for box in self.query("#session-filter"))

    @property
    def content_search(self) -> WorkspaceSearch:
        """The workspace's search indexes, made on first use."""
        if self._content_search is None:
            self._content_search = WorkspaceSearch(self.workspace)
        return self._content_search

    # ----- the list -----

    def load(
        self,
        first: list[SessionKey] | None = None,
        summaries: dict[SessionKey, SessionSummary] | None = None,
    ) -> None:
        """Read the sessions: the ``first`` page and its ``summaries`` (read
        before the screen was composed) shown now, then every session in
        the background."""
        if first is not None:
            self.list.summaries.update(summaries or {})
            self._show_keys(first)
        self._read_sessions(first)

    @work(exclusive=True, group=Group.SESSIONS)
    async def _read_sessions(self, first: list[SessionKey] | None) -> None:
        """First the newest page (a short walk), then the full index."""
        keys = first
        if keys is None:
            keys = await self.workspace.recent_sessions(FIRST_PAGE)
            self.post_message(messages.SessionsLoaded(keys))
        index: dict[SessionKey, int] = {}
        for db in self.workspace.session_dbs:
            async for chunk, _ in queries.session_index(db):
                for session_id, (_, last_id) in chunk.items():
                    key = (str(db.path), session_id)
                    index[key] = max(index.get(key, 0), last_id)
        listed = set(keys)
        rest = sorted(
            (k for k in index if k not in listed), key=lambda k: index[k], reverse=True
        )
        self.post_message(messages.SessionsLoaded(keys + rest))
        # The index is most of what lives as long as the app: keeping it out of
        # full garbage collections spares the UI their ~90 ms pauses.
        gc.freeze()

    def on_sessions_loaded(self, message: messages.SessionsLoaded) -> None:
        message.stop()
        self._show_keys(message.keys)

    def _show_keys(self, keys: list[SessionKey]) -> None:
        self.list.keys = keys
        self.apply_filter()
        self.fetch_visible_summaries()

    def bring_to_front(self, keys: list[SessionKey]) -> None:
        """Sessions that just gained a run move to the top, their summaries renewed."""
        self.list.bring_to_front(keys)
        self.apply_filter()

    def set_badges(self, badges: dict[SessionKey, str]) -> None:
        """The live/stale/failed marks of sessions with an unfinished run."""
        self.list.badges = badges
        self.row_list.refresh()

    def show(self, key: SessionKey) -> None:
        """Put the cursor on ``key``, clearing a filter or search that hides it."""
        position = _position(self.list.shown, key)
        if position is None and self.narrowed:
            self.back()
            position = _position(self.list.shown, key)
        if position is not None:
            self.row_list.cursor = position

    def apply_filter(self) -> None:
        """Show the sessions matching the filter and any content search."""
        current = self.selected
        self.list.refilter()
        shown = self.list.shown
        cursor = shown.index(current) if current in shown else 0
        self.row_list.set_count(len(shown), cursor=cursor)
        self.show_title()
        if shown and self.selected != current:
            # Another session is under the cursor now: say so, as a move would,
            # so that the transcript follows the list.
            self.row_list.post_message(RowList.Highlighted(self.row_list, cursor))

    def show_title(self) -> None:
        title = f"Sessions {self.row_list.position}"
        if len(self.list.shown) != len(self.list.keys):
            title += f" (of {len(self.list.keys):,})"
        if self.progress:
            title += f" · {self.progress}"
        self.query_one("#sessions-title", Label).update(printable(title), layout=False)

    def show_progress(self, text: str) -> None:
        """A search's progress, in the title: no bar to lay out."""
        self.progress = text
        self.show_title()

    @on(RowList.Highlighted, "#sessions")
    def _highlighted(self) -> None:
        self.show_title()
        self.fetch_visible_summaries()
        if (key := self.selected) is not None:
            self.post_message(self.Highlighted(key))

    @on(RowList.Selected, "#sessions")
    def _chosen(self, event: RowList.Selected) -> None:
        event.stop()
        if (key := self.selected) is not None:
            self.post_message(self.Chosen(key))

    # ----- summaries, for the rows on screen only -----

    def renew(self, keys: Iterable[SessionKey] | None = None) -> None:
        """Read the summaries of ``keys`` again (None: every one) — shown
        until renewed — and those on screen still missing."""
        if keys is None:
            self.list.forget_summaries(set(self.visible_keys(margin=1)))
        else:
            self.list.outdated.update(keys)
        self.fetch_visible_summaries()

    def fetch_visible_summaries(self) -> None:
        if any(self.list.needs_summary(key) for key in self.visible_keys()):
            self._read_summaries()

    @work(exclusive=True, group=Group.SUMMARIES)
    async def _read_summaries(self) -> None:
        # A screenful ahead each way: scrolling row by row then reads once a
        # screen, not once a key.
        needs = self.list.needs_summary
        found = await self.workspace.summaries(
            key for key in self.visible_keys(margin=1) if needs(key)
        )
        if found:
            self.post_message(messages.SummariesLoaded(found))

    def on_summaries_loaded(self, message: messages.SummariesLoaded) -> None:
        message.stop()
        self.list.take_summaries(message.summaries)
        # Redraw only the rows that got their summary, not the whole list.
        rows = self.row_list
        top = int(rows.scroll_offset.y)
        for offset, key in enumerate(self.visible_keys()):
            if key in message.summaries:
                rows.refresh_line(top + offset)

    def visible_keys(self, margin: int = 0) -> list[SessionKey]:
        """Keys on screen, and ``margin`` screenfuls above and below."""
        rows = self.row_list
        height = rows.size.height + 1
        start = int(rows.scroll_offset.y)
        return self.list.shown[
            max(0, start - margin * height) : start + (margin + 1) * height
        ]

    # ----- narrowing: the filter and the content search -----

    async def open_filter(self) -> None:
        await self._open_input("filter", "filter by id or title", self.list.filter_text)

    async def open_search(self) -> None:
        self._start_index()
        await self._open_input(
            "search",
            'search: words, "a phrase", prefix*, tool:NAME, error:, session:ID, run:ID',
            self.search_query,
        )

    async def _open_input(self, mode: str, placeholder: str, value: str) -> None:
        """Show the filter/search box with ``value``, focused (mounted on
        first use: it is not in the first frame)."""
        self.filter_mode = mode
        found = self.query("#session-filter")
        box = found.first(Input) if found else Input(id="session-filter")
        if not found:
            await self.mount(box, after="#sessions-title")
        box.placeholder, box.value = placeholder, value
        box.remove_class("hidden")
        box.focus()

    @on(Input.Changed, "#session-filter")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if self.filter_mode == "filter":
            self.list.filter_text = event.value
            self.apply_filter()

    @on(Input.Submitted, "#session-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.filter_mode == "search" and event.value:
            try:
                words = parse_query(event.value).words
            except QueryError as exc:
                self.notify(str(exc), severity="warning")
                return
            self.search_query = event.value
            self.needle = max(words, key=len, default="")
            self._show_matches(set())
            self.show_progress("searching… (esc cancels)")
            self.search(event.value)
        self.row_list.focus()

    def _show_matches(self, keys: set[SessionKey] | None) -> None:
        self.list.matches = keys
        self.apply_filter()

    @work(exclusive=True, group=Group.SEARCH)
    async def search(self, query: str) -> None:
        self._start_index()
        found = await self.content_search.search(query)
        self.post_message(
            messages.SearchProgress(query, found.keys, 1.0, done=True, note=found.note)
        )

    def on_search_progress(self, message: messages.SearchProgress) -> None:
        message.stop()
        if message.needle != self.search_query:
            return
        keys = set(message.keys)
        self._show_matches(keys)
        self.show_progress("")
        self.notify(f"{len(keys)} session(s) match {message.needle!r} ({message.note})")
        self.post_message(self.Searched(self.search_query, self.needle, keys))

    def back(self) -> bool:
        """Esc: cancel a running search, else clear the filter and search
        (the box closed, the list focused). False if there was neither."""
        if self._searching():
            self.workers.cancel_group(self, Group.SEARCH)
            self.show_progress("")
            self.notify("search cancelled")
            return True
        if not self.narrowed:
            return False
        self.search_query = self.needle = ""
        for box in self.query("#session-filter").results(Input):
            box.add_class("hidden")
            box.value = ""
        self.list.filter_text = ""
        self._show_matches(None)
        self.row_list.focus()
        self.post_message(self.Searched("", "", None))
        return True

    def _searching(self) -> bool:
        return any(w.group == Group.SEARCH and w.is_running for w in self.workers)

    # ----- the index: built on first use, then kept current -----

    def _start_index(self) -> None:
        if not any(w.group == Group.SEARCH_INDEX for w in self.workers):
            self._build_index()

    @work(thread=True, exclusive=True, group=Group.SEARCH_INDEX)
    def _build_index(self) -> None:
        """Index in steps, then follow commits, for as long as the pane lives (a
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
        message.stop()
        if self._searching():
            return  # the search's own progress has the title
        self.show_progress("" if message.done else f"indexing {message.fraction:.0%}")


def _position(keys: list[SessionKey], key: SessionKey) -> int | None:
    # One scan of the list (130,000 keys at a million segments), not three.
    try:
        return keys.index(key)
    except ValueError:
        return None
