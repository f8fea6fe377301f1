"""Every checkpoint in the open files, paged, with the selected run's detail below.

The rows come from :class:`~lovia_tui.core.runs.listing.RunList`: the pane walks
the files in the background (counts per status show in the title as they are
known), and reads the runs of the rows on screen, a screenful either way, as
the list scrolls. A million checkpoints cost what the screen shows.

The interface the screen uses: :meth:`load` (re)reads the files, posting
:class:`messages.RunsLoaded` once the unfinished runs and their links are
known; :attr:`selected`, :meth:`select_run`, :meth:`find`, :attr:`links`,
:meth:`linked_to`, :attr:`status_filter` with :meth:`apply_filter`, and
:meth:`highlight_session`.

The pane says :class:`RunsPane.Chosen` whenever the run under its cursor
changes — a move, a status filter, a reload that dropped or replaced the
run, a row read in the background — so the detail below never describes
another run than the highlighted one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label

from lovia_tui import messages
from lovia_tui.core.formatting import age, printable
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.core.run_status import ALL_RUNS, status_label
from lovia_tui.core.runs.listing import RunList
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.widgets.columns import Column, cell, fit, longest
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.run_detail import STATUS_STYLES, RunDetail

PROGRESS_EVERY = 0.2
"""Seconds between list updates while the files are walked."""


class RunsPane(Vertical):
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

    def __init__(self, stale_after: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.stale_after = stale_after
        self.source = RunList([], _no_links, stale_after)
        self.related_session: tuple[str, str] | None = None
        self._wanted_filter = ALL_RUNS
        self._counts = ""
        self._walking = False
        self._again: Workspace | None = None
        self._announced: RunInfo | None = None
        self._columns: list[Column] = []
        self._widths: tuple[int, dict[str, int]] = (-1, {})

    def compose(self) -> ComposeResult:
        yield Label("Runs", classes="pane-title", id="runs-title", markup=False)
        yield RowList(self._render_row, empty="no checkpoints", id="runs")
        yield RunDetail(id="run-detail")

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    @property
    def row_list(self) -> RowList:
        return self.query_one("#runs", RowList)

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

    @property
    def shown(self) -> list[RunInfo | None]:
        """Every row's run under the filter, None where not read yet (small files, tests)."""
        return [self.source.at(index) for index in range(len(self.source))]

    @property
    def status_filter(self) -> str:
        return self._wanted_filter

    @status_filter.setter
    def status_filter(self, status: str) -> None:
        self._wanted_filter = status

    def status_of(self, run: RunInfo) -> str:
        return status_label(run, time.time(), self.stale_after)

    def find(self, run_id: str) -> RunInfo | None:
        return self.source.find(run_id)

    def linked_to(self, key: tuple[str, str]) -> list[RunInfo]:
        return self.source.linked_to(*key)

    # ----- loading -----

    def adopt(self, source: RunList) -> None:
        """Show rows read before the screen was composed (its first frame has
        them); :meth:`load` then walks the files whole and replaces them."""
        source.stale_after = self.stale_after
        source.status = self._wanted_filter
        source.refilter()
        self.source = source
        self.apply_filter()

    def load(self, workspace: Workspace) -> None:
        """Walk the open files afresh; the current rows stay until the new walk
        is done. Asked again while walking, it walks once more afterwards:
        cancelling would starve the list of a file saved more often than
        one walk takes."""
        if self._walking:
            self._again = workspace
            return
        self._walking = True
        source = RunList(workspace.checkpoint_dbs, workspace.links, self.stale_after)
        source.status = self._wanted_filter
        self._run("runs", self._walk, source, not len(self.source))

    def _run(self, group: str, work, *args) -> None:
        """Run on the screen, whose handler turns a failed read into one notification."""
        self.screen.run_worker(partial(work, *args), group=group, exclusive=True)

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
        finally:
            self._walking = False
            again, self._again = self._again, None
            if again is not None and self.is_mounted:
                self.call_later(self.load, again)

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
        start, count = self._window()
        if any(
            self.source.at(index) is None
            for index in range(start, min(start + count, len(self.source)))
        ):
            self._run("runs-page", self._read_page, self.source, start, count)

    async def _read_page(self, source: RunList, start: int, count: int) -> None:
        if await source.read(start, count) and source is self.source:
            self._measure()
            self.row_list.refresh()
            self._announce()

    def _announce(self) -> None:
        """Say the run under the cursor changed, so the detail panel follows."""
        run = self.selected
        if run != self._announced:
            self._announced = run
            self.post_message(self.Chosen(run))

    # ----- filter, selection, marks -----

    def apply_filter(self, keep: str | None = None) -> None:
        current = keep or (self.selected.run_id if self.selected else None)
        self.source.status = self._wanted_filter
        self.source.refilter()
        index = self.source.index_of(current) if current else None
        self._measure()
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
        self.query_one("#runs-title", Label).update(
            f"{label} {self.row_list.position}{self._counts}", layout=False
        )

    def on_row_list_highlighted(self) -> None:
        self.show_title()
        self._read_visible()
        self._announce()

    def _tick(self) -> None:
        """Staleness moves with time: a running/stale filter is answered again."""
        if self._wanted_filter in ("running", "stale"):
            self.apply_filter()
        else:
            self.count_statuses()
            self.show_title()

    def select_run(self, run_id: str) -> bool:
        """Put the cursor on a run (the filter cleared if it hides it). A run
        not read yet is looked for in the background: False until it is."""
        index = self.source.index_of(run_id)
        if index is None and self._wanted_filter != ALL_RUNS:
            self._wanted_filter = ALL_RUNS
            self.apply_filter()
            index = self.source.index_of(run_id)
        if index is None:
            self._run("runs-locate", self._locate, self.source, run_id)
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

    def _measure(self) -> None:
        """Size the columns to the runs read (ids first, ages before agents);
        by length, not cells: the pages read may hold thousands of runs."""
        runs = self.source.known()
        sessions = [
            link.session_id if (link := self.links.get(run.run_id)) else "unlinked"
            for run in runs
        ]
        self._columns = [
            Column("status", 11, 1),
            Column("id", longest((r.run_id for r in runs), 40, 8), 0),
            Column("agent", longest((r.agent_name for r in runs), 16), 4),
            Column("turns", 3, 5),
            Column("age", 4, 2),
            Column("session", longest(sessions, 40, 8), 3, least=6, grows=True),
        ]
        self._widths = (-1, {})

    def _render_row(self, index: int, width: int) -> Text:
        if self._widths[0] != width:
            self._widths = (width, fit(self._columns, width))
        widths = self._widths[1]
        run = self.source.at(index)
        text = Text()
        if run is None:
            mark = self.source.mark(index)
            status = mark.label(time.time(), self.stale_after) if mark else "completed"
            text.append(
                cell(printable(status), widths.get("status", 11)),
                style=STATUS_STYLES.get(status, ""),
            )
            text.append(" …", style="dim")
            return text
        status = self.status_of(run)
        link = self.links.get(run.run_id)
        values = {
            "status": (printable(status), STATUS_STYLES.get(status, "")),
            "id": (printable(run.run_id), "bold"),
            "agent": (printable(run.agent_name), ""),
            "turns": (f"{run.turns}t", "dim"),
            "age": (age(time.time() - run.updated_at), "dim"),
            "session": (
                (printable(link.session_id), "") if link else ("unlinked", "italic dim")
            ),
        }
        for column in self._columns:
            if column.name in widths:
                if text:
                    text.append(" ")
                value, style = values[column.name]
                right = column.name in ("turns", "age")
                text.append(cell(value, widths[column.name], right=right), style=style)
        return text


async def _no_links(run_ids) -> dict[str, SessionLink]:
    return {}
