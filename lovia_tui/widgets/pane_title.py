"""A pane's one-line title."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import Label

from lovia_tui.core.formatting import printable
from lovia_tui.widgets.columns import cell

PART_CELLS = 48
"""Cells a title's part (an id, a count) keeps, cut in the middle: a stored
id of 100 KB pushed the entry count and position out of the one-line title."""
SEPARATOR = " · "


def fitted(text: str) -> str:
    """``text`` printable, each of its parts cut to at most :data:`PART_CELLS`."""
    return SEPARATOR.join(
        cell(part, min(PART_CELLS, cell_len(part)), middle=True)
        for part in printable(text).split(SEPARATOR)
    )


class PaneTitle(Label):
    """A pane's title: made printable (ids and titles in it are stored text,
    never markup), set without a layout pass (the CSS fixes its height) and
    only when it changes: a title set again unchanged still cost a frame,
    and a frame just drawn delays the next key press's by up to one."""

    def __init__(self, text: str, **kwargs) -> None:
        super().__init__(fitted(text), markup=False, classes="pane-title", **kwargs)

    def show(self, text: str) -> None:
        text = fitted(text)
        if text != self.content:
            self.update(text, layout=False)
