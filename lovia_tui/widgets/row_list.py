"""A cursor list that renders only the rows on screen (the Line API).

The built-in DataTable builds a widget model per row (71 s to mount a million);
this list keeps a plain sequence and asks for a row's text only when the row
is visible, so its cost is the screen height, not the data size.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip

from lovia_tui.widgets.line_view import LineCache, LineView

RowRenderer = Callable[[int, int], Text]
DRAWN = 1024
"""Rows whose drawn text is remembered for ``refresh_changed`` (a few screens)."""


class RowList(LineView, can_focus=True):
    """A virtual list of ``count`` rows drawn by ``render_row(index, width)``."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "jump(0)", "First", show=False),
        Binding("end,G", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]
    COMPONENT_CLASSES = {
        "row-list--cursor",
        "row-list--cursor-blurred",
        "row-list--marked",
        "row-list--empty",
    }

    cursor: reactive[int] = reactive(0, always_update=True, init=False, repaint=False)
    """The highlighted row; posts :class:`Highlighted` when it moves."""

    class Highlighted(Message):
        """The cursor moved to ``index``."""

        def __init__(self, row_list: RowList, index: int) -> None:
            super().__init__()
            self.row_list = row_list
            self.index = index

        @property
        def control(self) -> RowList:
            return self.row_list

    class Selected(Highlighted):
        """Enter (or a click) chose the row at ``index``."""

    def __init__(self, render_row: RowRenderer, *, empty: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self._render_row = render_row
        self._count = 0
        self._marked: Callable[[int], bool] = lambda index: False
        self._lines = LineCache()
        self._drawn: dict[int, tuple[str, list]] = {}
        self.empty_text = empty

    @property
    def count(self) -> int:
        return self._count

    @property
    def position(self) -> str:
        """ "cursor/count" for a pane title: the list draws no scrollbar."""
        return f"{self.cursor + 1:,}/{self._count:,}" if self._count else "0"

    def set_count(self, count: int, *, cursor: int | None = None) -> None:
        """Change the number of rows, keeping the cursor in range."""
        self._count = count
        self.set_virtual_height(count)
        target = self.cursor if cursor is None else cursor
        self.set_reactive(RowList.cursor, max(0, min(target, count - 1)))

    def set_marked(self, predicate: Callable[[int], bool]) -> None:
        """Rows for which ``predicate`` holds are drawn marked (e.g. related rows)."""
        self._marked = predicate
        self.refresh()

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, self._count - 1))

    def watch_cursor(self, previous: int, index: int) -> None:
        scrolled_from = self.scroll_offset
        self.scroll_to_region(Region(0, index, 1, 1), animate=False, immediate=True)
        if self.scroll_offset == scrolled_from:
            # Only the two rows whose highlight changed are drawn again: a full
            # repaint per key press costs the whole list's height.
            self.refresh_line(previous)
            self.refresh_line(index)
        else:
            self.refresh()
        self.moved()
        if self._count:
            self.post_message(self.Highlighted(self, index))

    def action_cursor(self, delta: int) -> None:
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(1, self.scrollable_content_region.height - 1)

    def action_jump(self, index: int) -> None:
        self.cursor = index if index >= 0 else self._count - 1

    def action_select(self) -> None:
        if self._count:
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        index = event.y + self.scroll_offset.y
        if 0 <= index < self._count:
            self.cursor = index
            if event.chain == 2:
                self.action_select()

    def render_line(self, y: int) -> Strip:
        base, width = self.repaint_values
        index = y + self.scroll_offset.y
        if not self._count:
            if y == 0 and self.empty_text:
                style = self.component("row-list--empty")
                return Strip(
                    [Segment(self.empty_text[:width], style)]
                ).adjust_cell_length(width, base)
            return Strip.blank(width, base)
        if index >= self._count:
            return Strip.blank(width, base)
        style = base
        if index == self.cursor:
            cursor_class = (
                "row-list--cursor" if self.has_focus else "row-list--cursor-blurred"
            )
            style = base + self.component(cursor_class)
        elif self._marked(index):
            style = base + self.component("row-list--marked")
        text = self._render_row(index, width)
        if len(self._drawn) >= DRAWN:
            self._drawn.clear()  # only rows on screen matter: a missing one is drawn again
        self._drawn[index] = (text.plain, text.spans)
        return self._lines.strip(text, width, style, self.app.console)

    def refresh_changed(self) -> None:
        """Repaint only the rows on screen whose text changed since drawn (ages
        and staleness move with time): a full repaint a second cost frames."""
        _, width = self.repaint_values
        top = int(self.scroll_offset.y)
        for index in range(top, min(self._count, top + self.size.height)):
            text = self._render_row(index, width)
            if self._drawn.get(index) != (text.plain, text.spans):
                self.refresh_line(index)
