"""Live tail: watch every open file and follow runs while they happen.

Composed into the inspector. One worker per database loops over the core's
``live_changes`` (a file watch confirmed by ``data_version``, or polling)
and hands each burst of changes to the screen through a ``ChangeFeed``; the
screen hands each pane its part.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from textual.screen import Screen

from lovia_tui import messages
from lovia_tui.core.errors import DamagedError, LoviaTuiError
from lovia_tui.core.live.changes import ChangeFeed, Changes
from lovia_tui.core.models import SegmentInfo
from lovia_tui.core.store.database import Database
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import Group
from lovia_tui.view.transcript_loader import BATCH

if TYPE_CHECKING:
    from lovia_tui.core.live.tail import Tail

LOCK_RETRY = 1.0
"""Seconds between looks at a file the live tail found locked."""


async def _until_readable(db: Database) -> None:
    """Return once ``db`` reads again (a lock on it was released)."""
    while True:
        await asyncio.sleep(LOCK_RETRY)
        try:
            await db.data_version()
            return
        except LoviaTuiError:
            continue


async def _until_restored(db: Database) -> None:
    """Return once ``db``'s path names the file it opened again (moved back)."""
    while db.replaced():
        await asyncio.sleep(LOCK_RETRY)


async def _until_rechecked(db: Database) -> None:
    """Return once ``db`` is no longer called damaged (Ctrl+R read it again)."""
    while db.damage is not None:
        await asyncio.sleep(LOCK_RETRY)


class LiveTail:
    """Watches every open file for its host screen, which takes each burst
    of changes as a :class:`messages.LiveChanged`; and tells a file's tail
    which rows the transcript shows (the transcript pane's ``Watcher``)."""

    def __init__(self, host: Screen, workspace: Workspace) -> None:
        self.host = host
        self.workspace = workspace
        self.tails: dict[Path, Tail] = {}
        self.watch_modes: dict[Path, str] = {}

    def start(self) -> None:
        """Watch every file: first thing on mount, so a view loaded next is followed."""
        for db in self.workspace.databases:
            if db.immutable:
                self.watch_modes[db.path] = "static (immutable: changes are not seen)"
                continue
            self.host.run_worker(
                self._live(db),
                group=Group.LIVE.of(db.path),
                exclusive=True,
                exit_on_error=False,
            )

    async def _live(self, db: Database) -> None:
        # Imported here, after the first frame: watchfiles brings anyio, ssl, sockets.
        from lovia_tui.core.live.tail import Tail, live_changes
        from lovia_tui.core.live.watch import CommitWatch, FileReplaced

        watch = CommitWatch(db)
        feed = ChangeFeed()
        tail: Tail | None = None
        while True:
            try:
                if tail is None:
                    tail = await Tail.start(db)
                    self.tails[db.path] = tail
                async for changes in live_changes(watch, tail):
                    self.watch_modes[db.path] = watch.mode
                    if feed.put(changes):
                        self.host.post_message(messages.LiveChanged(db.path, feed))
                return
            except FileReplaced:
                # Its banner says so; the old file's commits have ended.
                self.host.post_message(messages.FileTrouble(db.path))
                await _until_restored(db)
                self.host.post_message(messages.FileTrouble(db.path))
            except DamagedError as exc:
                # The file's banner says it; watching resumes once Ctrl+R
                # finds it readable again (a toast per commit would not stop).
                db.damage = db.damage or exc.reason
                self.host.post_message(messages.FileTrouble(db.path))
                await _until_rechecked(db)
            except LoviaTuiError as exc:
                # A writer held its lock past the busy timeout: keep watching
                # once it lets go, and reload what changed meanwhile.
                self.host.notify(
                    f"{exc}; live updates resume once it is released",
                    severity="warning",
                )
                await _until_readable(db)
                if feed.put(Changes(sessions_changed=True)):
                    self.host.post_message(messages.LiveChanged(db.path, feed))

    # ----- what the transcript shows, watched -----

    def follow_session(
        self, file: Path, session_id: str, shown: list[SegmentInfo], total: int
    ) -> None:
        """Watch the session's newest batch, as just listed (before its entries are read)."""
        if (tail := self.tails.get(file)) is not None:
            tail.follow_session(session_id, shown, total)

    async def watch_older(self, file: Path) -> None:
        """Watch the followed session's next older batch too (call before loading it)."""
        if (tail := self.tails.get(file)) is not None:
            await tail.watch_older(BATCH)

    async def watch_newer(self, file: Path) -> None:
        """Watch the followed session's next newer batch too (call before loading it)."""
        if (tail := self.tails.get(file)) is not None:
            await tail.watch_newer(BATCH)

    async def watch_window(self, file: Path, from_id: int, to_id: int | None) -> None:
        """Watch only the segments the transcript still holds."""
        if (tail := self.tails.get(file)) is not None:
            await tail.watch_ids(from_id, to_id)

    def follow_run(self, file: Path, run_id: str, seq: int) -> bool:
        """Follow a running checkpoint's new entries from batch ``seq``
        (False: its file is not watched)."""
        if (tail := self.tails.get(file)) is None:
            return False
        tail.follow_run(run_id, seq)
        return True

    def stop_following(self) -> None:
        for tail in self.tails.values():
            tail.follow_run(None)
