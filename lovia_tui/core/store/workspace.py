"""The set of databases a user opened, and what spans files: links and lookups.

The web UI keeps everything in one file; other apps split sessions and
checkpoints across two. A workspace answers "which file holds session X /
run Y" and "which session does run Y belong to" across all of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lovia_tui.core.errors import DamagedError, OpenError
from lovia_tui.core.models import RunInfo, SessionLink, SessionSummary
from lovia_tui.core.store import session_reads, web_chats
from lovia_tui.core.store.checkpoint_reads import runs
from lovia_tui.core.store.connect import as_stored
from lovia_tui.core.store.database import Database, open_database
from lovia_tui.core.store.run_segments import RunSegments
from lovia_tui.core.stored import stored_key, time_order

DEFAULT_DIR = Path(".lovia")
RUN_IDS_CHUNK = 5_000
"""A session's run ids per statement (a hostile session may hold a million)."""


def resolve_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories to their ``*.db`` files; no path means ``./.lovia``.

    Raises :class:`OpenError` naming the path when nothing can be opened.
    """
    given = [Path(p) for p in paths]
    if not given:
        if not DEFAULT_DIR.is_dir() or not sorted(DEFAULT_DIR.glob("*.db")):
            raise OpenError(
                "no database given and no ./.lovia/*.db here; "
                "try `lovia-tui demo` or `lovia-tui PATH`"
            )
        given = [DEFAULT_DIR]
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(path.glob("*.db"))
            if not found:
                raise OpenError(f"{path}: directory holds no *.db file")
            files.extend(found)
        elif not path.exists():
            raise OpenError(f"{path}: no such file or directory")
        else:
            files.append(path)
    # One file reached by two names (a symbolic or hard link) is opened once:
    # SQLite finds a hot journal by the name it was opened with.
    unique: dict[tuple[int, int], Path] = {}
    for path in files:
        unique.setdefault(_identity(path), path)
    return list(unique.values())


def _identity(path: Path) -> tuple[int, int]:
    """The file a path names, whatever the name (device, inode)."""
    stat = path.stat()
    return stat.st_dev, stat.st_ino


class Workspace:
    """Open databases, addressed by file; the read side of the whole app."""

    def __init__(
        self,
        databases: list[Database],
        *,
        skip_damaged: bool = False,
        skipped: list[str] | None = None,
    ) -> None:
        self.databases = databases
        self.skipped = skipped or []
        """Why each file found in a given directory was not opened (another
        program's ``*.db``, an empty file): said once, never silently left out."""
        self.skip_damaged = skip_damaged
        """A read across the files leaves out one called damaged (the app: its
        banner says so, the others show); else the damage ends the read (a
        command exits 2)."""
        self._run_segments = {db.path: RunSegments(db) for db in databases}

    @classmethod
    async def open(
        cls,
        paths: Iterable[str | Path],
        *,
        readonly: bool = False,
        skip_damaged: bool = False,
    ) -> Workspace:
        """The files of ``paths`` opened. A file named is opened or the whole
        open fails; one found in a directory that is no lovia database is
        skipped (:attr:`skipped`), unless no file there is one. A damaged file
        is never skipped: SQLite's word on it is said."""
        paths = list(paths)
        named = {
            _identity(Path(p))
            for p in paths
            if Path(p).exists() and not Path(p).is_dir()
        }
        opened: list[Database] = []
        skipped: list[str] = []
        try:
            for path in resolve_paths(paths):
                try:
                    opened.append(await open_database(path, readonly=readonly))
                except DamagedError:
                    raise
                except OpenError as exc:
                    if _identity(path) in named:
                        raise
                    skipped.append(str(exc))
        except BaseException:
            for db in opened:
                await db.close()
            raise
        if not opened and skipped:
            raise OpenError(f"no lovia database among the files found: {skipped[0]}")
        return cls(opened, skip_damaged=skip_damaged, skipped=skipped)

    @property
    def paths(self) -> list[Path]:
        """The open files, in the order given, absolute: what a suggested
        command names works from any directory."""
        return [db.path.absolute() for db in self.databases]

    @property
    def readonly(self) -> bool:
        return all(db.readonly for db in self.databases)

    @property
    def session_dbs(self) -> list[Database]:
        """Files that hold sessions: a session store, or the web UI's chats."""
        return [db for db in self.databases if db.stores.session or db.stores.chat]

    @property
    def checkpoint_dbs(self) -> list[Database]:
        return [db for db in self.databases if db.stores.checkpoint]

    def database(self, file: Path) -> Database:
        for db in self.databases:
            if db.path == file:
                return db
        raise OpenError(f"{file}: not open")

    async def recent_sessions(self, limit: int) -> list[tuple[str, str]]:
        """(file, session_id) of the ``limit`` newest sessions of each file: pinned
        web chats first, then newest first (lovia web's order); a file called
        damaged is left out where :attr:`skip_damaged`."""
        rank: dict[tuple[str, str], tuple[bool, float]] = {}
        parents: dict[tuple[str, str], tuple[str, str]] = {}
        for db in self.session_dbs:
            file = str(db.path)
            ranked: list[tuple[str, float, bool]] = []
            found: dict[str, str] = {}
            with self._unless_damaged():
                ranked = await session_reads.ranked_sessions(db, limit)
                found = await web_chats.parent_ids(db, [sid for sid, _, _ in ranked])
            for sid, when, pinned in ranked:
                rank[(file, sid)] = (pinned, when or 0)
            parents.update(
                ((file, sid), (file, parent)) for sid, parent in found.items()
            )
        # lovia web lists a subagent task under its chat, not among the chats.
        return web_chats.under_parents(
            sorted(rank, key=rank.__getitem__, reverse=True), parents.get
        )

    async def summaries(
        self, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], SessionSummary]:
        """Runs, title and activity of each (file, session_id): three statements
        a file (see :attr:`skip_damaged`)."""
        by_file: dict[str, list[str]] = {}
        for file, session_id in keys:
            by_file.setdefault(file, []).append(session_id)
        found = {}
        for file, session_ids in by_file.items():
            db = self.database(Path(file))
            await db.after_foreground()  # titles can wait for an opening session
            read: dict[str, SessionSummary] = {}
            with self._unless_damaged():
                read = await session_reads.session_summaries(db, session_ids)
            for session_id, summary in read.items():
                found[(file, session_id)] = summary
        return found

    async def find_session(self, session_id: str) -> Database | None:
        """The file holding ``session_id``'s segments, if any."""
        for db in self.session_dbs:
            if await session_reads.session_summary(db, session_id):
                return db
        return None

    async def find_run(self, run_id: str) -> RunInfo | None:
        """The run's checkpoint in the first file that has it (see :attr:`skip_damaged`)."""
        for db in self.checkpoint_dbs:
            with self._unless_damaged():
                if found := await runs(db, [run_id]):
                    return found[0]
        return None

    async def runs_named(self, run_ids: Iterable[str]) -> list[RunInfo]:
        """These runs' checkpoints in every open file, most recently saved
        first (see :attr:`skip_damaged`)."""
        wanted = list(dict.fromkeys(run_ids))
        result: list[RunInfo] = []
        for db in self.checkpoint_dbs:
            with self._unless_damaged():
                result.extend(await runs(db, wanted))
        return sorted(result, key=lambda run: time_order(run.updated_at), reverse=True)

    async def session_run_ids(self, session_id: str) -> set[str]:
        """The runs that may belong to a session: those with a segment in it
        (lovia's ``(session_id, run_id)`` index, ``RUN_IDS_CHUNK`` a statement)
        and those lovia web records for it (its active run, its runs).
        :meth:`links` says which of them it is (see :attr:`skip_damaged`)."""
        found: set[str] = set()
        for db in self.session_dbs:
            with self._unless_damaged():
                found.update(await self._run_ids_in(db, session_id))
        return found

    @staticmethod
    async def _run_ids_in(db: Database, session_id: str) -> set[str]:
        found: set[str] = set()
        # Keyset from no bound at all: a run id of any storage class
        # (numbers and NULL sort before text) is found too.
        after: tuple[Any, ...] = (None, None)
        later = f"AND run_id > {as_stored('run_id', '?3', '?2')} "
        while db.stores.session and (
            rows := await db.fetchall(
                "SELECT run_id, MAX(id) FROM session_runs WHERE session_id = ?1 "
                f"{'' if after[1] is None else later}"
                "GROUP BY run_id ORDER BY run_id LIMIT ?4",
                (session_id, *after, RUN_IDS_CHUNK),
            )
        ):
            found.update(stored_key(row[0]) for row in rows)
            after = tuple(rows[-1])
        if db.stores.chat:
            rows = await db.fetchall(
                "SELECT active_run_id FROM chat_sessions WHERE id = ? "
                "AND active_run_id IS NOT NULL "
                "UNION SELECT id FROM chat_runs WHERE session_id = ?",
                (session_id, session_id),
            )
            found.update(stored_key(row[0]) for row in rows)
        return found

    async def links(self, run_ids: Iterable[str]) -> dict[str, SessionLink]:
        """The session each run belongs to, strongest evidence first; never guessed.

        1. a ``session_runs`` row with the same run_id (the run was appended);
        2. the web UI's ``chat_sessions.active_run_id`` / ``chat_runs.session_id``.
        Runs with neither are absent from the result: their session is unknown.
        See :attr:`skip_damaged` (no action runs beside a damaged file).
        """
        wanted = list(dict.fromkeys(run_ids))
        found: dict[str, SessionLink] = {}
        for db in self.session_dbs:
            if not db.stores.session:
                continue
            with self._unless_damaged():
                for run_id, session_id in await self._run_segments[db.path].sessions(
                    r for r in wanted if r not in found
                ):
                    found.setdefault(
                        run_id, SessionLink(db.path, session_id, "segment")
                    )
        for db in self.databases:
            if not db.stores.chat:
                continue
            with self._unless_damaged():
                await self._web_links(db, [r for r in wanted if r not in found], found)
        return found

    @staticmethod
    async def _web_links(
        db: Database, run_ids: list[str], found: dict[str, SessionLink]
    ) -> None:
        for chunk in _chunks(run_ids, 500):
            marks = ",".join("?" * len(chunk))
            rows = await db.fetchall(
                f"SELECT active_run_id, id FROM chat_sessions WHERE active_run_id IN ({marks}) "
                f"UNION ALL SELECT id, session_id FROM chat_runs "
                f"WHERE id IN ({marks}) AND session_id IS NOT NULL",
                tuple(chunk) * 2,
            )
            for run_id, session_id in rows:
                found.setdefault(
                    stored_key(run_id),
                    SessionLink(db.path, stored_key(session_id), "web"),
                )

    @contextlib.contextmanager
    def _unless_damaged(self) -> Iterator[None]:
        """A file's part of a read across files, left out if it is called
        damaged where :attr:`skip_damaged` says to."""
        try:
            yield
        except DamagedError:
            if not self.skip_damaged:
                raise

    async def close(self) -> None:
        for db in self.databases:
            await db.close()


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
