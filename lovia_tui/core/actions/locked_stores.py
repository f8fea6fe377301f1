"""lovia's own store methods, run inside a write transaction lovia-tui holds.

The one module that points lovia's store plumbing elsewhere (what its
rewind and trim compute is served from :mod:`~lovia_tui.core.actions.lovia_served`).
lovia's SQLite stores open a
connection per call and run one transaction on it (``lovia/stores/_sqlite.py``:
``_connect`` hands out the connection, ``_tx`` commits it, ``_release`` closes
it, ``_run`` moves the call to a thread). The subclasses here point that
plumbing at a connection already holding the file's write lock, taken
where lovia-tui checked the rows against the preview
(:mod:`~lovia_tui.core.actions.write_lock`): no other process can write
between the check and lovia's change, and every lovia method of one action
commits (or rolls back) together. lovia's logic — the rewind split,
``drop_dangling_tool_calls``, the trim marker — is untouched: its methods run
as written (a rewind is served only the segments from the cut on, which are
all its split changes: :meth:`LockedSession.rewind_from`).
:func:`check_lovia_shape` refuses to act if the plumbing is not what this
module overrides; ``tests/core/test_locked_stores.py`` holds it to that.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sqlite3
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from lovia.stores.checkpointer import SQLiteCheckpointer
from lovia.stores.session import SQLiteSession
from lovia.web.store import ChatStore

from lovia_tui.core.actions.lovia_served import (
    REWIND_READ,
    Prepared,
    reads_as_known,
    served,
)
from lovia_tui.core.errors import ActionError
from lovia_tui.core.lovia_private import SQLiteStore, rewind_split
from lovia_tui.core.store.connect import write_connection

T = TypeVar("T")

# The plumbing overridden below, as lovia 0.9 spells it.
_PLUMBING = {
    "_connect": ["self"],
    "_release": ["self", "conn"],
    "_conn": ["self"],
    "_tx": ["self"],
    "_run": ["self", "fn"],
}


NOTHING_SERVED: Mapping[Any, Any] = types.MappingProxyType({})
_REWIND_READ_FROM = (
    "SELECT id, run_id, entries_json FROM session_runs "
    "WHERE session_id = ? AND id >= ? ORDER BY id ASC"
)


class HeldConnection(sqlite3.Connection):
    """A connection holding the file's write lock, whose transaction lovia-tui ends.

    lovia's ``_tx`` commits (or rolls back) after each method; here those calls
    are only counted, so all of an action's lovia methods share one
    transaction, committed by
    :func:`~lovia_tui.core.actions.write_lock.held_write` once the action is done.
    """

    path: Path
    lovia_commits: int
    lovia_rollbacks: int
    locked_at: float = 0.0
    """When its write lock was taken (``time.perf_counter()``)."""
    rewind_from: tuple[str, int] | None = None
    """(session, row id): lovia's rewind reads that session's segments from
    that row on (:meth:`LockedSession.rewind_from`)."""
    served: Mapping[tuple[str, tuple[Any, ...]], list[tuple[Any, ...]]] = NOTHING_SERVED
    """Reads answered with rows read before the lock, by statement and
    parameters (:mod:`~lovia_tui.core.actions.lovia_served`)."""

    def commit(self) -> None:
        self.lovia_commits += 1

    def rollback(self) -> None:
        self.lovia_rollbacks += 1

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        rows = self.served.get((sql, tuple(parameters))) if self.served else None
        if rows is not None:
            return _Served(rows)
        if self.rewind_from is not None and sql == REWIND_READ:
            session_id, row_id = self.rewind_from
            if tuple(parameters) == (session_id,):
                return super().execute(_REWIND_READ_FROM, (session_id, row_id))
        return super().execute(sql, parameters)


class _Served:
    """A read answered from rows read before (``fetchall``, as lovia's rewind
    and trim ask it; ``lovia_served.reads_as_known`` holds them to that)."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)


