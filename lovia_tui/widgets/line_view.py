"""What the Line API views (the lists, the transcript) share to stay cheap.

A list that scrolls by one row draws every line on screen again, and all but
one of them were drawn the frame before. Turning a line's text into a Strip
(truncating to the width, measuring the cells of non-ASCII text, building
segments) was most of a repaint; this cache keys the result on the text, its
spans, the width and the style, so it needs no invalidation: a line whose
content changed has another key.

:class:`LineView` gives them the values every line needs (base style,
width, component styles) without a walk up the DOM per line (a third of a
frame), wheel scrolling without a scrollbar, and a content height set without
a screen-wide layout.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from lovia_tui.core.formatting import SELECTORS

SIZE = 1024
"""Lines kept: a few screens of each list, the oldest dropped first."""


def as_drawn(text: Text) -> Text:
    """``text`` without presentation selectors, its styles kept in place."""
    plain = text.plain
    at = [n for n, char in enumerate(plain) if char in SELECTORS]
    if not at:
        return text
    kept = Text(style=text.style, end=text.end)
    for part in text.divide(sorted({o for n in at for o in (n, n + 1)})):
        if not (len(part) == 1 and part.plain in SELECTORS):
            kept.append_text(part)
    return kept


class LineCache:
    """Text → Strip of exactly ``width`` cells, remembered for reuse."""

    def __init__(self) -> None:
        self._strips: dict[tuple, Strip] = {}

    def strip(self, text: Text, width: int, style: Style, console: Console) -> Strip:
        """``text`` cut (with an ellipsis) or padded to ``width``, over ``style``."""
        key = (text.plain, text.style, tuple(text.spans), width, style)
        found = self._strips.get(key)
        if found is None:
            text = as_drawn(text).copy()
            text.truncate(width, overflow="ellipsis", pad=True)
            found = (
                Strip(text.render(console))
                .apply_style(style)
                .adjust_cell_length(width, style)
            )
            if len(self._strips) >= SIZE:
                del self._strips[next(iter(self._strips))]
            self._strips[key] = found
        return found


class LineView(ScrollView):
    """A Line API ScrollView sized by the CSS: the base style, the
    content width and the component styles every line needs, looked up once,
    not once per line; wheel scrolling without a scrollbar; a content height
    set without laying out the screen.

    Styles are kept until Textual re-applies the CSS to the widget (a theme
    change, a class change around it), which it says by ``notify_style_update``;
    Textual's own cache of them is cleared on every ``refresh``. The width is
    taken once per repaint.
    """

    _width: int | None = None
    _styles: dict[tuple[str, bool] | None, Style] | None = None

    def __init__(self, *, moved: Callable[[], None] = lambda: None, **kwargs) -> None:
        """``moved`` is called as the cursor moves, before the view posts that
        it did: what must change in the same frame as the rows (the pane
        title's position). Changed from a handler of the message, it missed
        that frame and cost a second one per key press (p95 23 -> 15 ms)."""
        super().__init__(**kwargs)
        self.moved = moved

    def set_virtual_height(self, height: int) -> None:
        """The number of lines to scroll through.

        Textual's ``virtual_size`` reactive lays out the whole screen when it
        changes (30-60 ms here) for content that might resize its container;
        these views are sized by the CSS, so the size is set as plain state,
        the scroll offset kept in range and the view repainted.
        """
        self.set_reactive(
            Widget.virtual_size, Size(self.scrollable_content_region.width, height)
        )
        self.scroll_y = self.validate_scroll_y(self.scroll_y)
        self.refresh()

    @property
    def allow_vertical_scroll(self) -> bool:
        # The view draws no scrollbar (overflow-y: hidden: a zero-width one
        # still invalidated the screen's map on every scroll), yet the wheel scrolls.
        return not self.is_disabled and self.max_scroll_y > 0

    def notify_style_update(self) -> None:
        self._styles = None
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._width = self.scrollable_content_region.width
        try:
            return super().render_lines(crop)
        finally:
            self._width = None

    @property
    def repaint_values(self) -> tuple[Style, int]:
        """(base style, content width) of the repaint in progress."""
        width = (
            self._width
            if self._width is not None
            else self.scrollable_content_region.width
        )
        return self._style(None), width

    def component(self, name: str, partial: bool = False) -> Style:
        """A component class's style."""
        return self._style((name, partial))

    def _style(self, key: tuple[str, bool] | None) -> Style:
        if self._styles is None:
            self._styles = {}
        if key not in self._styles:
            self._styles[key] = (
                self.rich_style
                if key is None
                else self.get_component_rich_style(key[0], partial=key[1])
            )
        return self._styles[key]
