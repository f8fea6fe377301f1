"""The Sessions pane: the list of sessions across the open files, its reads,
its filter and its content search. It owns its state and its workers: the
newest page first, then every session in the background; summaries (title,
runs, activity) only for the rows on screen; its SearchBox filters ids and
titles as you type (`/`) or searches the content (`s`, progress in the title).

Its interface: :meth:`load`, :meth:`renew`, :meth:`bring_to_front`,
:meth:`set_badges`, :meth:`open_filter`, :meth:`open_search`,
:meth:`step_match`, :meth:`show` and :meth:`back`; it posts
:class:`Highlighted`, :class:`Chosen` (Enter) and :class:`Searched` (the
transcript then highlights and steps through the hits). Results read for a
list since replaced are dropped.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input

from lovia_tui import messages
from lovia_tui.core.errors import DamagedError
from lovia_tui.core.formatting import plural
from lovia_tui.core.models import SessionKey, SessionSummary
from lovia_tui.core.store import session_reads
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.focus import focus_now
from lovia_tui.widgets.row_list import RowList

if TYPE_CHECKING:
    from textual.css.query import DOMQuery

    from lovia_tui.core.search.workspace import WorkspaceSearch
    from lovia_tui.widgets.search_box import SearchBox
from lovia_tui.widgets.pane_title import PaneTitle
from lovia_tui.widgets.session_list import SessionList
from lovia_tui.widgets.worker_errors import WorkerErrors

FIRST_PAGE = 200
"""Sessions listed before the full index is walked."""
NO_SESSIONS = "no sessions"


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
        self._content_search: WorkspaceSearch | None = None

    def compose(self) -> ComposeResult:
        yield PaneTitle("Sessions", id="sessions-title")
        yield RowList(
            self.list.render_row,
            empty=NO_SESSIONS,
            moved=self.show_title,
            id="sessions",
        )

    def on_mount(self) -> None:
        # Ages move with time: the rows that read differently are drawn again.
        self.set_interval(1.0, self.row_list.refresh_changed)

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
    def selected(self) -> SessionKey | None:
        rows, shown = self.row_list, self.list.shown
        return shown[rows.cursor] if shown and rows.cursor < len(shown) else None

    @property
    def narrowed(self) -> bool:
        """A filter or a search narrows the list (or its box is open)."""
        narrowing = self.list.matches is not None or bool(self.list.filter_text)
        return narrowing or self.filter_open

    def step_match(self, step: int) -> bool:
        """To the next (1) or previous (-1) session a search found, if any."""
        to = self.row_list.cursor + step
        if found := self.list.matches is not None and 0 <= to < len(self.shown):
            self.row_list.cursor = to
        return found

    @property
    def filter_open(self) -> bool:
        return any(not box.has_class("hidden") for box in self.query("#session-filter"))

    @property
    def content_search(self) -> WorkspaceSearch:
        """The workspace's search indexes, made (and imported) on first use:
        the search layer is not needed for a first frame."""
        if self._content_search is None:
            from lovia_tui.core.search.workspace import WorkspaceSearch

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
            file = str(db.path)  # one string for every key of the file (166,000 at 1M)
            try:
                async for chunk, _ in session_reads.session_index(db):
                    for session_id, (_, last_id) in chunk.items():
                        key = (file, session_id)
                        index[key] = max(index.get(key, 0), last_id)
            except DamagedError:
                continue  # its banner says so; the other files still list
        self.say_damaged(self.workspace.session_dbs)
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
        damaged = [db.name for db in self.workspace.session_dbs if db.damage]
        self.row_list.empty_text = (
            f"not read: {', '.join(damaged)} damaged" if damaged else NO_SESSIONS
        )
        self.list.keys = keys
        self.apply_filter()

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
        # Rows the filter hid come back without their titles read: read them
        # now, not at the next key (they showed "…" until then).
        self.fetch_visible_summaries()
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
        self.query_one("#sessions-title", PaneTitle).show(title)

    def show_progress(self, text: str) -> None:
        """A search's progress, in the title: no bar to lay out."""
        self.progress = text
        self.show_title()

    @on(RowList.Highlighted, "#sessions")
    def _highlighted(self) -> None:
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
        if self.list.to_read(self.visible_keys()):
            self._read_summaries()

    @work(exclusive=True, group=Group.SUMMARIES)
    async def _read_summaries(self) -> None:
        # A screenful ahead each way: scrolling then reads once a screen, not a key.
        asked = self.list.to_read(self.visible_keys(margin=1))
        found = await self.workspace.summaries(asked)
        self.list.awaited.difference_update(asked)  # read, or gone
        self.say_damaged(self.workspace.session_dbs)
        if found:
            self.post_message(messages.SummariesLoaded(found))

    def on_summaries_loaded(self, message: messages.SummariesLoaded) -> None:
        message.stop()
        if self.list.take_summaries(message.summaries):
            self.apply_filter()  # a title just read may match the filter
            return
        # Redraw only the rows that got their summary, not the whole list.
        rows = self.row_list
        top = int(rows.scroll_offset.y)
        for offset, key in enumerate(self.visible_keys()):
            if key in message.summaries:
                rows.refresh_line(top + offset)

    def visible_keys(self, margin: int = 0) -> list[SessionKey]:
        """Keys on screen, and ``margin`` screenfuls above and below."""
        rows, shown = self.row_list, self.list.shown
        height, start = rows.size.height + 1, int(rows.scroll_offset.y)
        return shown[max(0, start - margin * height) : start + (margin + 1) * height]

    # ----- narrowing: the filter and the content search -----

    async def open_filter(self) -> None:
        (await self._box()).open("filter", self.list.filter_text)

    async def open_search(self) -> None:
        """The search box, over every session: a filter left from `/` would
        narrow the results without a word, so it is cleared, and said."""
        if self.list.filter_text:
            self.notify(
                f"filter {self.list.filter_text!r} cleared: a search looks in every session"
            )
            self.list.filter_text = ""
            self.apply_filter()
        (await self._box()).open("search", "")

    def _boxes(self) -> DOMQuery[SearchBox]:
        """The filter/search box if mounted; its module is imported with it,
        on first use: the search layer is not needed for a first frame."""
        from lovia_tui.widgets.search_box import SearchBox

        return self.query(SearchBox)

    async def _box(self) -> SearchBox:
        """The filter/search box, mounted on first use: not in the first frame."""
        from lovia_tui.widgets.search_box import SearchBox

        found = self._boxes()
        if found:
            return found.first()
        box = SearchBox(self.content_search, id="session-filter")
        await self.mount(box, after="#sessions-title")
        return box

    def on_search_box_filtered(self, message: SearchBox.Filtered) -> None:
        self.list.filter_text = message.text
        self.apply_filter()

    def on_search_box_started(self) -> None:
        self._show_matches(set())
        self.show_progress("searching… (esc cancels)")

    def on_search_box_progress(self, message: SearchBox.Progress) -> None:
        self.show_progress(message.text)

    @on(Input.Submitted, "#session-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        focus_now(self.row_list)

    def _show_matches(self, keys: set[SessionKey] | None) -> None:
        self.list.matches = keys
        self.apply_filter()

    def on_search_progress(self, message: messages.SearchProgress) -> None:
        message.stop()
        box = self._boxes().first()
        if message.needle != box.query_text:
            return
        keys = set(message.keys)
        self._show_matches(keys)
        if not message.done:  # found so far: the scan goes on
            self.show_progress(f"searching · {len(keys):,} so far")
            return
        self.show_progress("")
        self.notify(
            f"{plural(len(keys), 'session')} {'matches' if len(keys) == 1 else 'match'} "
            f"{message.needle!r} ({message.note})"
        )
        self.post_message(self.Searched(box.query_text, box.needle, keys))

    def back(self) -> bool:
        """Esc: cancel a running search, else clear the filter and search
        (the box closed, the list focused). False if there was neither."""
        boxes = self._boxes()
        if boxes and boxes.first().cancel():
            self.notify("search cancelled")
            return True
        if not self.narrowed:
            return False
        for box in boxes:
            box.close()
        self.list.filter_text = ""
        self._show_matches(None)
        focus_now(self.row_list)
        self.post_message(self.Searched("", "", None))
        return True


def _position(keys: list[SessionKey], key: SessionKey) -> int | None:
    # One scan of the list (130,000 keys at a million segments), not three.
    try:
        return keys.index(key)
    except ValueError:
        return None
