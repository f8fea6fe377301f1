"""How a row of the runs list is drawn: status badge, id, agent, turns, age
and session, in columns sized to the runs read (ids first, ages before
agents)."""

from __future__ import annotations

import time

from rich.text import Text

from lovia_tui.core.formatting import age_since, printable
from lovia_tui.core.run_status import status_label
from lovia_tui.core.runs.listing import RunList
from lovia_tui.widgets.columns import Column, cell, fit, longest
from lovia_tui.widgets.run_detail import STATUS_STYLES


def session_of(source: RunList, run_id: str) -> tuple[str, str]:
    """A run's session cell and its style: its id, "…" while it is looked
    up, "unlinked" once no record names one."""
    if link := source.links.get(run_id):
        return printable(link.session_id), ""
    if run_id in source.linking:
        return "…", "dim"
    return "unlinked", "italic dim"


class RunColumns:
    """The runs list's columns, measured on the rows read, and its rows drawn."""

    def __init__(self, stale_after: float) -> None:
        self.stale_after = stale_after
        self._columns: list[Column] = []
        self._widths: tuple[int, dict[str, int]] = (-1, {})

    def measure(self, source: RunList) -> None:
        """By length, not cells: the pages read may hold thousands of runs."""
        runs = source.known()
        sessions = [session_of(source, run.run_id)[0] for run in runs]
        self._columns = [
            Column("status", 11, 1),
            Column("id", longest((r.run_id for r in runs), 40, 8), 0, share=0.35),
            Column("agent", longest((r.agent_name for r in runs), 16), 4),
            Column("turns", 3, 5),
            Column("age", 4, 2),
            Column(
                "session", longest(sessions, 40, 8), 3, least=6, grows=True, share=0.35
            ),
        ]
        self._widths = (-1, {})

    def render(self, source: RunList, index: int, width: int) -> Text:
        if self._widths[0] != width:
            self._widths = (width, fit(self._columns, width))
        widths = self._widths[1]
        run = source.at(index)
        now = time.time()
        text = Text()
        if run is None:
            mark = source.mark(index)
            status = mark.label(now, self.stale_after) if mark else "completed"
            text.append(
                cell(printable(status), widths.get("status", 11)),
                style=STATUS_STYLES.get(status, ""),
            )
            text.append(" …", style="dim")
            return text
        status = status_label(run, now, self.stale_after)
        values = {
            "status": (printable(status), STATUS_STYLES.get(status, "")),
            "id": (printable(run.run_id), "bold"),
            "agent": (printable(run.agent_name), ""),
            "turns": (f"{run.turns}t", "dim"),
            "age": (age_since(now, run.updated_at), "dim"),
            "session": session_of(source, run.run_id),
        }
        for column in self._columns:
            if column.name in widths:
                if text:
                    text.append(" ")
                value, style = values[column.name]
                right = column.name in ("turns", "age")
                middle = column.name in ("id", "session")
                text.append(
                    cell(value, widths[column.name], right=right, middle=middle),
                    style=style,
                )
        return text
