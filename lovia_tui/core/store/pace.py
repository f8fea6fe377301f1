"""How many rows the next statement of a walk asks for, from how fast the last ones read.

A row read from a cold page cache costs a hundred times one read warm (a
head: 0.08 ms against 1-2 µs on this kind of machine), and a statement that
holds the file for long stalls every lovia writer on a rollback-journal
file. So a walk starts small, and each step asks for as many rows as the
last steps' rate fits in ``TARGET`` seconds: at most twice the last size,
never more than its ``most``. How fast the next rows read cannot be known
before they are read (a file's rows can lie anywhere in it), so a step of
more than one row is cut off at ``CUT`` seconds and asked again at half
its size: the pages it read by then are cached, and the smaller step takes
them from memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import NamedTuple, TypeVar

TARGET = 0.02
"""Seconds one step of a walk should hold the file: well inside the 50 ms rule."""
CUT = 0.035
"""Seconds after which a step of more than one row is interrupted: a step of
2,897 heads that the last steps' rate put at 20 ms read for 94 ms on a cold
9 GB file, one of 1,110 for 613 ms on a 22 GB one (their pages lay apart)."""
FIRST = 8
"""A walk's first step: 128 rows of a 22 GB file lovia's Runner wrote (21 KB a
segment, a leaf page each) took 714 ms from a cold page cache; 8 took 24 ms."""

CHECK_EVERY = (10, 50)
"""SQLite instructions between two looks at a cut step's clock, fewest and
most: about every row of a small step, every few rows of a large one. A row
takes ~5-12 instructions; a step of 6 segments (~90 in all) looked at every
100 was never looked at, and read 6 segments' meta past their entries for
244 ms from a cold disk; a step of heads looked at every 100 (~33 heads, a
few cold pages) ran 51-54 ms past its cut. Looking every 10 costs a tight
index walk ~40 %, every 100 ~6 %."""

Rows = TypeVar("Rows")


class Cut(NamedTuple):
    """When SQLite interrupts a walk's step: after ``seconds``, its clock
    looked at every ``every`` instructions."""

    seconds: float
    every: int


class StatementCut(Exception):
    """A walk's step ran past its :attr:`Pace.cut` and was interrupted (never
    shown: :func:`paced` reads the step again, smaller)."""


def cut_for(rows: int) -> Cut | None:
    """When a step of ``rows`` rows is cut off: never for one (a walk always moves on)."""
    fewest, most = CHECK_EVERY
    return Cut(CUT, max(fewest, min(most, 2 * rows))) if rows > 1 else None


class Pace:
    """The rows per step of one walk: :func:`paced` reads each step; or ask
    :meth:`start` how many to read, then tell :meth:`took` how many were."""

    def __init__(self, most: int, first: int = FIRST) -> None:
        self.most = most
        self.size = max(1, min(first, most))
        self._since = perf_counter()

    def start(self) -> int:
        """The size of the step beginning now: its time runs from here."""
        self._since = perf_counter()
        return self.size

    @property
    def cut(self) -> Cut | None:
        """Seconds after which the step under way is interrupted."""
        return cut_for(self.size)

    def took(self, rows: int) -> None:
        """The step read ``rows`` rows: the next step's size."""
        if rows <= 0:
            return
        fits = int(TARGET * rows / max(perf_counter() - self._since, 1e-6))
        self.size = max(1, min(self.most, 2 * self.size, fits))

    def was_cut(self) -> None:
        """The step was interrupted at :attr:`cut`: the next one is half its size."""
        self.size = max(1, self.size // 2)


async def paced(pace: Pace, read: Callable[[int, Cut | None], Awaitable[Rows]]) -> Rows:
    """One step of a walk: ``read(size, cut)`` with the pace's size and
    :attr:`~Pace.cut`, read again at half the size while it is cut off."""
    while True:
        try:
            return await read(pace.start(), pace.cut)
        except StatementCut:
            pace.was_cut()
