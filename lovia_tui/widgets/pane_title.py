"""A pane's one-line title."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import Label

from lovia_tui.core.formatting import printable
from lovia_tui.widgets.columns import cell

PART_CELLS = 48
"""Cells a title's part (an id, a count) keeps while the title's width is not
known yet (before its first layout), cut in the middle: a stored id of 100 KB
pushed the entry count and position out of the one-line title."""
PART_CHARS = 1_000
"""Characters kept from each end of a part before it is measured: a 100 KB id
is never measured whole, at each cursor move; no terminal is that wide."""
PART_LEAST = 24
"""Cells a part wider than this is cut to at the least, in the middle (an id
still tells itself apart by its start and end); narrower parts (counts, the
cursor's position) are never cut in the middle."""
SEPARATOR = " · "


def fitted(text: str, width: int | None = None) -> str:
    """``text`` printable, in at most ``width`` cells where it can be: the
    widest parts (ids) are cut in the middle first, to no fewer than
    :data:`PART_LEAST` cells each, so the counts after them stay; a title
    still too wide ends in "…" at the pane's edge (its CSS). Without a
    ``width`` each part is cut to :data:`PART_CELLS`."""
    parts = [printable(_ends(part)) for part in text.split(SEPARATOR)]
    if width is None:
        return SEPARATOR.join(
            cell(part, min(PART_CELLS, cell_len(part)), middle=True) for part in parts
        )
    cells = [cell_len(part) for part in parts]
    excess = sum(cells) + len(SEPARATOR) * (len(parts) - 1) - width
    while excess > 0:  # bounded: each pass cuts a part to at least the floor
        widest = max(range(len(parts)), key=cells.__getitem__)
        if cells[widest] <= PART_LEAST:
            break
        keep = max(PART_LEAST, cells[widest] - excess)
        excess -= cells[widest] - keep
        cells[widest] = keep
        parts[widest] = cell(parts[widest], keep, middle=True)
    return SEPARATOR.join(parts)


def _ends(part: str) -> str:
    if len(part) <= 2 * PART_CHARS:
        return part
    return part[:PART_CHARS] + "…" + part[-PART_CHARS:]


class PaneTitle(Label):
    """A pane's title: made printable (ids and titles in it are stored text,
    never markup), fitted to the pane's width (again when it changes), set
    without a layout pass (the CSS fixes its height) and only when it
    changes: a title set again unchanged still cost a frame, and a frame
    just drawn delays the next key press's by up to one."""

    def __init__(self, text: str, **kwargs) -> None:
        super().__init__(fitted(text), markup=False, classes="pane-title", **kwargs)
        self._text = text

    def show(self, text: str) -> None:
        self._text = text
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        width = self.content_region.width
        text = fitted(self._text, width or None)
        if text != self.content:
            self.update(text, layout=False)
