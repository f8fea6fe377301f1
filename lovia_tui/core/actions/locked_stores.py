"""lovia's own store methods, run inside a write transaction lovia-tui holds.

The one module that touches lovia's internals. lovia's SQLite stores open a
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
all its split changes: :meth:`LockedSession.rewind_from`). :func:`check_lovia_shape` refuses to act if the plumbing is not
what this module overrides; ``tests/core/test_locked_stores.py`` holds it to that.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sqlite3
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from lovia.stores.checkpointer import SQLiteCheckpointer
from lovia.stores.session import SQLiteSession
from lovia.web.store import ChatStore

from lovia_tui.core.errors import ActionError
from lovia_tui.core.lovia_private import SQLiteStore, rewind_split
from lovia_tui.core.store.connect import write_connection
from lovia_tui.core.store.rows import Cell

T = TypeVar("T")
Parsed = dict[str, list[list[Any]]]
"""Segments parsed before the lock: by their text, one entry list per row."""

# The plumbing overridden below, as lovia 0.9 spells it.
_PLUMBING = {
    "_connect": ["self"],
    "_release": ["self", "conn"],
    "_conn": ["self"],
    "_tx": ["self"],
    "_run": ["self", "fn"],
}


REWIND_READ = (
    "SELECT id, run_id, entries_json FROM session_runs "
    "WHERE session_id = ? ORDER BY id ASC"
)
"""The read ``SQLiteSession.rewind`` starts with: every segment of the session."""
REWIND_PARSE = "entries=[entry_from_dict(d) for d in json.loads(r[2])]"
"""How ``SQLiteSession.rewind`` parses each segment it read (its row's text)."""
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
    rewind_from: tuple[str, int, list[tuple[Any, ...]] | None] | None = None
    """(session, row id, rows): lovia's rewind reads that session's segments
    from that row on, served ``rows`` where they were read before the lock
    (:meth:`LockedSession.rewind_from`)."""

    def commit(self) -> None:
        self.lovia_commits += 1

    def rollback(self) -> None:
        self.lovia_rollbacks += 1

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        if self.rewind_from is not None and sql == REWIND_READ:
            session_id, row_id, served = self.rewind_from
            if tuple(parameters) == (session_id,):
                if served is not None:
                    return _Served(served)
                return super().execute(_REWIND_READ_FROM, (session_id, row_id))
        return super().execute(sql, parameters)


class _Served:
    """A read answered from rows read before (``fetchall``, as lovia's rewind
    asks it; :func:`rewind_reads_as_known` holds it to that)."""

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
        read: RewindRead | None = None,
    ) -> int:
        """``rewind(session_id, keep_entries=keep_entries)``, lovia's own, with
        the segments before row ``row_id`` (``before`` entries, all kept) left
        out of what it reads: it parsed every segment of the session inside
        the lock (a 2,000-run session held lovia's writers 50–100 ms), and its
        split changes only the run the cut lands in and those after it. The
        caller has checked, under the lock, that the rows are the preview's.
        ``read``: those segments as lovia reads and parses them, prepared
        before the lock (:func:`prepare_rewind_read`) and served to its rewind.
        A lovia whose rewind reads otherwise is given the whole session."""
        if before > keep_entries or not rewind_reads_as_known():
            return await self.rewind(session_id, keep_entries=keep_entries)
        self._held.rewind_from = (session_id, row_id, read.rows if read else None)
        try:
            return await _rewind_served(read.parsed if read else {})(
                self, session_id, keep_entries=keep_entries - before
            )
        finally:
            self._held.rewind_from = None


@dataclasses.dataclass(frozen=True)
class RewindRead:
    """What lovia's rewind reads and parses from a cut on, done before the lock."""

    rows: list[tuple[Any, ...]] | None
    """Its read (:data:`REWIND_READ` from the cut), as ``sqlite3`` returns it,
    served in its place: valid once the check found the session's rows as
    captured (reading 2,500 rows again took ~10 ms of the lock). None where a
    text is not UTF-8: lovia's read fails on it, under the lock."""
    parsed: Parsed
    """Their texts parsed (:func:`parse_segments`)."""


