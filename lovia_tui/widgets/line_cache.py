"""Strips of recently drawn lines, keyed by what they show.

A list that scrolls by one row draws every line on screen again, and all but
one of them were drawn the frame before. Turning a line's text into a Strip
(truncating to the width, measuring the cells of non-ASCII text, building
segments) was most of a repaint; this cache keys the result on the text, its
spans, the width and the style, so it needs no invalidation: a line whose
content changed has another key.
"""

from __future__ import annotations

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

SIZE = 1024
"""Lines kept: a few screens of each list, the oldest dropped first."""


class LineCache:
    """Text → Strip of exactly ``width`` cells, remembered for reuse."""

    def __init__(self) -> None:
        self._strips: dict[tuple, Strip] = {}

    def strip(self, text: Text, width: int, style: Style, console: Console) -> Strip:
        """``text`` cut (with an ellipsis) or padded to ``width``, over ``style``."""
        key = (text.plain, text.style, tuple(text.spans), width, style)
        found = self._strips.get(key)
        if found is None:
            text = text.copy()
            text.truncate(width, overflow="ellipsis", pad=True)
            found = Strip(text.render(console)).apply_style(style).adjust_cell_length(width, style)
            if len(self._strips) >= SIZE:
                del self._strips[next(iter(self._strips))]
            self._strips[key] = found
        return found
