"""Fork: the first N flat entries of a session become a new session; nothing is removed.

The non-destructive twin of rewind. A lovia web chat is forked by lovia web's
own ``ChatStore.fork`` (chat row, title and origin right; lovia names the
fork); any other session by lovia's ``SQLiteSession.append`` of the kept
segments, the cut one passed through ``drop_dangling_tool_calls`` with its
meta dropped, the very split lovia's rewind (and ``ChatStore.fork``) makes.
Run ids are kept under the new session id, as lovia web keeps them.

Journaled so undo removes the copy, and atomic: the copy is made in one
write transaction through lovia's own methods
(:mod:`lovia_tui.core.actions.locked_stores`), so a full disk or a kill leaves
no partial copy. lovia web only says which id it chose once the fork exists,
so a web fork is journaled (as absent before) inside that transaction,
before its commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.journal_file import JournalError, sqlite_cause
from lovia_tui.core.actions.perform import load_lovia
from lovia_tui.core.actions.plans import (
    capture_groups,
    refuse_readonly,
    require_current_chat,
    session_database,
)
from lovia_tui.core.actions.previews import Truncation
from lovia_tui.core.actions.session_plans import (
    _rewind_split,
    cut_session,
    user_turn_start,
)
from lovia_tui.core.errors import ActionError, RowsChangedError
from lovia_tui.core.formatting import plural
from lovia_tui.core.store.rows import (
    Captured,
    RowGroup,
    capture_all,
    capture_sync,
    identity,
)
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.core.stored import refuse_non_text, stored_key

FORK_TABLES = ("session_runs", "chat_sessions", "chat_ui_data")
"""What a fork writes under the new session id (the chat tables in a web file)."""


@dataclass(frozen=True)
class ForkPreview:
    """What ``fork`` copies: whole segments, a cut one, and under which id."""

    action: ClassVar[str] = "fork"
    file: Path
    session_id: str
    keep_entries: int
    total_entries: int
    new_session_id: str | None
    """None for a lovia web chat: ``ChatStore.fork`` names the fork itself."""
    web_ref: str | None
    """The user message (``"<run_id>:<n>"``) lovia web's fork cuts before; None
    for a whole-chat fork or another layout."""
    runs_copied: tuple[str, ...]
    truncated: Truncation | None
    entries_copied: int
    source_digest: str

    @property
    def web(self) -> bool:
        return self.new_session_id is None

    @property
    def past_end(self) -> bool:
        """Asked to keep more entries than the session has: nothing is copied,
        as ``rewind`` past the end removes nothing (``--keep`` the total copies all)."""
        return self.keep_entries > self.total_entries

    @property
    def noop(self) -> bool:
        return self.entries_copied == 0

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action, **asdict(self), "file": str(self.file)}


def _web_ref(segments: list, keep: int) -> str | None:
    """lovia web's ref for a cut before flat entry ``keep``: the user message there."""
    offset = 0
    for segment in segments:
        if keep < offset + len(segment.entries):
            entry = segment.entries[keep - offset]
            users = [
                e
                for e in segment.entries[: keep - offset]
                if e.get("type") == "input" and e.get("role") == "user"
            ]
            if entry.get("type") == "input" and entry.get("role") == "user":
                return f"{segment.run_id}:{len(users)}"
            return None
        offset += len(segment.entries)
    return None


def _user_starts(segments: list) -> list[int]:
    starts, offset = [], 0
    for segment in segments:
        for n, entry in enumerate(segment.entries):
            if entry.get("type") == "input" and entry.get("role") == "user":
                starts.append(offset + n)
        offset += len(segment.entries)
    return starts


