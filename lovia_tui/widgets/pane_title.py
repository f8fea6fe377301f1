"""A pane's one-line title."""

from __future__ import annotations

from textual.widgets import Label

from lovia_tui.core.formatting import printable


class PaneTitle(Label):
    """A pane's title: made printable (ids and titles in it are stored text,
    never markup), set without a layout pass (the CSS fixes its height) and
    only when it changes: a title set again unchanged still cost a frame,
    and a frame just drawn delays the next key press's by up to one."""

    def __init__(self, text: str, **kwargs) -> None:
        super().__init__(printable(text), markup=False, classes="pane-title", **kwargs)

    def show(self, text: str) -> None:
        text = printable(text)
        if text != self.content:
            self.update(text, layout=False)
