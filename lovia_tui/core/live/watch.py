"""Wake-ups for a live view: commits by another connection to one database.

File notifications (watchfiles) on the database's directory say that the file
or its ``-wal``/``-journal`` was written; SQLite's ``PRAGMA data_version`` on
our read connection then confirms a commit by someone else. In WAL mode a
commit only appends to ``-wal`` (``-shm`` is written through mmap, which
raises no notification), so the main file alone would miss every commit.
Where notifications cannot work (no inotify, a network filesystem, the
watcher failing) ``data_version`` is polled instead.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Literal

from lovia_tui.core.store.database import Database

WatchMode = Literal["watching", "polling"]

MIN_INTERVAL = 0.1
"""At most one wake-up per 100 ms: a burst of commits becomes one refresh."""
POLL_INTERVAL = 0.075
# watchfiles' thread looks for events every STEP ms and reports once a step
# adds none: 50-100 ms latency, ~0.2% CPU idle (20 ms: ~0.5%). DEBOUNCE caps
# the wait while new files keep appearing (its 1.6 s default delays events).
WATCH_STEP_MS = 50
WATCH_DEBOUNCE_MS = 100
# inotify sees only this host's writes on these (other hosts' are silent).
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "drvfs", "afs", "ceph",
     "glusterfs", "lustre", "gpfs", "fuse.sshfs", "fuse.rclone"}
)  # fmt: skip


class FileReplaced(Exception):
    """The watched path now names another file (moved over it): our
    connection still reads the old one, whose commits have ended."""


class CommitWatch:
    """Tells a live view when another process committed to ``db``.

    ``mode`` is "watching" (file notifications) or "polling"; ``reason`` says
    why it polls. Both may change while :meth:`commits` runs, if the watcher
    fails and polling takes over.
    """

    def __init__(self, db: Database, *, force_polling: bool = False) -> None:
        self.db = db
        self._file = db.path.resolve()
        network = _filesystem_type(self._file)
        if force_polling:
            self.reason: str | None = "polling forced"
        elif network in NETWORK_FILESYSTEMS:
            self.reason = f"{network} filesystem: other hosts' writes are not notified"
        else:
            self.reason = None
        self.mode: WatchMode = "polling" if self.reason else "watching"

    async def commits(
        self, stop: asyncio.Event | None = None
    ) -> AsyncGenerator[int, None]:
        """Yield ``data_version`` now, then after each commit by another connection.

        The first yield comes at once, so a commit between the caller's last
        read and the start of watching is not missed. Then at most one per
        :data:`MIN_INTERVAL`: commits in between merge into one wake-up. Ends
        when ``stop`` is set; cancelling the consuming task also ends it and
        stops the watcher thread. Raises :class:`FileReplaced` on a wake-up
        that finds the path naming another file.
        """
        stop = stop or asyncio.Event()
        wake, halt = asyncio.Event(), asyncio.Event()
        signal = asyncio.create_task(self._signal(wake, halt))
        stopper = asyncio.create_task(stop.wait())
        for task in (signal, stopper):
            task.add_done_callback(lambda _: wake.set())
        loop = asyncio.get_running_loop()
        try:
            version = await self.db.data_version()
            ready_at = loop.time() + MIN_INTERVAL
            yield version
            while True:
                await wake.wait()
                if stop.is_set():
                    return
                if signal.done():
                    signal.result()  # re-raise what stopped the watcher
                    return
                wake.clear()
                if ready_at > loop.time():
                    await asyncio.sleep(ready_at - loop.time())
                if self.db.replaced():
                    raise FileReplaced(self.db.path)
                current = await self.db.data_version()
                if current != version:
                    version = current
                    ready_at = loop.time() + MIN_INTERVAL
                    yield current
        finally:
            halt.set()
            signal.cancel()
            stopper.cancel()
            await asyncio.wait([signal, stopper])

    async def _signal(self, wake: asyncio.Event, halt: asyncio.Event) -> None:
        """Set ``wake`` whenever the file may have changed, until ``halt``."""
        if self.mode == "watching":
            # Imported once watching starts, after the first frame: watchfiles
            # brings anyio, ssl and sockets (~5 ms).
            from watchfiles import awatch

            names = {self._file.name + suffix for suffix in ("", "-wal", "-journal")}
            try:
                async for _ in awatch(
                    self._file.parent,
                    watch_filter=lambda _change, path: Path(path).name in names,
                    debounce=WATCH_DEBOUNCE_MS,
                    step=WATCH_STEP_MS,
                    stop_event=halt,
                    recursive=False,
                    force_polling=False,
                ):
                    wake.set()
                return
            except (OSError, RuntimeError) as exc:
                self.mode, self.reason = "polling", f"file notifications failed ({exc})"
                wake.set()  # a commit may have gone unnoticed meanwhile
        while not halt.is_set():
            await asyncio.sleep(POLL_INTERVAL)
            wake.set()


def _filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding ``path``, from /proc/self/mounts (Linux)."""
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return None
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        inside = path.is_relative_to(point)
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind
