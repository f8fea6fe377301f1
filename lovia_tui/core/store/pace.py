"""How many rows the next statement of a walk asks for, from how fast the last ones read.

A row read from a cold page cache costs a hundred times one read warm (a
head: 0.08 ms against 1-2 µs on this kind of machine), and a statement that
holds the file for long stalls every lovia writer on a rollback-journal
file. So a walk starts small, and each step asks for as many rows as the
last steps' rate fits in ``TARGET`` seconds: at most twice the last size,
never more than its ``most``.
"""

from __future__ import annotations

from time import perf_counter

TARGET = 0.02
"""Seconds one step of a walk should hold the file: well inside the 50 ms rule."""
FIRST = 8
"""A walk's first step: 128 rows of a 22 GB file lovia's Runner wrote (21 KB a
segment, a leaf page each) took 714 ms from a cold page cache; 8 took 24 ms."""


class Pace:
    """The rows per step of one walk: ask :meth:`start` how many to read, then
    tell :meth:`took` how many were."""

    def __init__(self, most: int, first: int = FIRST) -> None:
        self.most = most
        self.size = max(1, min(first, most))
        self._since = perf_counter()

    def start(self) -> int:
        """The size of the step beginning now: its time runs from here."""
        self._since = perf_counter()
        return self.size

    def took(self, rows: int) -> None:
        """The step read ``rows`` rows: the next step's size."""
        if rows <= 0:
            return
        fits = int(TARGET * rows / max(perf_counter() - self._since, 1e-6))
        self.size = max(1, min(self.most, 2 * self.size, fits))
