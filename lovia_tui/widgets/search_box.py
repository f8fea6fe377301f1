"""The Sessions pane's box: a filter on ids and titles as you type (`/`), or
a content search through the search index (`s`).

The box owns the search: the first `s` starts the index's build in a process
of its own (``core.search.indexer``; afterwards it follows other processes'
commits), whose progress a thread worker reads; a search looks the indexed
part up and scans the rest (``core.search.workspace``). It says
:class:`Filtered` as the filter is typed, :class:`Started` and
:class:`messages.SearchProgress` (once it answered) for a search, and
:class:`Progress` for the pane's title.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.message import Message
from textual.widgets import Input
from textual.worker import get_current_worker

from lovia_tui import messages
from lovia_tui.core.search.query import QueryError, parse_query
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.focus import focus_now
from lovia_tui.widgets.worker_errors import WorkerErrors

if TYPE_CHECKING:
    from lovia_tui.core.models import SessionKey
    from lovia_tui.core.search.workspace import WorkspaceSearch

SEARCH_HINT = (
    'search: words, "a phrase", prefix*, tool:NAME, error:, session:ID, run:ID'
)


class SearchBox(WorkerErrors, Input):
    """The filter or the content search, and the index it searches."""

    @dataclass
    class Filtered(Message):
        """The filter now reads ``text``."""

        text: str

    @dataclass
    class Started(Message):
        """A content search for ``query`` started."""

        query: str

    @dataclass
    class Progress(Message):
        """What the search or the index's build says in the pane's title."""

        text: str

    def __init__(self, index: WorkspaceSearch, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = index
        self.mode = "filter"
        self.query_text = ""
        """The search typed after `s`, as the index reads it."""
        self.needle = ""
        """The search's longest word: what the transcript highlights."""

    def open(self, mode: str, value: str) -> None:
        """Show the box for the filter or the search, holding ``value``, focused."""
        self.mode = mode
        if mode == "search":
            self.start_index()
        self.placeholder = "filter by id or title" if mode == "filter" else SEARCH_HINT
        self.value = value if mode == "filter" else self.query_text
        self.remove_class("hidden")
        focus_now(self)  # the keys typed right after `s` or `/` are its text

    def close(self) -> None:
        """Hidden and emptied; the search forgotten."""
        self.query_text = self.needle = ""
        self.add_class("hidden")
        self.value = ""

    @property
    def searching(self) -> bool:
        return any(w.group == Group.SEARCH and w.is_running for w in self.workers)

    def cancel(self) -> bool:
        """Cancel a running search (False if none was running)."""
        if not self.searching:
            return False
        self.workers.cancel_group(self, Group.SEARCH)
        self.post_message(self.Progress(""))
        return True

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if self.mode == "filter":
            self.post_message(self.Filtered(event.value))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        """A search starts once submitted; the pane's list takes the focus."""
        if self.mode != "search" or not event.value:
            return
        try:
            words = parse_query(event.value).words
        except QueryError as exc:
            event.stop()
            self.notify(str(exc), severity="warning")
            return
        self.query_text = event.value
        self.needle = max(words, key=len, default="")
        self.post_message(self.Started(event.value))
        self.search(event.value)

    @work(exclusive=True, group=Group.SEARCH)
    async def search(self, query: str) -> None:
        self.start_index()
        worker = get_current_worker()

        def so_far(keys: list[SessionKey]) -> None:  # from the scan's thread
            if not worker.is_cancelled:
                self.post_message(messages.SearchProgress(query, keys, 0.0, done=False))

        found = await self.index.search(query, so_far=so_far)
        self.post_message(
            messages.SearchProgress(query, found.keys, 1.0, done=True, note=found.note)
        )

    # ----- the index: built on first use, then kept current -----

    def start_index(self) -> None:
        if not any(w.group == Group.SEARCH_INDEX for w in self.workers):
            self._build_index()

    @work(thread=True, exclusive=True, group=Group.SEARCH_INDEX)
    def _build_index(self) -> None:
        """Report the indexing process's progress for as long as the box
        lives (a "live:" group: a failure is a notification, not the end of
        the app). Cancelled, it stops the process and reads to its end."""
        worker = get_current_worker()
        indexer = self.index.start_indexing()
        done = False
        try:
            for progress in indexer.progress():
                if worker.is_cancelled:
                    indexer.stop()
                elif progress is not None:
                    if not (done and progress.done):
                        self.post_message(
                            messages.IndexProgress(progress.fraction, progress.done)
                        )
                    done = progress.done
        finally:
            indexer.stop()

    def on_index_progress(self, message: messages.IndexProgress) -> None:
        message.stop()
        if not self.searching:  # else the search's own progress has the title
            text = "" if message.done else f"indexing {message.fraction:.0%}"
            self.post_message(self.Progress(text))
