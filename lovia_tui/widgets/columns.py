"""Columns sized to their content, the less important dropped first.

A list row is cut to the pane's width; cutting every column to a fixed
share left ids of a few characters at 200 columns and lost the age and
session at 120. Each column says how wide its widest value is and how much
it matters; :func:`fit` gives each, most important first, its full width
while there is room, the next one what is left if that is worth showing,
and drops the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

from lovia_tui.core.formatting import as_drawn_text

GAP = 1
KEPT_WHOLE = 20
"""Cells a capped column keeps whatever its share: ids such as ``chat-gateway-logs`` stay whole."""


@dataclass(frozen=True)
class Column:
    """One column: its name, its widest value, its rank (0 matters most), the
    fewest cells worth showing, and whether it takes the room left over."""

    name: str
    natural: int
    rank: int
    least: int = 4
    grows: bool = False
    share: float = 1.0
    """The most of the row it takes beyond ``KEPT_WHOLE`` cells: a 32-hex id
    filled a narrow pane and pushed every title out."""


def fit(columns: list[Column], width: int) -> dict[str, int]:
    """Cells per column shown (absent: dropped), in at most ``width`` cells."""
    widths: dict[str, int] = {}
    used = 0
    for column in sorted(columns, key=lambda c: c.rank):
        gap = GAP if widths else 0
        room = width - used - gap
        natural = min(column.natural, max(KEPT_WHOLE, int(width * column.share)))
        if room >= natural:
            shown = natural
        elif column.rank == 0 or room >= column.least:
            shown = max(0, room)
        else:
            break  # a column less important than this one must not take its room
        widths[column.name] = shown
        used += gap + shown
    spare = width - used
    growing = [c.name for c in columns if c.grows and c.name in widths]
    if spare > 0 and growing:
        widths[growing[0]] += spare
    return widths


MIDDLE_CUT_FROM = 12
"""Cells from which an id is cut in the middle: in fewer, its start reads better."""


@functools.lru_cache(maxsize=4096)
def cell(text: str, width: int, *, right: bool = False, middle: bool = False) -> str:
    """``text`` in exactly ``width`` cells (cut with an ellipsis, or padded),
    measured as the terminal draws it. ``middle``: cut in the middle, as ids
    are (their start and end tell them apart; the detail and `y` have them whole).
    Remembered: a list repaints its rows at every key, and measuring a title
    of non-ASCII text splits it into graphemes (1.9 ms a frame in a profile)."""
    if width <= 0:
        return ""
    text = as_drawn_text(text)
    if cell_len(text) > width:
        if middle and width >= MIDDLE_CUT_FROM:
            tail = (width - 1) // 2
            start = set_cell_size(text, width - 1 - tail)
            text = start + "…" + _last_cells(text, tail)
        else:
            text = set_cell_size(text, width - 1) + "…"
    pad = width - cell_len(text)
    return " " * pad + text if right else text + " " * pad


def _last_cells(text: str, width: int) -> str:
    """The end of ``text`` in at most ``width`` cells."""
    end = ""
    for char in reversed(text):
        if cell_len(char + end) > width:
            break
        end = char + end
    return end


def widest(values: Iterable[str], cap: int, least: int = 1) -> int:
    """The widest of ``values`` in cells, at most ``cap``."""
    return min(
        cap, max((cell_len(as_drawn_text(value)) for value in values), default=least)
    )


def longest(values: Iterable[str], cap: int, least: int = 1) -> int:
    """The longest of ``values`` in characters, at most ``cap``: for long
    lists, where measuring cells would cost (``cell`` still cuts by cells)."""
    return min(cap, max(map(len, values), default=least))
