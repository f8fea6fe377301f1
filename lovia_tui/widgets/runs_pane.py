"""Every checkpoint in the open files, with the selected run's detail below.

The pane says :class:`RunsPane.Chosen` whenever the run under its cursor
changes — a move, a status filter, a reload that dropped or replaced the
run — so the detail below never describes another run than the highlighted one.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label

from lovia_tui.core.formatting import age, printable
from lovia_tui.core.models import RunInfo, SessionLink
from lovia_tui.widgets.columns import Column, cell, fit, longest
from lovia_tui.widgets.row_list import RowList
from lovia_tui.widgets.run_detail import STATUS_STYLES, RunDetail, status_label


class RunsPane(Vertical):
    """Runs list (status badge, agent, turns, usage, age, session) and detail."""

    class Chosen(Message):
        """The highlighted run is now ``run`` (None: the list is empty)."""

        def __init__(self, run: RunInfo | None) -> None:
            super().__init__()
            self.run = run

    def __init__(self, stale_after: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self._announced: RunInfo | None = None
        self.stale_after = stale_after
        self.runs: list[RunInfo] = []
        self.shown: list[RunInfo] = []
        self.links: dict[str, SessionLink] = {}
        self.status_filter = "all"
        self.related_session: tuple[str, str] | None = None
        self._columns: list[Column] = []
        self._widths: tuple[int, dict[str, int]] = (-1, {})

    def compose(self) -> ComposeResult:
        yield Label("Runs", classes="pane-title", id="runs-title", markup=False)
        yield RowList(self._render_row, empty="no checkpoints", id="runs")
        yield RunDetail(id="run-detail")

    @property
    def row_list(self) -> RowList:
        return self.query_one("#runs", RowList)

    @property
    def selected(self) -> RunInfo | None:
        rows = self.row_list
        return (
            self.shown[rows.cursor]
            if self.shown and rows.cursor < len(self.shown)
            else None
        )

    def status_of(self, run: RunInfo) -> str:
        return status_label(run, time.time(), self.stale_after)

    def set_runs(self, runs: list[RunInfo], links: dict[str, SessionLink]) -> None:
        self.runs, self.links = runs, links
        self.apply_filter()

    def apply_filter(self, keep: str | None = None) -> None:
        current = keep or (self.selected.run_id if self.selected else None)
        self.shown = [
            run
            for run in self.runs
            if self.status_filter == "all" or self.status_of(run) == self.status_filter
        ]
        ids = [run.run_id for run in self.shown]
        self._columns = self._measure()
        self._widths = (-1, {})
        self.row_list.set_count(
            len(self.shown), cursor=ids.index(current) if current in ids else 0
        )
        self.row_list.set_marked(self._is_related)
        self.show_title()
        self._announce()

    def _announce(self) -> None:
        run = self.selected
        if run is not self._announced:
            self._announced = run
            self.post_message(self.Chosen(run))

    def show_title(self) -> None:
        label = "Runs" if self.status_filter == "all" else f"Runs: {self.status_filter}"
        self.query_one("#runs-title", Label).update(
            f"{label} {self.row_list.position}", layout=False
        )

    def on_row_list_highlighted(self) -> None:
        self.show_title()
        self._announce()

    def find(self, run_id: str) -> RunInfo | None:
        return next((run for run in self.runs if run.run_id == run_id), None)

    def select_run(self, run_id: str) -> bool:
        if self.status_filter != "all" and run_id not in {r.run_id for r in self.shown}:
            self.status_filter = "all"
            self.apply_filter()
        for index, run in enumerate(self.shown):
            if run.run_id == run_id:
                self.row_list.cursor = index
                return True
        return False

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
        if self.related_session is None or index >= len(self.shown):
            return False
        link = self.links.get(self.shown[index].run_id)
        return (
            link is not None
            and (str(link.file), link.session_id) == self.related_session
        )

    def _measure(self) -> list[Column]:
        """The columns, sized to the runs shown; ids first, ages before agents."""
        # By length, not cells: a file may hold a great many checkpoints.
        sessions = [
            link.session_id if (link := self.links.get(run.run_id)) else "unlinked"
            for run in self.shown
        ]
        return [
            Column("status", 11, 1),
            Column("id", longest((r.run_id for r in self.shown), 40, 8), 0),
            Column("agent", longest((r.agent_name for r in self.shown), 16), 4),
            Column("turns", 3, 5),
            Column("age", 4, 2),
            Column("session", longest(sessions, 40, 8), 3, least=6, grows=True),
        ]

    def _render_row(self, index: int, width: int) -> Text:
        if self._widths[0] != width:
            self._widths = (width, fit(self._columns, width))
        widths = self._widths[1]
        run = self.shown[index]
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
        text = Text()
        for column in self._columns:
            if column.name in widths:
                if text:
                    text.append(" ")
                value, style = values[column.name]
                right = column.name in ("turns", "age")
                text.append(cell(value, widths[column.name], right=right), style=style)
        return text
