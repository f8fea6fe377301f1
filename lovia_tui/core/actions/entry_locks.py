"""Which journal entries are running right now, in any process: one lock file per entry.

The process acting (or undoing) holds an exclusive ``flock`` on
``<journal dir>/<journal stem>.locks/<entry id>`` from the moment its entry
exists until it has recorded the outcome. The kernel drops the lock when the
process dies, however it dies, so "pending and locked" means running and
"pending and unlocked" means interrupted. Every other process checks the
lock before it calls an entry interrupted, undoes it or prescribes a fix.

These are plain lock files, never a database file: ``flock`` locks belong to
the open file description, so taking, testing and closing them cannot drop
SQLite's own POSIX locks. A lock file names its holder ("pid N on HOST")
so a refusal can say where the entry runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from lovia_tui.core.errors import ActionError, os_error_text
from lovia_tui.core.private_files import open_private_file

if TYPE_CHECKING:
    from lovia_tui.core.store.rows import RowGroup

POLL_SECONDS = 0.05
"""How often a bounded wait for an entry's lock tries again."""


def locks_directory(journal: Path) -> Path:
    """Where the lock files of ``journal``'s entries live, beside it."""
    return journal.with_name(journal.stem + ".locks")


def run_lock_name(file: Path, run_id: str) -> str:
    """The lock a resume or replay of ``run_id`` in ``file`` holds while it
    goes, and its undo takes: one per file and run id, whatever they hold."""
    key = f"{Path(file).resolve()}\0{run_id}".encode()
    return "run-" + hashlib.sha256(key).hexdigest()[:32]


class RunInUseError(ActionError):
    """A resume or replay of the run is running: nothing was done."""


RUN_TABLES = frozenset({"snapshot_heads", "snapshot_turns", "chat_runs"})
"""Tables whose rows are a run's own (keyed by its id): a resume writes them."""


def refuse_runs_in_use(journal: Path, groups: Iterable[RowGroup]) -> None:
    """ActionError when a resume or replay of a run whose rows ``groups`` hold
    is running (in any lovia-tui on ``journal``): lovia would go on saving
    its batches over what the action or undo changes.

    Called under the action's write lock. A resume that takes its run's lock
    after this look waits for that write lock before it reads the run
    (:func:`~lovia_tui.core.runs.run_start.start_entry`), so it starts from
    what the action left."""
    try:
        present = set(os.listdir(locks_directory(journal)))
    except FileNotFoundError:
        return
    if not any(name.startswith("run-") for name in present):
        return  # no resume going: no run's lock to look for (a bulk delete names many)
    runs = {(Path(g.file), str(g.key)) for g in groups if g.table in RUN_TABLES}
    for file, run in sorted(runs):
        name = run_lock_name(file, run)
        if name in present and (holder := running_in(journal, name)):
            raise RunInUseError(
                f"a resume or replay of run {run!r} is running in {holder}: "
                "let it end, or cancel it, first"
            )


def _lock_path(journal: Path, entry_id: int | str) -> Path:
    return locks_directory(journal) / str(entry_id)


def _open(path: Path, create: bool) -> int | None:
    """A descriptor on the lock file (a private file of ours, never through a
    link); None if it is absent and not to be created."""
    if not create and not os.path.lexists(path):
        return None
    flags = os.O_RDWR | os.O_CREAT if create else os.O_RDONLY
    try:
        return open_private_file(path, flags)
    except FileNotFoundError:  # removed by its finished holder meanwhile
        return None
    except OSError as exc:
        raise ActionError(os_error_text(exc)) from exc


def _try_lock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _still_linked(fd: int, path: Path) -> bool:
    """The locked file is still the one at ``path`` (not unlinked by its finished holder)."""
    try:
        return os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


class EntryLock:
    """An exclusive lock on one entry's lock file, held until :meth:`release`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self._fd = path, fd

    @classmethod
    def take(
        cls, journal: Path, entry_id: int | str, wait: float = 0.0, what: str = ""
    ) -> EntryLock:
        """Lock the entry, waiting at most ``wait`` seconds for its holder to let go.

        Raises ActionError naming the holder when it is still running. A
        ``str`` id locks something else by that name (``what`` says what:
        a run being resumed).
        """
        path = _lock_path(journal, entry_id)
        deadline = time.monotonic() + wait
        while True:  # bounded by the deadline
            fd = _open(path, create=True)
            if fd is None:
                continue  # removed between its creation and our look: again
            if _try_lock(fd, fcntl.LOCK_EX):
                if _still_linked(fd, path):
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
                    return cls(path, fd)
                os.close(fd)  # its holder finished and removed it: take the new one
                continue
            holder = _holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                raise ActionError(
                    f"{what or f'journal entry {entry_id}'} is running in {holder}"
                )
            time.sleep(POLL_SECONDS)

    def release(self, *, remove: bool) -> None:
        """Let go; ``remove``: the entry is settled, its lock file is not needed."""
        if self._fd < 0:
            return
        if remove:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        os.close(self._fd)
        self._fd = -1


def _holder(fd: int) -> str:
    """ "pid N on HOST", as the holder wrote it into its lock file."""
    raw = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
    if len(raw) != 2 or not raw[0].isdigit():
        return "another process"
    if raw == [str(os.getpid()), socket.gethostname()]:
        return "this lovia-tui"
    return f"pid {raw[0]} on {raw[1]}"


def running_in(journal: Path, entry_id: int | str) -> str | None:
    """ "pid N on HOST" while a process holds the entry's lock, else None. Reads only."""
    path = _lock_path(journal, entry_id)
    fd = _open(path, create=False)
    if fd is None:
        return None
    try:
        if _try_lock(fd, fcntl.LOCK_SH):
            return None
        return _holder(fd)
    finally:
        os.close(fd)


def remove_locks(journal: Path, entry_ids: Iterable[int]) -> None:
    """Remove the lock files of pruned entries (none is held: they are settled)."""
    for entry_id in entry_ids:
        with contextlib.suppress(FileNotFoundError):
            _lock_path(journal, entry_id).unlink()