def prepare_rewind_read(rows: Iterable[tuple[int, Cell, Cell]]) -> RewindRead:
    """lovia's rewind's read and parse of ``rows`` (rowid, run id and entries
    cells as captured, in rowid order), before the lock."""
    try:
        read = [(rowid, _as_read(run), _as_read(text)) for rowid, run, text in rows]
    except UnicodeDecodeError:
        return RewindRead(None, {})
    return RewindRead(read, parse_segments(r[2] for r in read if isinstance(r[2], str)))


def _as_read(cell: Cell) -> Any:
    """A stored value as ``sqlite3`` gives it (text decoded strictly, as it does)."""
    kind, value = cell
    if kind == "text":
        return bytes(value).decode()
    return bytes(value) if kind == "blob" else value


def parse_segments(texts: Iterable[str]) -> Parsed:
    """lovia's rewind's own parse of each segment's text (:data:`REWIND_PARSE`),
    done before the lock is taken: by text, one entry list per row holding it.
    A text lovia cannot parse is left out, for lovia to meet under the lock."""
    from lovia.transcript import entry_from_dict

    parsed: Parsed = {}
    for text in texts:
        try:
            entries = [entry_from_dict(d) for d in json.loads(text)]
        except Exception:  # lovia's parse raises it again, under the lock
            continue
        parsed.setdefault(text, []).append(entries)
    return parsed


class _ParsedJson:
    """The ``json`` lovia's rewind sees in :func:`_rewind_served`: a text
    parsed before the lock gives the entries built from it (once per row
    that held it: each segment keeps objects of its own), any other text is
    parsed as lovia would. Equal text is the check that the parse still holds."""

    def __init__(self, parsed: Parsed) -> None:
        self._parsed = {text: iter(rows) for text, rows in parsed.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    def loads(self, text: Any, *args: Any, **kwargs: Any) -> Any:
        rows = self._parsed.get(text) if isinstance(text, str) else None
        entries = None if rows is None or args or kwargs else next(rows, None)
        return json.loads(text, *args, **kwargs) if entries is None else entries


def _rewind_served(parsed: Parsed) -> Callable[..., Any]:
    """``SQLiteSession.rewind``, its code as written, with the segments parsed
    before the lock served in place of parsing them under it (a half rewind of
    2,000 runs spent ~25 ms of the lock parsing): its ``json.loads`` finds
    them by their text, its ``entry_from_dict`` passes lovia's entries through
    (``json`` never makes one)."""
    from lovia.transcript import TranscriptEntry, entry_from_dict

    rewind = SQLiteSession.rewind
    built = typing.get_args(TranscriptEntry)

    def from_dict(data: Any) -> Any:
        return data if isinstance(data, built) else entry_from_dict(data)

    names = {
        **rewind.__globals__,
        "json": _ParsedJson(parsed),
        "entry_from_dict": from_dict,
    }
    function = types.FunctionType(
        rewind.__code__, names, rewind.__name__, rewind.__defaults__,
        rewind.__closure__,
    )  # fmt: skip
    function.__kwdefaults__ = rewind.__kwdefaults__
    return function


@functools.cache
def rewind_reads_as_known() -> bool:
    """Whether lovia's rewind reads the session with :data:`REWIND_READ`,
    splits it with ``_rewind_split`` and writes rows only by their id."""
    # Its source, one line, adjacent string literals joined: "a " "b" -> "a b".
    source = " ".join(inspect.getsource(SQLiteSession.rewind).split())
    source = source.replace('" "', "")
    return all(
        part in source
        for part in (
            f'"{REWIND_READ}", (session_id,), ).fetchall()',
            REWIND_PARSE,
            "_rewind_split(segments, keep_entries)",
            '"UPDATE session_runs SET entries_json = ?, meta_json = NULL WHERE id = ?"',
            '"DELETE FROM session_runs WHERE id = ?"',
        )
    )


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
