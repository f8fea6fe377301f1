"""The session transcript: segments, entries and the in-flight seam.

A Line API view: each row is one line until expanded, so a session of any
length costs only the rows on screen to draw, and no widget is mounted per
entry. Older segments arrive in batches as the user scrolls up. What is
loaded and how it lays out is the :class:`TranscriptWindow`'s; this widget
draws it, moves the cursor over it and asks for more at its ends.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip

from lovia_tui.view.kinds import RowKind
from lovia_tui.view.rows import ROW_COMPONENTS, Row
from lovia_tui.widgets.line_view import LineCache, LineView
from lovia_tui.widgets.transcript_window import TranscriptWindow


class Transcript(LineView, can_focus=True):
    """Rows of one session, newest at the bottom; Enter folds and unfolds."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "home", "Top", show=False),
        Binding("end", "end", "Bottom", show=False),
        Binding(
            "enter,space",
            "fold",
            "Fold/unfold",
            tooltip="Expand or fold the entry or run under the cursor",
        ),
    ]
    COMPONENT_CLASSES = {
        *ROW_COMPONENTS,
        "transcript--cursor",
        "transcript--partner",
        "transcript--match",
        "transcript--detail",
    }

    class LoadOlder(Message):
        """The user reached the top while older segments are not loaded."""

    class LoadNewer(Message):
        """The user reached the bottom while newer segments are not loaded."""

    class LoadStart(Message):
        """Home while older segments are not loaded: show the session's start."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.window = TranscriptWindow()
        self._strips = LineCache()
        self._needle = ""
        self.cursor = 0
        """The cursor's visible position (an index of ``window.visible``)."""
        self.new_below = 0
        self.loading_older = False
        self.loading_newer = False

    # ----- content -----

    @property
    def rows(self) -> list[Row]:
        """The rows loaded."""
        return self.window.rows

    def show(self, rows: list[Row], *, at_start: bool = False) -> None:
        """Replace the content (a new session); the newest entry is in view,
        or with ``at_start`` the first one (Home in a long session)."""
        self.window.replace(rows)
        self.loading_older = self.loading_newer = False
        self.new_below = 0
        self._relayout()
        if at_start:
            self.cursor = 0
            self.scroll_home(animate=False, immediate=True)
        else:
            self.cursor = max(0, len(self.window.visible) - 1)
            self.scroll_end(animate=False, immediate=True)
        self._announce()

    def prepend(self, rows: list[Row]) -> None:
        """Insert older rows above, keeping what the user looks at in place;
        beyond ``WINDOW`` rows the newest ones are let go (a "newer" row
        loads them again), so memory stays bounded however far one scrolls."""
        before = len(self.window.lines)
        current = self.current_row
        self.window.prepend(rows)
        self.loading_older = False
        self._relayout()
        added = len(self.window.lines) - before
        if current is not None and current.kind == RowKind.OLDER:
            # The cursor was on the "older" row (Home, or up at the top), which
            # this batch replaces: stay at the top, on the batch's first row.
            self.cursor = min(
                1 if rows and rows[0].kind == RowKind.OLDER else 0,
                len(self.window.visible) - 1,
            )
            self._scroll_to_cursor()
            return
        if current is not None:
            self.cursor = self._position_of(current)
            if self.current_row is not current:
                self.moved()
        self.scroll_to(y=self.scroll_offset.y + added, animate=False, immediate=True)

    def _position_of(self, row: Row) -> int:
        """The visible position of ``row``; if the window let it go with the
        newest rows (scrolled up past ``WINDOW`` rows, the cursor left below),
        of the newest row kept, above the "newer" row that loads it again."""
        at = next((n for n, kept in enumerate(self.rows) if kept is row), None)
        shown = None if at is None else self.window.visible_position_of(at)
        if shown is not None:
            return shown
        last = len(self.window.visible) - 1
        if last > 0 and self.window.row_at(last).kind == RowKind.NEWER:
            last -= 1
        return max(0, last)

    def append_newer(self, rows: list[Row]) -> None:
        """Put newer rows below (in place of the "newer" row), keeping what
        the user looks at in place; beyond ``WINDOW`` rows the oldest
        ones are let go (an "older" row loads them again)."""
        current = self.current_row
        top_line = self.window.first_line_of(self.cursor)
        offset_in_view = top_line - self.scroll_offset.y
        self.window.append(rows)
        self.loading_newer = False
        self._relayout()
        if current is not None and current.kind == RowKind.NEWER:
            # As prepend: the batch replaces the row the cursor was on.
            first = next(
                (n for n, row in enumerate(self.rows) if row in rows),
                len(self.rows) - 1,
            )
            current = self.rows[first]
        if current is not None and current in self.rows:
            self.cursor = self.window.visible.index(self.rows.index(current))
            self.scroll_to(
                y=max(0, self.window.first_line_of(self.cursor) - offset_in_view),
                animate=False,
                immediate=True,
            )
        self._announce()

    def extend(self, rows: list[Row]) -> None:
        """Append rows at the bottom (follow mode), keeping the newest in view
        unless the user scrolled up; then count them for a "new entries" marker."""
        at_bottom = self.scroll_offset.y >= self.max_scroll_y - 1
        on_last = self.cursor >= len(self.window.visible) - 1
        self.window.extend(rows)
        self._relayout()
        if at_bottom:
            if on_last:
                self.cursor = len(self.window.visible) - 1
            self.scroll_end(animate=False, immediate=True)
        else:
            self.new_below += sum(1 for row in rows if row.kind == RowKind.ENTRY)
        self.refresh()

    @property
    def shown_rows(self) -> list[int]:
        """Positions in :attr:`rows` of the rows shown (not folded away), in order."""
        return list(self.window.visible)

    @property
    def needle(self) -> str:
        """The text highlighted wherever it shows (see :meth:`set_needle`)."""
        return self._needle

    def shows_raw(self, key: str) -> bool:
        """Whether the row with ``key`` shows its stored JSON (``r``)."""
        return key in self.window.raw

    def set_needle(self, needle: str) -> None:
        """Highlight ``needle`` (case-insensitively) wherever it shows."""
        if needle == self._needle:
            return  # a search's progress repeats it: no repaint
        self._needle = needle
        self.refresh()

    @property
    def position(self) -> str:
        """ "cursor/rows" for the pane title: the transcript draws no scrollbar."""
        visible = self.window.visible
        return f"{self.cursor + 1:,}/{len(visible):,}" if visible else "0"

    @property
    def current_row(self) -> Row | None:
        visible = self.window.visible
        if not visible:
            return None
        return self.window.row_at(min(self.cursor, len(visible) - 1))

    def select_key(self, key: str) -> bool:
        """Put the cursor on the row with ``key`` (unfolding its segment)."""
        for position, row in enumerate(self.rows):
            if row.key == key:
                self.window.unfold_segment_of(row)
                self._relayout()
                self.cursor = self.window.visible.index(position)
                self._scroll_to_cursor(center=True)
                self._announce()
                return True
        return False

    # ----- layout -----

    def _relayout(self) -> None:
        width = max(20, self.scrollable_content_region.width - 2)
        self.window.layout(width, self.app.console)
        self.set_virtual_height(len(self.window.lines))

    def on_resize(self) -> None:
        self._relayout()

    # ----- drawing -----

    def render_line(self, y: int) -> Strip:
        base, width = self.repaint_values
        window = self.window
        line_number = y + self.scroll_offset.y
        if line_number >= len(window.lines):
            return Strip.blank(width, base)
        visible_position, offset = window.lines[line_number]
        row = window.row_at(visible_position)
        if offset == 0:
            text = window.summary(row)
            style = base + self.component(row.component)
        else:
            details = window.details_for(row, max(20, width - 2), self.app.console)
            text = (
                Text("  ") + details[offset - 1]
                if offset - 1 < len(details)
                else Text("")
            )
            style = base + self.component("transcript--detail")
        if self._needle:
            text = text.copy()
            text.highlight_words(
                [self._needle],
                self.component("transcript--match"),
                case_sensitive=False,
            )
        if visible_position == self.cursor and offset == 0:
            cursor = self.component("transcript--cursor", partial=True)
            style = style + (cursor if self.has_focus else Style(underline=True))
        elif self._is_partner(visible_position):
            style = style + self.component("transcript--partner", partial=True)
        return self._strips.strip(text, width, style, self.app.console)

    def _is_partner(self, visible_position: int) -> bool:
        current = self.current_row
        return (
            current is not None
            and current.partner is not None
            and self.window.visible[visible_position] == current.partner
        )

    # ----- moving -----

    def _partner_position(self) -> int | None:
        current = self.current_row
        if current is None or current.partner is None:
            return None
        return self.window.visible_position_of(current.partner)

    def _scroll_to_cursor(self, *, center: bool = False) -> None:
        top = self.window.first_line_of(self.cursor)
        height = self.window.line_count_of(self.cursor)
        self.scroll_to_region(
            Region(0, top, 1, min(height, max(1, self.size.height))),
            animate=False,
            center=center,
            immediate=True,
        )

    def _announce(self) -> None:
        self.moved()
        if self.cursor == 0 and self.rows and self.rows[0].kind == RowKind.OLDER:
            self._load_older()
        current = self.current_row
        if current is not None and current.kind == RowKind.NEWER:
            self._load_newer()

    def _load_older(self) -> None:
        if not self.loading_older:
            self.loading_older = True
            self.post_message(self.LoadOlder())

    def _load_newer(self) -> None:
        if not self.loading_newer:
            self.loading_newer = True
            self.post_message(self.LoadNewer())

    def move_cursor(self, position: int) -> None:
        visible = self.window.visible
        if not visible:
            return
        changed = {self.cursor, self._partner_position()}
        scrolled_from, new_below = self.scroll_offset, self.new_below
        self.cursor = max(0, min(position, len(visible) - 1))
        if self.cursor == len(visible) - 1:
            self.new_below = 0
        self._scroll_to_cursor()
        if self.scroll_offset == scrolled_from and self.new_below == new_below:
            # Only the rows whose highlight changed (cursor and partner, before
            # and after) are drawn again, not the whole view.
            for visible_position in {
                position
                for position in (*changed, self.cursor, self._partner_position())
                if position is not None
            }:
                self.refresh_lines(
                    self.window.first_line_of(visible_position),
                    self.window.line_count_of(visible_position),
                )
        else:
            self.refresh()
        self._announce()

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * max(1, self.size.height - 2))

    def action_home(self) -> None:
        """The start of the session: loaded from its first run if need be,
        not the "older runs" row at the top of what is loaded."""
        if self.rows and self.rows[0].kind == RowKind.OLDER:
            self.loading_older = True  # what scrolling up would load is replaced
            self.post_message(self.LoadStart())
        self.move_cursor(0)

    def action_end(self) -> None:
        self.move_cursor(len(self.window.visible) - 1)

    def action_fold(self) -> None:
        row = self.current_row
        if row is None:
            return
        if row.kind == RowKind.OLDER:
            self._load_older()
            return
        if row.kind == RowKind.NEWER:
            self._load_newer()
            return
        if row.kind == RowKind.HELD_BACK and row.segment and row.segment.uncounted:
            self.notify("This run is being counted: its last entries show when it is")
            return
        if row.kind == RowKind.HELD_BACK:
            self.notify(
                f"{row.older:,} entries of this run are not held in the app: "
                "x exports the session whole, lovia-tui show prints it"
            )
            return
        self.window.fold(row)
        current = self.window.visible[self.cursor]
        self._relayout()
        self.cursor = self.window.visible.index(current)
        self._scroll_to_cursor()

    def action_raw(self) -> None:
        row = self.current_row
        if row is None or not row.has_raw:
            return
        self.window.toggle_raw(row)
        self._relayout()
        self._scroll_to_cursor()

    def on_click(self, event: events.Click) -> None:
        line = event.y + self.scroll_offset.y
        if 0 <= line < len(self.window.lines):
            self.move_cursor(self.window.lines[line][0])
            if event.chain == 2:
                self.action_fold()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new <= 0 and self.rows and self.rows[0].kind == RowKind.OLDER:
            self._load_older()
        if new >= self.max_scroll_y - 1:
            self.new_below = 0
            if self.rows and self.rows[-1].kind == RowKind.NEWER:
                self._load_newer()
