"""What the sessions list shows, apart from the widget: every key, the ones
the filter and a search let through, the summaries read so far, and how a
row is drawn in columns sized to them.

Plain state and drawing, no reads: :class:`~lovia_tui.widgets.sessions_pane.SessionsPane`
reads and feeds it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from rich.text import Text

from lovia_tui.core.formatting import PIN, age_since, printable, printable_id
from lovia_tui.core.models import SessionKey, SessionSummary
from lovia_tui.core.stored import unbindable
from lovia_tui.widgets.columns import Column, cell, fit, longest, widest

TASK = "↳ "
"""Before a subagent task chat's id."""
BADGE_STYLES = {
    "live": "bold green",
    "stale": "bold red",
    "interrupted": "yellow",
    "failed": "red",
}


class SessionList:
    """The sessions, their summaries and badges, filtered and drawn."""

    def __init__(self) -> None:
        self.keys: list[SessionKey] = []
        self.shown: list[SessionKey] = []
        self.summaries: dict[SessionKey, SessionSummary] = {}
        self.outdated: set[SessionKey] = set()
        """Summaries still shown but to be read again (after ctrl+r, an action)."""
        self.awaited: set[SessionKey] = set()
        """New sessions a filter hides until their titles are read: read
        whether on screen or not."""
        self.badges: dict[SessionKey, str] = {}
        self.matches: set[SessionKey] | None = None
        """A content search's matches (None: no search narrows the list)."""
        self.filter_text = ""
        self._positions: tuple[list[SessionKey], int, dict[SessionKey, int]] = (
            [],
            0,
            {},
        )
        self._columns: list[Column] = []
        self._widths: tuple[int, dict[str, int]] = (-1, {})
        self._measured = (10, 8, 2)
        """Cells of the id, title and runs columns: ids as shown, the rest
        as read so far."""

    # ----- summaries -----

    def needs_summary(self, key: SessionKey) -> bool:
        return key not in self.summaries or key in self.outdated

    def to_read(self, visible: Iterable[SessionKey]) -> list[SessionKey]:
        """The summaries to read: those awaited, and the ``visible`` ones missing."""
        missing = (
            k for k in visible if self.needs_summary(k) and k not in self.awaited
        )
        return [*self.awaited, *missing]

    def forget_summaries(self, visible: set[SessionKey]) -> None:
        """Every summary is to be read again; the ``visible`` ones stay shown
        meanwhile (no flash of "…"), the others are dropped."""
        self.summaries = {k: v for k, v in self.summaries.items() if k in visible}
        self.outdated = set(self.summaries)

    def take_summaries(self, found: dict[SessionKey, SessionSummary]) -> bool:
        """Keep the summaries read; True when the filter may now let through
        a session it hid (its title read only now)."""
        self.summaries.update(found)
        self.outdated.difference_update(found)
        self.awaited.difference_update(found)
        self._measure(found.values())
        return bool(self.filter_text) and not found.keys() <= set(self.shown)

    # ----- which sessions are shown -----

    def bring_to_front(self, keys: list[SessionKey]) -> None:
        """Sessions that just gained a run move to the top, their summaries to
        be read again (their titles stay for the filter meanwhile)."""
        fresh = list(dict.fromkeys(reversed(keys)))
        self.outdated.update(key for key in fresh if key in self.summaries)
        if self.filter_text:
            self.awaited.update(key for key in fresh if key not in self.summaries)
        self.keys = fresh + [key for key in self.keys if key not in set(fresh)]

    def refilter(self) -> None:
        """Show the sessions matching the id/title filter and any content search."""
        needle = self.filter_text.casefold()
        candidates = self.keys
        if self.matches is not None and len(self.matches) * 8 < len(self.keys):
            # A search's few matches, in list order: not a walk of every session
            # per progress message (130,000 of them at a million segments).
            order = self._order()
            candidates = sorted(
                (key for key in self.matches if key in order), key=order.__getitem__
            )
        self.shown = [
            key
            for key in candidates
            if (self.matches is None or key in self.matches)
            and (
                not needle
                or needle in key[1].casefold()
                or needle in self._title(key).casefold()
            )
        ]
        self._measure()

    def _order(self) -> dict[SessionKey, int]:
        """Each key's position in ``keys``, rebuilt when ``keys`` is replaced."""
        if self._positions[0] is not self.keys or self._positions[1] != len(self.keys):
            self._positions = (
                self.keys,
                len(self.keys),
                {key: n for n, key in enumerate(self.keys)},
            )
        return self._positions[2]

    def _title(self, key: SessionKey) -> str:
        summary = self.summaries.get(key)
        return summary.title if summary else ""

    # ----- drawing -----

    def _measure(self, read: Iterable[SessionSummary] | None = None) -> None:
        """Columns sized to the ids shown and the titles read so far. Summaries
        just ``read`` only widen them: a page of them walked every key again
        (55 ms of the UI's time a page at 166,000 sessions)."""
        ids, titles, runs = self._measured
        if read is None:
            # Ids by length, not cells: a walk of 130,000 keys must stay cheap.
            ids = longest((key[1] for key in self.shown), 40, 10)
            read, titles, runs = self.summaries.values(), 8, 2
        read = list(read)
        titles = max(titles, widest((printable(s.title) for s in read), 32, 8))
        runs = max(runs, widest((f"{s.runs}r" for s in read), 6, 2))
        self._measured = (ids, titles, runs)
        self._columns = [
            Column("id", ids, 0, share=0.45),
            Column("title", titles, 1, least=5, grows=True),
            Column("runs", runs, 2),
            Column("age", 4, 3),
        ]
        self._widths = (-1, {})

    def render_row(self, index: int, width: int) -> Text:
        if self._widths[0] != width:
            self._widths = (width, fit(self._columns, width - 2))
        widths = self._widths[1]
        key = self.shown[index]
        summary = self.summaries.get(key)
        badge = self.badges.get(key)
        text = Text()
        text.append("● " if badge else "  ", style=BADGE_STYLES.get(badge or "", ""))
        room = widths["id"]
        if summary is not None and summary.parent_id is not None and room > 4:
            # A subagent task chat, listed under its parent chat as lovia web groups it.
            text.append(TASK, style="dim")
            room -= len(TASK)
        text.append(cell(printable_id(key[1]), room, middle=True), style="bold")
        if summary is None:
            # Not read yet, or never: no read can bind an id that is not UTF-8.
            unread = unbindable("session", key[1])
            text.append(" ⚠ id not UTF-8: unreadable" if unread else " …", style="dim")
            return text
        when = age_since(time.time(), summary.last_activity)
        if "title" in widths:
            room = widths["title"]
            text.append(" ")
            if summary.pinned and room > len(PIN):
                text.append(PIN, style="bold yellow")
                room -= len(PIN)
            text.append(cell(printable(summary.title), room))
        for name, value in (("runs", f"{summary.runs}r"), ("age", when)):
            if name in widths:
                text.append(" " + cell(value, widths[name], right=True), style="dim")
        return text