async def preview_fork(
    ws: Workspace, session_id: str, keep_entries: int, new_id: str | None = None
) -> ForkPreview:
    """What forking the first ``keep_entries`` entries of ``session_id`` copies.

    lovia web forks a chat just before one of its user messages (or whole):
    for a web chat ``keep_entries`` must be such a message's flat index, or
    at least the chat's length, and the fork's id is lovia web's to choose.
    """
    db, rows, segments = await cut_session(ws, session_id, keep_entries, "fork")
    total = sum(len(s.entries) for s in segments)
    keep = 0 if keep_entries > total else keep_entries  # past the end: nothing
    truncated, deleted, _ = _rewind_split(segments, keep)
    cut = {s.run_id for s in deleted} | ({truncated.run_id} if truncated else set())
    copied = tuple(s.run_id for s in segments if s.run_id not in cut)
    for run_id in copied + ((truncated.run_id,) if truncated else ()):
        refuse_non_text("run", stored_key(run_id))  # the copy keeps it, through lovia
    entries = sum(len(s.entries) for s in segments if s.run_id in copied) + (
        truncated.kept_entries if truncated else 0
    )
    web = db.stores.chat and bool(
        await db.fetchone("SELECT 1 FROM chat_sessions WHERE id = ?", (session_id,))
    )
    ref = None
    if web:
        if new_id is not None:
            raise ActionError(
                f"{session_id!r} is a lovia web chat: lovia web names its forks itself (drop --as)"
            )
        await require_current_chat(db)
        if keep < total and keep_entries <= total:
            ref = _web_ref(segments, keep)
            if ref is None:
                starts = ", ".join(map(str, _user_starts(segments)[:20])) or "none"
                raise ActionError(
                    f"lovia web forks a chat just before one of its messages: keep N where "
                    f"N is a user message's index ({starts}), or {total} for the whole chat"
                )
    else:
        new_id = new_id or uuid.uuid4().hex
        if await ws.find_session(new_id) is not None:
            raise ActionError(f"session {new_id!r} already exists: choose another --as")
    return ForkPreview(
        file=db.path,
        session_id=session_id,
        keep_entries=keep_entries,
        total_entries=total,
        new_session_id=None if web else new_id,
        web_ref=ref,
        runs_copied=copied + ((truncated.run_id,) if truncated else ()),
        truncated=truncated,
        entries_copied=entries,
        source_digest=rows.digest,
    )


async def fork_point(ws: Workspace, session_id: str, index: int) -> int:
    """Where "fork here" cuts: before entry ``index``, or for a lovia web chat
    (forked only before a user message) before the user turn holding it."""
    db = await session_database(ws, session_id)
    if db.stores.chat and await db.fetchone(
        "SELECT 1 FROM chat_sessions WHERE id = ?", (session_id,)
    ):
        return await user_turn_start(ws, session_id, index)
    return index


def describe_fork(p: ForkPreview) -> list[str]:
    """The preview in words (first line the headline), as the other actions'."""
    target = (
        "a new lovia web chat (lovia web names it)" if p.web else repr(p.new_session_id)
    )
    if p.past_end:
        return [
            f"fork {p.session_id}: nothing to do: keeping {p.keep_entries} is past its "
            f"end ({plural(p.total_entries, 'entry', 'entries')}; keeping "
            f"{p.total_entries} copies all of it)"
        ]
    if p.noop:
        return [f"fork {p.session_id}: nothing to copy (keeping 0 entries)"]
    where = (
        f"everything before entry {p.keep_entries}"
        + (", where its user turn starts (lovia web forks there)" if p.web else "")
        if p.keep_entries < p.total_entries
        else "all of it"
    )
    lines = [
        f"fork {p.session_id}: copy its first {p.entries_copied} of {p.total_entries} "
        f"entries ({where}) into {target}; {p.session_id!r} is left as it is"
    ]
    whole = [r for r in p.runs_copied if not p.truncated or r != p.truncated.run_id]
    if whole:
        lines.append(
            f"copy {plural(len(whole), 'whole run')}, same run ids: {', '.join(whole)}"
        )
    if t := p.truncated:
        lines.append(
            f"copy run {t.run_id} cut to its first {plural(t.kept_entries, 'entry', 'entries')}"
            + (
                "; its meta (context state, timing) is not copied"
                if t.loses_meta
                else ""
            )
        )
        lines += [
            f"  leave out {c.name}({c.arguments}) [{c.call_id}]: no result before the cut"
            for c in t.dropped_calls
        ]
    return lines


@dataclass(frozen=True)
class ForkResult:
    """What a fork did: the new session's id; ``journal_id`` undoes it.
    ``warnings`` as :class:`~lovia_tui.core.actions.perform.ActionResult`'s (none yet)."""

    action: str
    journal_id: int | None
    counts: dict[str, int]
    new_session_id: str | None
    warnings: tuple[str, ...] = ()


