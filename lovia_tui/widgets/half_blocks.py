"""Pixels drawn as coloured half blocks: two pixels a cell.

The top pixel colours the glyph ``▀``, the bottom one its background. Every
truecolor terminal and the browser page draw it with nothing but colours: no
image protocol to detect, no terminal query that could eat a keystroke.
"""

from __future__ import annotations

from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style

from lovia_tui.core.image_pixels import Pixels

_BLACK = (0, 0, 0)


class HalfBlocks:
    """A Rich renderable of :class:`Pixels` (already scaled to fit)."""

    def __init__(self, pixels: Pixels) -> None:
        self.pixels = pixels

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> RenderResult:
        rows = self.pixels.rows
        for y in range(0, len(rows), 2):
            top = rows[y]
            bottom = rows[y + 1] if y + 1 < len(rows) else (_BLACK,) * len(top)
            for upper, lower in zip(top, bottom, strict=True):
                style = Style(
                    color=Color.from_rgb(*upper), bgcolor=Color.from_rgb(*lower)
                )
                yield Segment("▀", style)
            yield Segment.line()
