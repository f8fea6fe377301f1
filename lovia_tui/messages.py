"""App-level messages: workers report back with these, the screen applies them.

Each carries the selection it was computed for, so a result for a selection
the user has already left is dropped instead of shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from lovia_tui.core.models import (
    DanglingCall,
    RunInfo,
    SessionLink,
    SessionSummary,
    Unreadable,
)
from lovia_tui.view.rows import Row

if TYPE_CHECKING:
    from lovia_tui.core.live.changes import ChangeFeed


@dataclass
class SessionsLoaded(Message):
    """The sessions list: (file, session_id) keys in display order."""

    keys: list[tuple[str, str]]


@dataclass
class SummariesLoaded(Message):
    """Runs, titles and activity for sessions that scrolled into view."""

    summaries: dict[tuple[str, str], SessionSummary]


@dataclass
class RunsLoaded(Message):
    """The runs pane's files are walked: the unfinished and web-linked runs
    (what badges and seams need) and the session links known so far."""

    runs: list[RunInfo]
    links: dict[str, SessionLink]


@dataclass
class TranscriptLoaded(Message):
    """The newest rows of a session (``older`` segments are not loaded yet),
    and the last batch seq read of each in-flight run shown at its seam."""

    key: tuple[str, str]
    rows: list[Row]
    run_seqs: dict[str, int]


@dataclass
class NewerLoaded(Message):
    """A newer batch of a session's segments, to go below what is shown (and,
    once the newest is reached, the in-flight runs' seams and their seqs)."""

    key: tuple[str, str]
    rows: list[Row]
    run_seqs: dict[str, int]


@dataclass
class StartLoaded(Message):
    """A session's first batch of segments, shown in place of what was (Home)."""

    key: tuple[str, str]
    rows: list[Row]
    run_seqs: dict[str, int]


@dataclass
class IndicesCounted(Message):
    """The first flat index of each of a session's segments, by row id."""

    key: tuple[str, str]
    starts: dict[int, int | None]


@dataclass
class RunViewLoaded(Message):
    """The rows of a run shown on its own (no session is known for it)."""

    run_id: str
    rows: list[Row]
    last_seq: int


@dataclass
class LiveChanged(Message):
    """Another process committed to ``path``: take what changed from the feed.

    Changes are deltas, so they wait in the feed rather than in the message:
    a burst collapses into one message without losing any of them.
    """

    path: Path
    feed: ChangeFeed

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LiveChanged) and message.feed is self.feed


@dataclass
class OlderLoaded(Message):
    """An older batch of a session's segments, to go above what is shown."""

    key: tuple[str, str]
    rows: list[Row]


@dataclass
class RunDetailLoaded(Message):
    """A run's dangling calls and unreadable batches (no run: none selected)."""

    run_id: str | None
    dangling: list[DanglingCall]
    problems: list[Unreadable]


@dataclass
class SearchProgress(Message):
    """Content search: matching sessions so far and the fraction scanned."""

    needle: str
    keys: list[tuple[str, str]]
    fraction: float
    done: bool
    note: str = ""
    """How the answer was made (what was scanned instead of looked up)."""


@dataclass
class IndexProgress(Message):
    """The search index's build: the fraction of rows indexed so far."""

    fraction: float
    done: bool

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, IndexProgress)


@dataclass
class SearchHits(Message):
    """The transcript rows (by key, in order) of the search's hits in a session."""

    key: tuple[str, str]
    needle: str
    rows: list[str]


@dataclass
class FileTrouble(Message):
    """A read found a file SQLite calls damaged, or the live tail found it
    replaced on disk: its banner replaces the notification each read would
    otherwise raise."""

    path: Path
