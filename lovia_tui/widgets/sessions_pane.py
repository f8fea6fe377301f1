"""The sessions list: id, title, runs, last activity and a live/stale badge."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label

from lovia_tui.core.formatting import PIN, age, printable
from lovia_tui.core.models import SessionKey, SessionSummary
from lovia_tui.widgets.columns import Column, cell, fit, longest, widest
from lovia_tui.widgets.row_list import RowList

BADGE_STYLES = {
    "live": "bold green",
    "stale": "bold red",
    "interrupted": "yellow",
    "failed": "red",
}


class SessionsPane(Vertical):
    """Filterable, virtual list of sessions across the open files."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.keys: list[SessionKey] = []
        self._positions: tuple[list[SessionKey], int, dict[SessionKey, int]] = (
            [],
            0,
            {},
        )
        self.shown: list[SessionKey] = []
        self.summaries: dict[SessionKey, SessionSummary] = {}
        self.outdated: set[SessionKey] = set()
        """Summaries still shown but to be read again (after ctrl+r, an action)."""
        self.badges: dict[SessionKey, str] = {}
        self.matches: set[SessionKey] | None = None
        self.filter_text = ""
        self._columns: list[Column] = []
        self._widths: tuple[int, dict[str, int]] = (-1, {})
        self.progress = ""
        """What a running content search says in the title (its progress)."""

    def compose(self) -> ComposeResult:
        yield Label("Sessions", classes="pane-title", id="sessions-title", markup=False)
        yield RowList(self._render_row, empty="no sessions", id="sessions")

    async def filter_box(self) -> Input:
        """The filter and search input, mounted on first use: not in the first frame."""
        found = self.query("#session-filter")
        if found:
            return found.first(Input)
        box = Input(id="session-filter", classes="hidden")
        await self.mount(box, after="#sessions-title")
        return box

    async def open_input(self, placeholder: str, value: str) -> None:
        """Show the filter/search box with ``value``, focused."""
        box = await self.filter_box()
        box.placeholder, box.value = placeholder, value
        box.remove_class("hidden")
        box.focus()

    def filter_by(self, text: str) -> None:
        """Show the sessions whose id or title holds ``text``."""
        self.filter_text = text
        self.apply_filter()

    def show_matches(self, keys: set[SessionKey] | None) -> None:
        """Show only ``keys`` (a content search's matches; None: every session)."""
        self.matches = keys
        self.apply_filter()

    def show_progress(self, text: str) -> None:
        """A search's progress, in the title: no bar to lay out."""
        self.progress = text
        self.show_title()

    @property
    def narrowed(self) -> bool:
        """A filter or a search narrows the list (or its box is open)."""
        return self.filter_open or self.matches is not None or bool(self.filter_text)

    def clear_narrowing(self) -> None:
        """Every session again, the box closed and emptied, the list focused."""
        for box in self.query("#session-filter").results(Input):
            box.add_class("hidden")
            box.value = ""
        self.filter_text = ""
        self.show_matches(None)
        self.row_list.focus()

    @property
    def filter_open(self) -> bool:
        return any(not box.has_class("hidden") for box in self.query("#session-filter"))

    @property
    def row_list(self) -> RowList:
        return self.query_one("#sessions", RowList)

    @property
    def selected(self) -> SessionKey | None:
        rows = self.row_list
        return (
            self.shown[rows.cursor]
            if self.shown and rows.cursor < len(self.shown)
            else None
        )

    def needs_summary(self, key: SessionKey) -> bool:
        return key not in self.summaries or key in self.outdated

    def forget_summaries(self) -> None:
        """Every summary is to be read again; those on screen stay shown
        meanwhile (no flash of "…"), the others are dropped."""
        visible = set(self.visible_keys(margin=1))
        self.summaries = {k: v for k, v in self.summaries.items() if k in visible}
        self.outdated = set(self.summaries)

    def take_summaries(self, found: dict[SessionKey, SessionSummary]) -> None:
        self.summaries.update(found)
        self.outdated.difference_update(found)
        self._measure()

    def _measure(self) -> None:
        """Columns sized to the ids shown and the titles read so far."""
        summaries = self.summaries.values()
        self._columns = [
            # Ids by length, not cells: a walk of 130,000 keys must stay cheap.
            Column("id", longest((key[1] for key in self.shown), 40, 10), 0),
            Column(
                "title",
                widest((printable(summary.title) for summary in summaries), 32, 8),
                1,
                least=5,
                grows=True,
            ),
            Column("runs", widest((f"{s.runs}r" for s in summaries), 6, 2), 2),
            Column("age", 4, 3),
        ]
        self._widths = (-1, {})

    def set_keys(self, keys: list[SessionKey]) -> None:
        self.keys = keys
        self.apply_filter()

    def bring_to_front(self, keys: list[SessionKey]) -> None:
        """Sessions that just gained a run move to the top, their summaries renewed."""
        fresh = list(dict.fromkeys(reversed(keys)))
        for key in fresh:
            self.summaries.pop(key, None)
        self.keys = fresh + [key for key in self.keys if key not in set(fresh)]
        self.apply_filter()

    def apply_filter(self) -> None:
        """Show the sessions matching the id/title filter and any content search."""
        current = self.selected
        needle = self.filter_text.casefold()
        candidates = self.keys
        if self.matches is not None and len(self.matches) * 8 < len(self.keys):
            # A search's few matches, in list order: not a walk of every session
            # per progress message (130,000 of them at a million segments).
            order = self._order()
            candidates = sorted(
                (key for key in self.matches if key in order), key=order.__getitem__
            )
        shown = [
            key
            for key in candidates
            if (self.matches is None or key in self.matches)
            and (
                not needle
                or needle in key[1].casefold()
                or needle in self._title(key).casefold()
            )
        ]
        self.shown = shown
        self._measure()
        cursor = shown.index(current) if current in shown else 0
        self.row_list.set_count(len(shown), cursor=cursor)
        self.show_title()
        if shown and self.selected != current:
            # Another session is under the cursor now: say so, as a move would,
            # so that the transcript follows the list.
            self.row_list.post_message(RowList.Highlighted(self.row_list, cursor))

    def show_title(self) -> None:
        title = f"Sessions {self.row_list.position}"
        if len(self.shown) != len(self.keys):
            title += f" (of {len(self.keys):,})"
        if self.progress:
            title += f" · {self.progress}"
        self.query_one("#sessions-title", Label).update(printable(title), layout=False)

    def on_row_list_highlighted(self) -> None:
        self.show_title()

    def _order(self) -> dict[SessionKey, int]:
        """Each key's position in ``keys``, rebuilt when ``keys`` is replaced."""
        if self._positions[0] is not self.keys or self._positions[1] != len(self.keys):
            self._positions = (
                self.keys,
                len(self.keys),
                {key: n for n, key in enumerate(self.keys)},
            )
        return self._positions[2]

    def _title(self, key: SessionKey) -> str:
        summary = self.summaries.get(key)
        return summary.title if summary else ""

    def visible_keys(self, margin: int = 0) -> list[SessionKey]:
        """Keys on screen, and ``margin`` screenfuls above and below."""
        rows = self.row_list
        height = rows.size.height + 1
        start = int(rows.scroll_offset.y)
        return self.shown[
            max(0, start - margin * height) : start + (margin + 1) * height
        ]

    def _render_row(self, index: int, width: int) -> Text:
        if self._widths[0] != width:
            self._widths = (width, fit(self._columns, width - 2))
        widths = self._widths[1]
        key = self.shown[index]
        summary = self.summaries.get(key)
        badge = self.badges.get(key)
        text = Text()
        text.append("● " if badge else "  ", style=BADGE_STYLES.get(badge or "", ""))
        text.append(cell(printable(key[1]), widths["id"]), style="bold")
        if summary is None:
            text.append(" …", style="dim")
            return text
        when = (
            age(time.time() - summary.last_activity) if summary.last_activity else "-"
        )
        if "title" in widths:
            room = widths["title"]
            text.append(" ")
            if summary.pinned and room > len(PIN):
                text.append(PIN, style="bold yellow")
                room -= len(PIN)
            text.append(cell(printable(summary.title), room))
        for name, value in (("runs", f"{summary.runs}r"), ("age", when)):
            if name in widths:
                text.append(" " + cell(value, widths[name], right=True), style="dim")
        return text
