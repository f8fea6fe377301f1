"""Names the UI shares, defined once: row kinds and keys, panes and worker
groups (run statuses are the core's: :mod:`lovia_tui.core.run_status`).

They are ``StrEnum`` members, so they compare equal to the strings stored and
shown (``RowKind.ENTRY == "entry"``), but a misspelt one is an error at
import, not a silent mismatch between two files.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path


class Pane(StrEnum):
    """The inspector's three panes, in tab order."""

    SESSIONS = "sessions"
    TRANSCRIPT = "transcript"
    RUNS = "runs"

    @property
    def number(self) -> int:
        """The key that focuses it (1, 2, 3)."""
        return list(Pane).index(self) + 1

    @property
    def label(self) -> str:
        return self.value.capitalize()


class RowKind(StrEnum):
    """What a transcript row stands for."""

    OLDER = "older"
    NEWER = "newer"
    SEGMENT = "segment"
    ENTRY = "entry"
    SEAM = "seam"
    UNREADABLE = "unreadable"
    HELD_BACK = "held-back"
    """The entries of a large segment the app does not hold (its middle)."""
    NOTICE = "notice"
    """A run's compaction notice, after its entries (where lovia web replays it)."""
    RECORD = "record"
    """lovia web's record of a run that left no entries in the chat."""
    CHAT = "chat"
    """A line of what lovia web says of the chat (task of, forked from, schedules)."""


class Group(StrEnum):
    """Worker groups: one exclusive worker per kind of read or flow."""

    SESSIONS = "sessions"
    SUMMARIES = "summaries"
    RUNS = "runs"
    RUNS_PAGE = "runs-page"
    RUNS_LOCATE = "runs-locate"
    RUN_DETAIL = "run-detail"
    TRANSCRIPT = "transcript"
    OLDER = "older"
    NEWER = "newer"
    WATCH = "watch"
    SEARCH = "search"
    EXPORT = "action-export"
    """Waits on its dialog (where to write) like the other actions."""
    ACTION = "action"
    PREFLIGHT = "preflight"
    CONSOLE = "console"
    CONSOLE_UNDO = "console-undo"
    """Whether the run the console showed was undone since (a journal read)."""
    DOCTOR = "doctor"
    DOCTOR_FIX = "action-doctor"
    LIVE = "live"
    SEARCH_INDEX = "live:search-index"
    """The content index's build and commit follower: lives as the screen does."""
    HITS = "hits"
    ATTACHMENTS = "attachments"
    """Decoding and scaling an entry's images for its attachments view."""
    RECHECK = "recheck"
    """Ctrl+R's new look at a file called damaged, before the panes reload."""

    def of(self, path: Path | str) -> str:
        """A per-file group (the live tail runs one worker per database)."""
        return f"{self.value}:{path}"


def seam_key(run_id: str) -> str:
    """The key of the seam row of an in-flight run (and the prefix of its entries)."""
    return f"{RowKind.SEAM}:{run_id}"


def segment_key(path: Path | str, row_id: int) -> str:
    """The key of a segment's header row (and the prefix of its entries)."""
    return f"seg:{path}:{row_id}"


def held_back_key(entry_key: str) -> str:
    """The key of the row standing for the entries a segment holds back, from
    the key of one of its entries (``{segment_key}:{offset}``)."""
    return f"{entry_key.rsplit(':', 1)[0]}:{RowKind.HELD_BACK}"


def notice_key(header_key: str) -> str:
    """The key of a segment's compaction notice row, from its header's key."""
    return f"{header_key}:{RowKind.NOTICE}"


def older_key(before_id: int) -> str:
    return f"{RowKind.OLDER}:{before_id}"


def newer_key(after_id: int) -> str:
    return f"{RowKind.NEWER}:{after_id}"
