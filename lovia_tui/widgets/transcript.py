"""The session transcript: segments, entries and the in-flight seam.

A Line API view: each row is one line until expanded, so a session of any
length costs only the rows on screen to draw, and no widget is mounted per
entry. Older segments arrive in batches as the user scrolls up.
"""

from __future__ import annotations

from bisect import bisect_left

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip

from lovia_tui.core.models import RunInfo
from lovia_tui.view.kinds import RowKind
from lovia_tui.view.rows import (
    Row,
    index_text,
    keep_newest,
    keep_oldest,
    pair_tool_calls,
    partner_text,
)
from lovia_tui.widgets.line_view import LineCache, LineView
from lovia_tui.widgets.transcript_rows import detail_lines, summary_line

SUMMARIES = 4096
"""Summary lines remembered (a few screens of rows in every state)."""
WINDOW = 600
"""Most segments the view keeps loaded (~20 batches): scrolling a session of
thousands of runs end to end holds this many at a time, not all of them."""


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
        "transcript--cursor",
        "transcript--partner",
        "transcript--match",
        "transcript--segment",
        "transcript--seam",
        "transcript--older",
        "transcript--newer",
        "transcript--unreadable",
        "transcript--user",
        "transcript--system",
        "transcript--assistant-text",
        "transcript--reasoning",
        "transcript--tool-call",
        "transcript--tool-result",
        "transcript--error",
        "transcript--detail",
    }

    class RowHighlighted(Message):
        """The cursor is on ``row``."""

        def __init__(self, row: Row | None) -> None:
            super().__init__()
            self.row = row

    class LoadOlder(Message):
        """The user reached the top while older segments are not loaded."""

    class LoadNewer(Message):
        """The user reached the bottom while newer segments are not loaded."""

    class LoadStart(Message):
        """Home while older segments are not loaded: show the session's start."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: list[Row] = []
        self._visible: list[int] = []
        self._lines: list[tuple[int, int]] = []
        self._details: dict[str, list[Text]] = {}
        self._strips = LineCache()
        self._summaries: dict[tuple, Text] = {}
        self._expanded: dict[str, bool] = {}
        self._collapsed: set[str] = set()
        self._raw: set[str] = set()
        self._needle = ""
        self.cursor = 0
        self.entries = 0
        self.new_below = 0
        self.loading_older = False
        self.loading_newer = False

    # ----- content -----

    def show(self, rows: list[Row], *, at_start: bool = False) -> None:
        """Replace the content (a new session); the newest entry is in view,
        or with ``at_start`` the first one (Home in a long session)."""
        self.rows = rows
        self.loading_older = self.loading_newer = False
        self._summaries.clear()  # a reload after a trim has new text under the same keys
        self._expanded.clear()
        self._collapsed.clear()
        self._raw.clear()
        self._details.clear()
        self.new_below = 0
        self._relayout()
        if at_start:
            self.cursor = 0
            self.scroll_home(animate=False, immediate=True)
        else:
            self.cursor = max(0, len(self._visible) - 1)
            self.scroll_end(animate=False, immediate=True)
        self._announce()

    def prepend(self, rows: list[Row]) -> None:
        """Insert older rows above, keeping what the user looks at in place;
        beyond ``WINDOW`` segments the newest ones are let go (a "newer" row
        loads them again), so memory stays bounded however far one scrolls."""
        before = len(self._lines)
        current = self.current_row
        self.rows = keep_oldest(
            rows + [row for row in self.rows if row.kind != RowKind.OLDER], WINDOW
        )
        self.loading_older = False
        self._forget_dropped()
        self._relayout()
        added = len(self._lines) - before
        if current is not None and current.kind == RowKind.OLDER:
            # The cursor was on the "older" row (Home, or up at the top), which
            # this batch replaces: stay at the top, on the batch's first row.
            self.cursor = min(
                1 if rows and rows[0].kind == RowKind.OLDER else 0,
                len(self._visible) - 1,
            )
            self._scroll_to_cursor()
            return
        if current is not None:
            self.cursor = self._visible.index(self.rows.index(current))
        self.scroll_to(y=self.scroll_offset.y + added, animate=False, immediate=True)

    def append_newer(self, rows: list[Row]) -> None:
        """Put newer rows below (in place of the "newer" row), keeping what
        the user looks at in place; beyond ``WINDOW`` segments the oldest
        ones are let go (an "older" row loads them again)."""
        current = self.current_row
        top_line = self._first_line_of(self.cursor)
        offset_in_view = top_line - self.scroll_offset.y
        self.rows = keep_newest(
            [row for row in self.rows if row.kind != RowKind.NEWER] + rows, WINDOW
        )
        self.loading_newer = False
        self._forget_dropped()
        self._relayout()
        if current is not None and current.kind == RowKind.NEWER:
            # As prepend: the batch replaces the row the cursor was on.
            first = next(
                (n for n, row in enumerate(self.rows) if row in rows),
                len(self.rows) - 1,
            )
            current = self.rows[first]
        if current is not None and current in self.rows:
            self.cursor = self._visible.index(self.rows.index(current))
            self.scroll_to(
                y=max(0, self._first_line_of(self.cursor) - offset_in_view),
                animate=False,
                immediate=True,
            )
        self._announce()

    def _forget_dropped(self) -> None:
        """Fold, unfold and raw states of rows no longer loaded."""
        keys = {row.key for row in self.rows}
        segments = {row.fold for row in self.rows}
        self._expanded = {
            key: value for key, value in self._expanded.items() if key in keys
        }
        self._raw &= keys
        self._collapsed &= segments
        self._details = {
            key: value
            for key, value in self._details.items()
            if key.rsplit(":", 3)[0] in keys
        }

    def extend(self, rows: list[Row]) -> None:
        """Append rows at the bottom (follow mode), keeping the newest in view
        unless the user scrolled up; then count them for a "new entries" marker."""
        at_bottom = self.scroll_offset.y >= self.max_scroll_y - 1
        on_last = self.cursor >= len(self._visible) - 1
        self.rows = self.rows + rows
        self._relayout()
        if at_bottom:
            if on_last:
                self.cursor = len(self._visible) - 1
            self.scroll_end(animate=False, immediate=True)
        else:
            self.new_below += sum(1 for row in rows if row.kind == RowKind.ENTRY)
        self.refresh()

    def seam_run(self, run_id: str) -> RunInfo | None:
        """The in-flight run shown behind a seam, if ``run_id`` is one."""
        for row in self.rows:
            if row.kind == RowKind.SEAM and row.run and row.run.run_id == run_id:
                return row.run
        return None

    def entries_of_run(self, run_id: str) -> int:
        """How many of an in-flight run's own entries are shown."""
        return sum(
            1
            for row in self.rows
            if row.kind == RowKind.ENTRY and row.run and row.run.run_id == run_id
        )

    def set_seam_statuses(self, statuses: dict[str, str]) -> None:
        """Seams say their run's status as the live tail last saw it."""
        changed = False
        for row in self.rows:
            if row.kind == RowKind.SEAM and row.run and row.run.run_id in statuses:
                row.status, changed = statuses[row.run.run_id], True
        if changed:
            self.refresh()

    def set_needle(self, needle: str) -> None:
        """Highlight ``needle`` (case-insensitively) wherever it shows."""
        if needle == self._needle:
            return  # a search's progress repeats it: no repaint
        self._needle = needle
        self.refresh()

    @property
    def position(self) -> str:
        """ "cursor/rows" for the pane title: the transcript draws no scrollbar."""
        return f"{self.cursor + 1:,}/{len(self._visible):,}" if self._visible else "0"

    @property
    def shown_rows(self) -> list[int]:
        """Positions in :attr:`rows` of the rows shown (not folded away), in order."""
        return list(self._visible)

    @property
    def needle(self) -> str:
        """The text highlighted wherever it shows (see :meth:`set_needle`)."""
        return self._needle

    def shows_raw(self, key: str) -> bool:
        """Whether the row with ``key`` shows its stored JSON (``r``)."""
        return key in self._raw

    @property
    def current_row(self) -> Row | None:
        if not self._visible:
            return None
        return self.rows[self._visible[min(self.cursor, len(self._visible) - 1)]]

    def select_key(self, key: str) -> bool:
        """Put the cursor on the row with ``key`` (unfolding its segment)."""
        for position, row in enumerate(self.rows):
            if row.key == key:
                segment = row.fold
                self._collapsed.discard(segment)
                self._relayout()
                self.cursor = self._visible.index(position)
                self._scroll_to_cursor(center=True)
                self._announce()
                return True
        return False

    # ----- layout -----

    def _relayout(self) -> None:
        pair_tool_calls(self.rows)
        self._visible = [
            position
            for position, row in enumerate(self.rows)
            if row.fold not in self._collapsed or row.kind != RowKind.ENTRY
        ]
        width = max(20, self.scrollable_content_region.width - 2)
        lines: list[tuple[int, int]] = []
        for visible_position, position in enumerate(self._visible):
            row = self.rows[position]
            lines.append((visible_position, 0))
            if row.key in self._expanded and row.kind == RowKind.ENTRY:
                details = self._details_for(row, width)
                lines.extend(
                    (visible_position, offset + 1) for offset in range(len(details))
                )
        self._lines = lines
        self.entries = sum(1 for row in self.rows if row.kind == RowKind.ENTRY)
        self.set_virtual_height(len(lines))

    def _details_for(self, row: Row, width: int) -> list[Text]:
        key = f"{row.key}:{width}:{row.key in self._raw}:{self._expanded.get(row.key)}"
        if key not in self._details:
            wrapped: list[Text] = []
            for line in detail_lines(
                row, row.key in self._raw, bool(self._expanded.get(row.key))
            ):
                wrapped.extend(line.wrap(self.app.console, width) or [Text("")])
            self._details[key] = wrapped
        return self._details[key]

    def on_resize(self) -> None:
        self._relayout()

    # ----- drawing -----

    def render_line(self, y: int) -> Strip:
        base, width = self.repaint_values
        line_number = y + self.scroll_offset.y
        if line_number >= len(self._lines):
            return Strip.blank(width, base)
        visible_position, offset = self._lines[line_number]
        row = self.rows[self._visible[visible_position]]
        if offset == 0:
            text = self._summary(
                row,
                row.key in self._expanded
                or (row.kind == RowKind.SEGMENT and row.fold not in self._collapsed),
            )
            style = base + self.component(row.component)
        else:
            details = self._details_for(row, max(20, width - 2))
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

    def _summary(self, row: Row, expanded: bool) -> Text:
        """A row's summary line, remembered: building it measures and cuts the
        entry's text (a 100 KB output's size included) on every repaint."""
        key = (
            row.key,
            expanded,
            index_text(row),
            partner_text(row, self.rows, ""),
            row.status,
            row.running,
            row.older,
        )
        text = self._summaries.get(key)
        if text is None:
            if len(self._summaries) >= SUMMARIES:
                self._summaries.clear()
            text = self._summaries[key] = summary_line(row, self.rows, expanded)
        return text

    def _is_partner(self, visible_position: int) -> bool:
        current = self.current_row
        return (
            current is not None
            and current.partner is not None
            and self._visible[visible_position] == current.partner
        )

    # ----- moving -----

    def _first_line_of(self, visible_position: int) -> int:
        # _lines is sorted by (visible position, offset): bisect, never scan,
        # so a key press costs the same in a session of any length.
        number = bisect_left(self._lines, (visible_position, 0))
        return (
            number
            if number < len(self._lines)
            and self._lines[number] == (visible_position, 0)
            else 0
        )

    def _line_count_of(self, visible_position: int) -> int:
        return max(
            1,
            bisect_left(self._lines, (visible_position + 1, 0))
            - self._first_line_of(visible_position),
        )

    def _partner_position(self) -> int | None:
        current = self.current_row
        if current is None or current.partner is None:
            return None
        position = bisect_left(self._visible, current.partner)
        return (
            position
            if position < len(self._visible)
            and self._visible[position] == current.partner
            else None
        )

    def _scroll_to_cursor(self, *, center: bool = False) -> None:
        top = self._first_line_of(self.cursor)
        height = self._line_count_of(self.cursor)
        self.scroll_to_region(
            Region(0, top, 1, min(height, max(1, self.size.height))),
            animate=False,
            center=center,
            immediate=True,
        )

    def _announce(self) -> None:
        self.post_message(self.RowHighlighted(self.current_row))
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
        if not self._visible:
            return
        changed = {self.cursor, self._partner_position()}
        scrolled_from, new_below = self.scroll_offset, self.new_below
        self.cursor = max(0, min(position, len(self._visible) - 1))
        if self.cursor == len(self._visible) - 1:
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
                    self._first_line_of(visible_position),
                    self._line_count_of(visible_position),
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
        self.move_cursor(len(self._visible) - 1)

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
        if row.kind in (RowKind.SEGMENT, RowKind.SEAM):
            key = row.key
            self._collapsed.symmetric_difference_update({key})
        elif row.kind == RowKind.ENTRY:
            state = self._expanded.get(row.key)
            if state is None:
                self._expanded[row.key] = False
            elif state is False and detail_lines(
                row, row.key in self._raw, False
            ) != detail_lines(row, row.key in self._raw, True):
                self._expanded[row.key] = True
            else:
                del self._expanded[row.key]
        current = self._visible[self.cursor]
        self._relayout()
        self.cursor = self._visible.index(current)
        self._scroll_to_cursor()

    def action_raw(self) -> None:
        row = self.current_row
        if row is None or row.kind != RowKind.ENTRY:
            return
        self._raw.symmetric_difference_update({row.key})
        self._expanded.setdefault(row.key, False)
        self._relayout()
        self._scroll_to_cursor()

    def on_click(self, event: events.Click) -> None:
        line = event.y + self.scroll_offset.y
        if 0 <= line < len(self._lines):
            self.move_cursor(self._lines[line][0])
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
