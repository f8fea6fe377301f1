"""A content search's hits in the session the transcript shows: the cursor
lands on the first and `n` / `N` step through them, loading older batches
when a hit lies beyond the ones shown.

Owned by :class:`~lovia_tui.widgets.transcript_pane.TranscriptPane`, whose
worker looks the hits up in the Sessions pane's search index.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from lovia_tui import messages
from lovia_tui.core.models import SessionKey
from lovia_tui.view.kinds import Group, RowKind, held_back_key, seam_key

if TYPE_CHECKING:
    from lovia_tui.core.search.workspace import WorkspaceSearch
    from lovia_tui.widgets.transcript_pane import TranscriptPane


class Hits:
    """The search's hits (row keys, in order) and the one under the cursor."""

    def __init__(self, pane: TranscriptPane) -> None:
        self.pane = pane
        self.query = ""
        self.needle = ""
        """The search's longest word: what the transcript highlights."""
        self.matches: set[SessionKey] | None = None
        self.index: WorkspaceSearch | None = None
        self.rows: list[str] = []
        self.at = -1
        self._indexed: list[str] = []
        """The hits the index found in the session's segments (``rows`` adds
        those in its in-flight runs)."""
        self._landed: tuple[SessionKey, str] | None = None
        """The session and query whose first hit the cursor was put on: read
        again (a commit), the cursor stays where the user left it."""

    def search_for(
        self,
        query: str,
        needle: str,
        matches: set[SessionKey] | None,
        index: WorkspaceSearch,
    ) -> None:
        """Highlight ``needle``; in a session among ``matches``, go to its hits."""
        self.query, self.needle = query, needle
        self.matches, self.index = matches, index
        self._landed = None
        self.pane.transcript.set_needle(needle)
        if self.pane.session_key:
            self.session_shown(self.pane.session_key)

    def clear(self) -> None:
        """Something other than a session is shown (a run alone): no hits."""
        self.rows, self._indexed, self.at, self._landed = [], [], -1, None

    def session_shown(self, key: SessionKey) -> None:
        """A session is shown: its hits, if the search matched it (the same
        session read again keeps the hit `n` and `N` step from)."""
        self.rows = []
        if self._landed is None or self._landed[0] != key:
            self._landed, self.at = None, -1
        if self.query and self.matches and key in self.matches:
            self.pane.run_worker(
                partial(self._find, key, self.query),
                group=Group.HITS,
                exclusive=True,
            )

    async def _find(self, key: SessionKey, query: str) -> None:
        assert self.index is not None
        rows = await self.index.row_keys(query, key)
        self.pane.post_message(messages.SearchHits(key, query, rows))

    def found(self, message: messages.SearchHits) -> None:
        """The index's hits in the session's segments, then those in the
        entries of its in-flight runs below them (the index has those by run,
        not by session; they are loaded whole, so they are searched here)."""
        if message.key != self.pane.session_key or message.needle != self.query:
            return
        self._indexed = message.rows
        self.rows = message.rows + self._inflight_hits()
        if self._landed != (message.key, self.query):
            self._landed = (message.key, self.query)
            self._show(0)
            return
        row = self.pane.transcript.current_row
        if row is not None and row.key in self.rows:
            self.at = self.rows.index(row.key)
        self.at = min(self.at, len(self.rows) - 1)
        self.pane.show_title()

    def entries_added(self) -> None:
        """The followed run saved entries: hits among them count too (then
        the pane's title is shown again)."""
        if self._landed == (self.pane.session_key, self.query):
            current = self.rows[self.at] if 0 <= self.at < len(self.rows) else None
            self.rows = self._indexed + self._inflight_hits()
            self.at = self.rows.index(current) if current in self.rows else self.at
        self.pane.show_title()

    def _inflight_hits(self) -> list[str]:
        # The search layer is imported by the first search: a first frame has none.
        from lovia_tui.core.search.query import QueryError, parse_query
        from lovia_tui.core.search.text import entry_matches

        try:
            words = parse_query(self.query).words
        except QueryError:
            return []
        return [
            row.key
            for row in self.pane.transcript.rows
            if row.kind == RowKind.ENTRY
            and row.run is not None
            and row.key.startswith(seam_key(row.run.run_id))
            and row.entry is not None
            and entry_matches(words, row.entry.data)
        ]

    @property
    def title(self) -> str:
        """Where the cursor is among the hits, for the pane's title; nothing
        once the cursor left the hit (moved, or carried down by a follow)."""
        if not 0 <= self.at < len(self.rows):
            return ""
        row, hit = self.pane.transcript.current_row, self.rows[self.at]
        if row is None or row.key not in (hit, held_back_key(hit)):
            return ""
        return f" · hit {self.at + 1}/{len(self.rows)}"

    def step(self, step: int, next_session: Callable[[int], bool]) -> None:
        """The next (1) or previous (-1) hit: in this session, else in the
        next session found that way, else back to this one's first (last)."""
        if 0 <= self.at + step < len(self.rows):
            self._show(self.at + step)
        elif not next_session(step) and self.rows:
            self._show(0 if step > 0 else len(self.rows) - 1)
            where = "first" if step > 0 else "last"
            self.pane.notify(
                f"no other session found that way: back to this one's {where} hit"
            )

    def _show(self, at: int) -> None:
        """Put the cursor on hit ``at`` (on the row standing for it, if its run
        holds it back); a hit older than the rows shown loads the previous
        batch first (and is tried again when it arrives)."""
        self.at = at
        transcript = self.pane.transcript
        if (
            not self.rows
            or transcript.select_key(self.rows[at])
            or transcript.select_key(held_back_key(self.rows[at]))
        ):
            self.pane.show_title()
            return
        self.pane.load_older()

    def older_shown(self) -> None:
        if 0 <= self.at < len(self.rows):
            self.pane.call_after_refresh(self._show, self.at)
