"""What the transcript holds, apart from how it is drawn: the rows loaded (at
most ``WINDOW`` rows), which are folded, expanded or raw, and the lines
each one takes at a width.

:class:`~lovia_tui.widgets.transcript.Transcript` draws it and moves its
cursor over it. Lookups bisect the sorted line list, never scan it, so a key
press costs the same in a session of any length.
"""

from __future__ import annotations

from bisect import bisect_left

from rich.console import Console
from rich.text import Text

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
from lovia_tui.widgets.transcript_rows import detail_lines, summary_line

WINDOW = 2_000
"""Most rows the view keeps loaded, in whole segments (one at least): scrolling
a session of thousands of runs end to end holds this many at a time, not all
of them. Rows, not segments: a window of 600 segments held 4,539 rows of one
file and 7,201 of another of the same bytes (its entries parsed: ~4 KB a row)."""
SUMMARIES = WINDOW
"""Summary lines remembered: about one per row loaded. Twice that (4,096)
held 4 MB more at the end of scrolling a 5,000-run session to its start
(uniform 1M: 153.0 MB against 148.6 with 1,024)."""


class TranscriptWindow:
    """The loaded rows and their layout."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.visible: list[int] = []
        """Positions in ``rows`` of the rows shown (a folded segment hides its entries)."""
        self.lines: list[tuple[int, int]] = []
        """Each line: (visible position, offset: 0 the summary, then details)."""
        self.entries = 0
        self.expanded: dict[str, bool] = {}
        """Entries unfolded: False the first detail level, True the whole entry."""
        self.collapsed: set[str] = set()
        self.raw: set[str] = set()
        self._details: dict[str, list[Text]] = {}
        self._summaries: dict[tuple, Text] = {}

    # ----- what is loaded -----

    def replace(self, rows: list[Row]) -> None:
        """Another session (or a reload): every fold and raw state forgotten."""
        self.rows = rows
        self.expanded.clear()
        self.collapsed.clear()
        self.raw.clear()
        self._details.clear()
        self._summaries.clear()  # a reload after a trim has new text under the same keys

    def prepend(self, rows: list[Row]) -> None:
        """Older rows above (in place of the "older" row); beyond ``WINDOW`` rows
        segments the newest are let go (a "newer" row loads them again)."""
        kept = [row for row in self.rows if row.kind != RowKind.OLDER]
        self.rows = keep_oldest(rows + kept, WINDOW)
        self._forget_dropped()

    def append(self, rows: list[Row]) -> None:
        """Newer rows below (in place of the "newer" row); beyond ``WINDOW`` rows
        segments the oldest are let go (an "older" row loads them again)."""
        kept = [row for row in self.rows if row.kind != RowKind.NEWER]
        self.rows = keep_newest(kept + rows, WINDOW)
        self._forget_dropped()

    def extend(self, rows: list[Row]) -> None:
        """A followed run's new entries, at the bottom."""
        self.rows = self.rows + rows

    def _forget_dropped(self) -> None:
        """Fold, unfold and raw states of rows no longer loaded."""
        keys = {row.key for row in self.rows}
        segments = {row.fold for row in self.rows}
        self.expanded = {
            key: value for key, value in self.expanded.items() if key in keys
        }
        self.raw &= keys
        self.collapsed &= segments
        self._details = {
            key: value
            for key, value in self._details.items()
            if key.rsplit(":", 3)[0] in keys
        }

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

    def set_seam_statuses(self, statuses: dict[str, str]) -> bool:
        """Seams take their run's status; whether any changed."""
        changed = False
        for row in self.rows:
            if row.kind == RowKind.SEAM and row.run and row.run.run_id in statuses:
                row.status, changed = statuses[row.run.run_id], True
        return changed

    # ----- folding -----

    def is_open(self, row: Row) -> bool:
        """An entry unfolded, or a segment whose entries show."""
        return row.key in self.expanded or (
            row.kind == RowKind.SEGMENT and row.fold not in self.collapsed
        )

    def fold(self, row: Row) -> None:
        """Enter on ``row``: a segment or seam folds; an entry unfolds a level,
        then whole (if that shows more), then folds again."""
        if row.kind in (RowKind.SEGMENT, RowKind.SEAM):
            self.collapsed.symmetric_difference_update({row.key})
        elif row.unfolds:
            raw = row.key in self.raw
            state = self.expanded.get(row.key)
            if state is None:
                self.expanded[row.key] = False
            elif state is False and detail_lines(row, raw, False) != detail_lines(
                row, raw, True
            ):
                self.expanded[row.key] = True
            else:
                del self.expanded[row.key]

    def toggle_raw(self, row: Row) -> None:
        """``r``: what is stored behind the row, or its usual view again (a
        segment header shows its meta below it, an entry unfolds to its JSON)."""
        self.raw.symmetric_difference_update({row.key})
        if row.unfolds:
            self.expanded.setdefault(row.key, False)

    def shows_details(self, row: Row) -> bool:
        """Whether lines show below the row's summary line."""
        return (row.unfolds and row.key in self.expanded) or (
            row.kind == RowKind.SEGMENT and row.key in self.raw
        )

    def unfold_segment_of(self, row: Row) -> None:
        self.collapsed.discard(row.fold)

    # ----- layout -----

    def layout(self, width: int, console: Console) -> None:
        """The visible rows and the lines each takes at ``width``."""
        pair_tool_calls(self.rows)
        self.visible = [
            position
            for position, row in enumerate(self.rows)
            if row.fold not in self.collapsed
            or row.kind not in (RowKind.ENTRY, RowKind.HELD_BACK, RowKind.NOTICE)
        ]
        lines: list[tuple[int, int]] = []
        for visible_position, position in enumerate(self.visible):
            row = self.rows[position]
            lines.append((visible_position, 0))
            if self.shows_details(row):
                details = self.details_for(row, width, console)
                lines.extend(
                    (visible_position, offset + 1) for offset in range(len(details))
                )
        self.lines = lines
        self.entries = sum(1 for row in self.rows if row.kind == RowKind.ENTRY)

    def summary(self, row: Row) -> Text:
        """A row's summary line, remembered: building it measures and cuts the
        entry's text (a 100 KB output's size included) on every repaint."""
        expanded = self.is_open(row)
        key = (
            row.key,
            expanded,
            index_text(row),
            partner_text(row, self.rows, ""),
            row.status,
            row.running,
            row.result_held_back,
            row.older,
        )
        text = self._summaries.get(key)
        if text is None:
            if len(self._summaries) >= SUMMARIES:
                self._summaries.clear()
            text = self._summaries[key] = summary_line(row, self.rows, expanded)
        return text

    def details_for(self, row: Row, width: int, console: Console) -> list[Text]:
        """An unfolded entry's detail lines, wrapped at ``width`` (remembered)."""
        raw, full = row.key in self.raw, self.expanded.get(row.key)
        key = f"{row.key}:{width}:{raw}:{full}"
        if key not in self._details:
            wrapped: list[Text] = []
            for line in detail_lines(row, raw, bool(full)):
                wrapped.extend(line.wrap(console, width) or [Text("")])
            self._details[key] = wrapped
        return self._details[key]

    def row_at(self, visible_position: int) -> Row:
        return self.rows[self.visible[visible_position]]

    def first_line_of(self, visible_position: int) -> int:
        number = bisect_left(self.lines, (visible_position, 0))
        return (
            number
            if number < len(self.lines) and self.lines[number] == (visible_position, 0)
            else 0
        )

    def line_count_of(self, visible_position: int) -> int:
        return max(
            1,
            bisect_left(self.lines, (visible_position + 1, 0))
            - self.first_line_of(visible_position),
        )

    def visible_position_of(self, position: int) -> int | None:
        """Where the row at ``position`` in ``rows`` shows (None: folded away)."""
        found = bisect_left(self.visible, position)
        return (
            found
            if found < len(self.visible) and self.visible[found] == position
            else None
        )