@functools.cache
def check_lovia_shape() -> None:
    """Refuse to act if lovia's store plumbing changed shape (another lovia version)."""
    for name, params in _PLUMBING.items():
        found = getattr(SQLiteStore, name, None)
        if found is None or list(inspect.signature(found).parameters) != params:
            raise ActionError(
                f"this lovia's SQLiteStore.{name} is not what lovia-tui was built "
                "against (lovia 0.9): refusing to act; install the lovia version "
                "lovia-tui pins"
            )


def open_held(path: Path) -> HeldConnection:
    """A connection that may write ``path``, for lovia's methods to run on."""
    conn: HeldConnection = write_connection(path, HeldConnection)
    conn.path, conn.lovia_commits, conn.lovia_rollbacks = path, 0, 0
    conn.row_factory = sqlite3.Row  # as lovia's _connect sets it
    return conn


class _OnHeld:
    """lovia's store plumbing pointed at a held connection."""

    _held: HeldConnection
    _schema_ready: bool

    def _connect(self) -> sqlite3.Connection:
        return self._held

    def _release(self, conn: sqlite3.Connection) -> None:
        """The holder closes it, after the commit."""

    async def _run(self, fn: Callable[[], T]) -> T:
        # Already on a worker thread with a loop of its own; and no retry:
        # a retry inside the held transaction would repeat what already ran.
        return fn()

    def _hold(self, held: HeldConnection) -> None:
        if "_schema_ready" not in vars(self):
            raise ActionError("this lovia's stores no longer track their schema check")
        # The preview found the store's tables; lovia's schema check would
        # start a second transaction on this connection.
        self._held, self._schema_ready = held, True


class LockedSession(_OnHeld, SQLiteSession):
    """``SQLiteSession`` whose every method runs on the held connection."""

    def __init__(self, held: HeldConnection) -> None:
        SQLiteSession.__init__(self, held.path)
        self._hold(held)

    async def rewind_from(
        self,
        session_id: str,
        *,
        keep_entries: int,
        row_id: int,
        before: int,
        prepared: Prepared | None = None,
    ) -> int:
        """``rewind(session_id, keep_entries=keep_entries)``, lovia's own, with
        the segments before row ``row_id`` (``before`` entries, all kept) left
        out of what it reads: it parsed every segment of the session inside
        the lock (a 2,000-run session held lovia's writers 50–100 ms), and its
        split changes only the run the cut lands in and those after it. The
        caller has checked, under the lock, that the rows are the preview's.
        ``prepared``: its read from the cut and parses
        (:func:`~lovia_tui.core.actions.lovia_served.prepare_rewind`), served.
        A lovia whose rewind reads otherwise is given the whole session."""
        if before > keep_entries or not reads_as_known("rewind"):
            return await self.rewind(session_id, keep_entries=keep_entries)
        with self._serving(
            session_id, prepared or Prepared(REWIND_READ, None), from_row=row_id
        ) as serve:
            return await serve(SQLiteSession.rewind)(
                self, session_id, keep_entries=keep_entries - before
            )

    async def trim(
        self,
        session_id: str,
        *,
        keep_chars: int,
        keep_runs: int,
        prepared: Prepared | None = None,
    ) -> int:
        """``trim_tool_results``, lovia's own, served the read, parses, trims
        and texts ``prepared`` holds
        (:func:`~lovia_tui.core.actions.lovia_served.prepare_trim`): a trim of
        1,000 runs did them under the lock, 170–210 ms. The caller has checked,
        under the lock, that the rows are the preview's."""
        if prepared is None or not reads_as_known("trim_tool_results"):
            return await self.trim_tool_results(
                session_id, keep_chars=keep_chars, keep_runs=keep_runs
            )
        with self._serving(session_id, prepared) as serve:
            return await serve(SQLiteSession.trim_tool_results)(
                self, session_id, keep_chars=keep_chars, keep_runs=keep_runs
            )

    @contextlib.contextmanager
    def _serving(
        self, session_id: str, prepared: Prepared, from_row: int | None = None
    ) -> Iterator[Callable[[Callable[..., Any]], Callable[..., Any]]]:
        """Its read answered with ``prepared``'s rows for the block (or, for a
        rewind, read from row ``from_row`` on), which is given
        :func:`~lovia_tui.core.actions.lovia_served.served` for it."""
        if from_row is not None:
            self._held.rewind_from = (session_id, from_row)
        if prepared.rows is not None:
            self._held.served = {(prepared.read, (session_id,)): prepared.rows}
        try:
            yield lambda method: served(method, prepared)
        finally:
            self._held.served, self._held.rewind_from = NOTHING_SERVED, None


