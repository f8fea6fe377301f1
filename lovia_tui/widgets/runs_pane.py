"""Every checkpoint in the open files, paged, with the selected run's detail below.

The rows come from :class:`~lovia_tui.core.runs.listing.RunList`: the pane walks
the files in the background (counts per status show in the title as they are
known), and reads the runs of the rows on screen, a screenful either way, as
the list scrolls. A million checkpoints cost what the screen shows.

The interface the screen uses: :meth:`load` (re)reads the files, posting
:class:`messages.RunsLoaded` once the unfinished runs and their links are
known; :attr:`selected`, :meth:`select_run`, :meth:`find`, :attr:`links`,
:meth:`linked_to`, :meth:`session_badges`, :meth:`filter_by`,
:meth:`highlight_session` and :meth:`toggle_raw`.

Whenever the run under its cursor changes — a move, a status filter, a
reload that dropped or replaced the run, a row read in the background — the
detail below describes it (reading its dangling calls itself) and the pane
says :class:`RunsPane.Chosen`, so the panel never describes another run than
the highlighted one. Enter says :class:`RunsPane.Opened`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from lovia_tui import messages
from lovia_tui.core.models import RunInfo, SessionKey, SessionLink
from lovia_tui.core.run_status import ALL_RUNS, RunStatus, status_label
from lovia_tui.core.runs.listing import RunList
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import Group
from lovia_tui.widgets.pane_title import PaneTitle
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.run_detail import RunDetail
from lovia_tui.widgets.run_rows import RunColumns
from lovia_tui.widgets.worker_errors import WorkerErrors

PROGRESS_EVERY = 0.2
"""Seconds between list updates while the files are walked."""


class RunsPane(WorkerErrors, Vertical):
    """Runs list (status badge, agent, turns, age, session) and detail."""

    @dataclass
    class Walked(Message):
        """The walk moved on: ``source`` is the list to show (``done`` when whole)."""

        source: RunList
        done: bool

    class Chosen(Message):
        """The highlighted run is now ``run`` (None: the list is empty or its row unread)."""

        def __init__(self, run: RunInfo | None) -> None:
            super().__init__()
            self.run = run

    @dataclass
    class Opened(Message):
        """Enter on ``run``: show it in the transcript."""

        run: RunInfo

    def __init__(self, workspace: Workspace, stale_after: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workspace = workspace
        self.stale_after = stale_after
        self.source = RunList([], _no_links, stale_after)
        self.related_session: tuple[str, str] | None = None
        self._wanted_filter = ALL_RUNS
        self._counts = ""
        self._walking = False
        self._again = False
        self._announced: tuple[RunInfo | None, SessionLink | None] = (None, None)
        self.columns = RunColumns(stale_after)

    def compose(self) -> ComposeResult:
        yield PaneTitle("Runs", id="runs-title")
        yield RowList(
            lambda index, width: self.columns.render(self.source, index, width),
            empty="no checkpoints",
            moved=self.show_title,
            id="runs",
        )
        yield RunDetail(self.workspace, self.stale_after, id="run-detail")

    def on_mount(self) -> None:
        self.set_interval(1.0, self.tick)

    def on_resize(self) -> None:
        """Shown (one pane at a time below 100 columns) or grown: rows that
        were off screen are on it now, unread until the cursor moved."""
        self._read_visible()

    @property
    def row_list(self) -> RowList:
        return self.query_one("#runs", RowList)

    @property
    def detail(self) -> RunDetail:
        return self.query_one(RunDetail)

    # ----- what the screen reads -----

    @property
    def selected(self) -> RunInfo | None:
        rows = self.row_list
        return self.source.at(rows.cursor) if rows.cursor < len(self.source) else None

    @property
    def links(self) -> dict[str, SessionLink]:
        return self.source.links

    @property
    def runs(self) -> list[RunInfo]:
        """The runs read so far (unfinished and web-linked ones, and recent pages)."""
        return self.source.known()

    def unfinished_unread(self) -> list[tuple[str, str]]:
        """(run id, status) of unfinished runs not read yet: a goto can name them."""
        known = {run.run_id for run in self.runs}
        now = time.time()
        return [
            (mark.run_id, mark.label(now, self.stale_after))
            for mark in self.source.unfinished
            if mark.run_id not in known
        ]

    @property
    def shown(self) -> list[RunInfo | None]:
        """Every row's run under the filter, None where not read yet (small files, tests)."""
        return [self.source.at(index) for index in range(len(self.source))]

    @property
    def status_filter(self) -> str:
        return self._wanted_filter

    def status_of(self, run: RunInfo) -> str:
        return status_label(run, time.time(), self.stale_after)

    def find(self, run_id: str) -> RunInfo | None:
        return self.source.find(run_id)

    def linked_to(self, key: tuple[str, str]) -> list[RunInfo]:
        return self.source.linked_to(*key)

    def session_badges(self, runs: list[RunInfo]) -> dict[SessionKey, str]:
        """The mark of each session with an unfinished run among ``runs``."""
        badges: dict[SessionKey, str] = {}
        for run in runs:
            link = self.links.get(run.run_id)
            status = self.status_of(run)
            if link and status != RunStatus.COMPLETED:
                badges[(str(link.file), link.session_id)] = (
                    "live" if status == RunStatus.RUNNING else status
                )
        return badges

    # ----- loading -----

    def adopt(self, source: RunList) -> None:
        """Show rows read before the screen was composed (its first frame has
        them); :meth:`load` then walks the files whole and replaces them."""
        source.stale_after = self.stale_after
        source.status = self._wanted_filter
        source.refilter()
        self.source = source
        self.apply_filter()
        self.call_after_refresh(self._read_visible)  # their sessions, once laid out

    def load(self) -> None:
        """Walk the open files afresh; the current rows stay until the new walk
        is done. Asked again while walking, it walks once more afterwards:
        cancelling would starve the list of a file saved more often than
        one walk takes."""
        if self._walking:
            self._again = True
            return
        self._walking = True
        workspace = self.workspace
        source = RunList(workspace.checkpoint_dbs, workspace.links, self.stale_after)
        source.status = self._wanted_filter
        self._run(Group.RUNS, self._walk, source, not len(self.source))

    def _run(
        self, group: Group, work: Callable[..., Coroutine[Any, Any, None]], *args: Any
    ) -> None:
        self.run_worker(partial(work, *args), group=group, exclusive=True)

    async def _walk(self, source: RunList, progressive: bool) -> None:
        """Walk ``source``; each time it is shown, the rows on screen are read
        first, so that a row never shows empty where it showed a run."""
        try:
            shown_at = 0.0
            async for _ in source.walk():
                if progressive and time.monotonic() - shown_at >= PROGRESS_EVERY:
                    await source.read(*self._window())
                    shown_at = time.monotonic()
                    self.post_message(self.Walked(source, done=False))
            await source.read(*self._window())
            self.post_message(self.Walked(source, done=True))
            self.say_damaged(self.workspace.checkpoint_dbs)
        finally:
            self._walking = False
            again, self._again = self._again, False
            if again and self.is_mounted:
                self.call_later(self.load)

    def _window(self) -> tuple[int, int]:
        """The rows on screen and a screenful either way: (first, count)."""
        rows = self.row_list
        height = max(1, rows.size.height)
        top = int(rows.scroll_offset.y)
        return max(0, top - height), 3 * height

    @on(Walked)
    def _walked(self, message: Walked) -> None:
        message.stop()
        keep = self.selected.run_id if self.selected else None
        self.source = message.source
        self.apply_filter(keep)
        if message.done:
            self.post_message(
                messages.RunsLoaded(list(message.source.pinned.values()), self.links)
            )

    def _read_visible(self) -> None:
        """Read the rows near the screen not read yet, or whose sessions are not."""
        start, count = self._window()
        source = self.source
        if any(
            (run := source.at(index)) is None or run.run_id in source.linking
            for index in range(start, min(start + count, len(source)))
        ):
            self._run(Group.RUNS_PAGE, self._read_page, self.source, start, count)

    async def _read_page(self, source: RunList, start: int, count: int) -> None:
        if await source.read(start, count) and source is self.source:
            self.columns.measure(self.source)
            self.row_list.refresh()
            self._announce()

    def _announce(self) -> None:
        """The detail describes the run under the cursor, and the pane says so."""
        run = self.selected
        link = self.links.get(run.run_id) if run else None
        if (run, link) != self._announced:
            chosen = run != self._announced[0]
            self._announced = (run, link)  # the session may be known after the run
            self.detail.describe(run, link)
            if chosen:
                self.post_message(self.Chosen(run))

    def toggle_raw(self) -> None:
        """The detail shows the highlighted run's raw head, or its table again."""
        self.detail.toggle_raw()

    @on(RowList.Selected, "#runs")
    def _opened(self, event: RowList.Selected) -> None:
        event.stop()
        if (run := self.selected) is not None:
            self.post_message(self.Opened(run))

    # ----- filter, selection, marks -----

    def apply_filter(self, keep: str | None = None) -> None:
        current = keep or (self.selected.run_id if self.selected else None)
        self.source.status = self._wanted_filter
        self.source.refilter()
        index = self.source.index_of(current) if current else None
        self.columns.measure(self.source)
        self.row_list.set_count(len(self.source), cursor=index or 0)
        self.row_list.set_marked(self._is_related)
        self.count_statuses()
        self.show_title()
        self._read_visible()
        self._announce()

    def count_statuses(self) -> None:
        """The title's counts per status: on each walk step and tick, not per key."""
        counts = self.source.counts()
        known = " · ".join(
            f"{count:,} {status}" for status, count in counts.items() if count
        )
        walking = "" if self.source.done else " · counting…"
        self._counts = (f" · {known}" if known else "") + walking

    def show_title(self) -> None:
        label = (
            "Runs"
            if self._wanted_filter == ALL_RUNS
            else f"Runs: {self._wanted_filter}"
        )
        self.query_one("#runs-title", PaneTitle).show(
            f"{label} {self.row_list.position}{self._counts}"
        )

    def filter_by(self, status: str) -> None:
        """Show the runs of one status (``ALL_RUNS``: every run)."""
        self._wanted_filter = status
        self.apply_filter()

    def on_row_list_highlighted(self) -> None:
        self._read_visible()
        self._announce()

    def tick(self) -> None:
        """Ages and staleness move with time, without any key press: a
        running/stale filter is answered again, the detail's age redrawn."""
        if self._wanted_filter in ("running", "stale"):
            self.apply_filter()
        else:
            self.count_statuses()
            self.show_title()
        self.row_list.refresh_changed()
        self.detail.tick()

    def select_run(self, run_id: str) -> bool:
        """Put the cursor on a run (the filter cleared if it hides it). A run
        not read yet is looked for in the background: False until it is."""
        index = self.source.index_of(run_id)
        if index is None and self._wanted_filter != ALL_RUNS:
            self._wanted_filter = ALL_RUNS
            self.apply_filter()
            index = self.source.index_of(run_id)
        if index is None:
            self._run(Group.RUNS_LOCATE, self._locate, self.source, run_id)
            return False
        self.row_list.cursor = index
        return True

    async def _locate(self, source: RunList, run_id: str) -> None:
        index = await source.locate(run_id)
        if index is None or source is not self.source:
            return
        await source.read(index, 1)
        self.row_list.cursor = index
        self._announce()

    def highlight_session(self, key: tuple[str, str] | None) -> None:
        """Mark the runs that belong to the selected session."""
        linked = {(str(link.file), link.session_id) for link in self.links.values()}
        unchanged = key == self.related_session or (
            key not in linked and self.related_session not in linked
        )
        self.related_session = key
        if unchanged:
            return  # no row's mark changes: spare the list a repaint per key press
        self.row_list.set_marked(self._is_related)

    def _is_related(self, index: int) -> bool:
        if self.related_session is None or index >= len(self.source):
            return False
        run = self.source.at(index)
        link = self.links.get(run.run_id) if run else None
        return (
            link is not None
            and (str(link.file), link.session_id) == self.related_session
        )


async def _no_links(run_ids) -> dict[str, SessionLink]:
    return {}