async def perform_fork(
    ws: Workspace,
    preview: ForkPreview,
    *,
    reason: str | None = None,
    journal: Journal | None = None,
) -> ForkResult:
    """Make the fork through lovia in one transaction, journaled, or raise
    RowsChangedError without changing anything (the source moved on since
    the preview: preview again)."""
    refuse_readonly(ws)
    if preview.noop:
        return ForkResult(preview.action, None, {}, None)
    journal = journal or Journal()
    load_lovia()
    entry_id: int | None = None
    if not preview.web:  # its id is known: journal it before the lock is taken
        new_id = preview.new_session_id or ""
        group = RowGroup(preview.file, "session_runs", new_id)
        adds = [tuple(identity("text", r.encode()) for r in preview.runs_copied)]
        [before] = await capture_groups(ws, [group])
        if before.rows:
            raise RowsChangedError(f"session {new_id!r} exists now; nothing was done")
        entry_id = await journal.begin(
            preview.action, _params(preview, new_id), reason, [before],
            subject=_subject(preview, new_id), adds=adds,
        )  # fmt: skip
    fork = _Fork(preview, journal, reason, entry_id)
    try:
        return await _fork_journaled(fork)
    finally:  # however it ends: the entry runs no more
        if fork.entry_id is not None:
            journal.release(fork.entry_id)


async def _fork_journaled(fork: _Fork) -> ForkResult:
    journal = fork.journal
    try:
        await asyncio.to_thread(fork.run)
    except (RowsChangedError, JournalError):
        if fork.entry_id is not None:
            await journal.finish(fork.entry_id, "rolled back", {}, "nothing changed")
        raise
    except Exception as exc:
        error = str(exc) or type(exc).__name__
        if isinstance(exc, sqlite3.Error):
            error = f"{fork.preview.file}: {sqlite_cause(exc)}"
        if fork.entry_id is not None:
            await journal.finish(fork.entry_id, "rolled back", {}, error)
        raise ActionError(
            f"fork failed and was rolled back, nothing changed: {error}"
        ) from exc
    assert fork.entry_id is not None and fork.new_id is not None
    counts = {"runs_copied": len(fork.preview.runs_copied)}
    warnings = []
    try:
        await journal.finish(fork.entry_id, "done", counts, None, fork.changes)
    except JournalError as exc:  # committed: say so, and how to undo it anyway
        warnings.append(
            f"done, but the journal could not record that it finished ({exc}): "
            f"entry {fork.entry_id} stays pending, and undoing it removes the copy"
        )
    return ForkResult(
        fork.preview.action, fork.entry_id, counts, fork.new_id, tuple(warnings)
    )


class _Fork:
    """The fork under one write lock (on a worker thread): check the source, copy
    through lovia, journal the copy if its id was lovia web's to choose, commit."""

    def __init__(
        self,
        preview: ForkPreview,
        journal: Journal,
        reason: str | None,
        entry_id: int | None,
    ) -> None:
        self.preview, self.journal, self.reason = preview, journal, reason
        self.entry_id = entry_id
        self.new_id = preview.new_session_id
        self.changes: list[tuple[Captured, Captured]] = []

    def run(self) -> None:
        from lovia_tui.core.actions.locked_stores import Stores, fork_copy
        from lovia_tui.core.actions.write_lock import held_write

        preview = self.preview
        with held_write([preview.file]) as held:
            stores = Stores(held)
            conn = stores.connection(preview.file)
            source = RowGroup(preview.file, "session_runs", preview.session_id)
            if capture_sync(conn, source).digest != preview.source_digest:
                raise RowsChangedError(
                    f"session {preview.session_id!r} changed since the preview; "
                    "nothing was done: preview it again"
                )
            tables = FORK_TABLES if preview.web else FORK_TABLES[:1]
            if self.new_id is not None:
                target = RowGroup(preview.file, "session_runs", self.new_id)
                if capture_sync(conn, target).rows:
                    raise RowsChangedError(
                        f"session {self.new_id!r} exists now; nothing was done"
                    )
            self.new_id = asyncio.run(
                fork_copy(stores, preview.file, preview.session_id, self.new_id,
                          preview.keep_entries, preview.web_ref)
            )  # fmt: skip
            groups = [RowGroup(preview.file, table, self.new_id) for table in tables]
            after = capture_all(stores.connection, groups)
            before = [replace(c, rows=(), rowids=()) for c in after]
            if self.entry_id is None:  # lovia web named it just now
                self.entry_id = self.journal.begin_sync(
                    preview.action, _params(preview, self.new_id), self.reason, before,
                    None, _subject(preview, self.new_id), [c.identities() for c in after],
                )  # fmt: skip
            self.changes = list(zip(before, after, strict=True))


def _subject(preview: ForkPreview, new_id: str) -> str:
    """The journal's one line: which session, copied into which."""
    return f"session {preview.session_id} into {new_id}"


def _params(preview: ForkPreview, new_id: str) -> dict[str, Any]:
    return {**preview.as_dict(), "new_session_id": new_id}