class LockedCheckpointer(_OnHeld, SQLiteCheckpointer):
    """``SQLiteCheckpointer`` whose every method runs on the held connection."""

    def __init__(self, held: HeldConnection) -> None:
        SQLiteCheckpointer.__init__(self, held.path)
        self._hold(held)


class _LockedMeta(_OnHeld, SQLiteStore):
    def __init__(self, held: HeldConnection) -> None:
        SQLiteStore.__init__(self, held.path, "", name="chat")
        self._hold(held)


class LockedChatStore(ChatStore):
    """lovia web's ``ChatStore`` with its metadata store on the held connection.

    Its constructor's own schema check is skipped: the preview refused a file
    whose chat tables lovia would migrate (``require_current_chat``).
    """

    def __init__(self, held: HeldConnection) -> None:  # noqa: D107
        self.session = LockedSession(held)
        self.checkpointer = LockedCheckpointer(held)
        self._meta = _LockedMeta(held)


class Stores:
    """The locked lovia stores of one action, by file, made on first use."""

    def __init__(self, held: dict[Path, HeldConnection]) -> None:
        check_lovia_shape()
        self.held = held
        self._by_name: dict[Path, HeldConnection] = {}
        self._made: dict[tuple[type, Path], Any] = {}

    def connection(self, file: Path) -> HeldConnection:
        """The held connection of ``file`` (as the preview names it: resolved once)."""
        if file not in self._by_name:
            conn = self.held.get(Path(file).resolve())
            if conn is None:
                raise ActionError(f"{file} is not locked for this action")
            self._by_name[file] = conn
        return self._by_name[file]

    def _get(self, kind: type, file: Path) -> Any:
        if (kind, file) not in self._made:
            self._made[kind, file] = kind(self.connection(file))
        return self._made[kind, file]

    def session(self, file: Path) -> LockedSession:
        return self._get(LockedSession, file)

    def checkpointer(self, file: Path) -> LockedCheckpointer:
        return self._get(LockedCheckpointer, file)

    def chat(self, file: Path) -> LockedChatStore:
        return self._get(LockedChatStore, file)


async def fork_copy(
    stores: Stores,
    file: Path,
    session_id: str,
    new_id: str | None,
    keep_entries: int,
    web_ref: str | None,
) -> str:
    """Copy a session's first entries under ``new_id`` on the held connection; its id.

    ``new_id`` None: a lovia web chat, forked by ``ChatStore.fork`` (which
    names it). Otherwise what that method does for a session with no chat
    row: lovia's own rewind split of the segments, appended under the new id.
    """
    if new_id is None:
        fork_id = await stores.chat(file).fork(session_id, ref=web_ref)
        if fork_id is None:
            raise ActionError("lovia web found nothing to copy")
        return fork_id
    session = stores.session(file)
    segments = await session.segments(session_id)
    kept, boundary, _ = rewind_split()(segments, keep_entries)
    for segment in [*kept, *([boundary] if boundary is not None else [])]:
        await session.append(
            new_id, segment.entries, run_id=segment.run_id, meta=segment.meta
        )
    return new_id
