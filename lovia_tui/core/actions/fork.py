"""Fork: the first N flat entries of a session become a new session; nothing is removed.

The non-destructive twin of rewind. A lovia web chat is forked by lovia web's
own ``ChatStore.fork`` (chat row, title and origin right; lovia names the
fork); any other session by lovia's ``SQLiteSession.append`` of the kept
segments, the cut one passed through ``drop_dangling_tool_calls`` with its
meta dropped, the very split lovia's rewind (and ``ChatStore.fork``) makes.
Run ids are kept under the new session id, as lovia web keeps them.

Journaled so undo removes the copy. lovia web only says which id it chose
once the fork exists, so its rows are journaled right after (as absent
before): a crash in between leaves a copy nothing journaled, never a loss.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.plans import (
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
from lovia_tui.core.actions.web_settle import chat_store
from lovia_tui.core.errors import ActionError, RowsChangedError
from lovia_tui.core.formatting import command_line
from lovia_tui.core.store.rows import Captured, RowGroup, capture, identity
from lovia_tui.core.store.workspace import Workspace

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
    keep = min(keep_entries, total)
    truncated, deleted, _ = _rewind_split(segments, keep)
    cut = {s.run_id for s in deleted} | ({truncated.run_id} if truncated else set())
    copied = tuple(s.run_id for s in segments if s.run_id not in cut)
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
        if keep < total:
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
        keep_entries=keep,
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
    if p.noop:
        return [
            f"fork {p.session_id}: nothing to copy (keeping {p.keep_entries} entries)"
        ]
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
            f"copy {len(whole)} whole run(s), same run ids: {', '.join(whole)}"
        )
    if t := p.truncated:
        lines.append(
            f"copy run {t.run_id} cut to its first {t.kept_entries} entries"
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
    """Make the fork through lovia and journal its rows, or raise
    RowsChangedError without changing anything (the source moved on since
    the preview: preview again)."""
    refuse_readonly(ws)
    if preview.noop:
        return ForkResult(preview.action, None, {}, None)
    db = ws.database(preview.file)
    now = await capture(db, RowGroup(db.path, "session_runs", preview.session_id))
    if now.digest != preview.source_digest:
        raise RowsChangedError(
            f"session {preview.session_id!r} changed since the preview; nothing was done: "
            "preview it again"
        )
    journal = journal or Journal()
    counts = {"runs_copied": len(preview.runs_copied)}
    if preview.web:
        new_id = await _fork_web(preview)
        groups = [RowGroup(db.path, table, new_id) for table in FORK_TABLES]
        after = [await capture(db, g) for g in groups]
        before = [_absent(c) for c in after]
        entry_id = await journal.begin(
            preview.action, _params(preview, new_id), reason, before,
            subject=_subject(preview, new_id), adds=[c.identities() for c in after],
        )  # fmt: skip
    else:
        new_id = preview.new_session_id or ""
        group = RowGroup(db.path, "session_runs", new_id)
        before = [await capture(db, group)]
        if before[0].rows:
            raise RowsChangedError(f"session {new_id!r} exists now; nothing was done")
        adds = [tuple(identity("text", r.encode()) for r in preview.runs_copied)]
        entry_id = await journal.begin(
            preview.action, _params(preview, new_id), reason, before,
            subject=_subject(preview, new_id), adds=adds,
        )  # fmt: skip
        try:
            await _fork_segments(preview, new_id)
        except Exception as exc:
            after = [await capture(db, group)]
            error = str(exc) or type(exc).__name__
            await journal.finish(
                entry_id, "failed", {}, error, list(zip(before, after, strict=True))
            )
            raise ActionError(
                f"fork failed ({error}); "
                f"`{command_line('undo', *ws.paths, entry_id, '--yes')}` "
                "removes what it copied"
            ) from exc
        after = [await capture(db, group)]
    await journal.finish(
        entry_id, "done", counts, None, list(zip(before, after, strict=True))
    )
    return ForkResult(preview.action, entry_id, counts, new_id)


def _subject(preview: ForkPreview, new_id: str) -> str:
    """The journal's one line: which session, copied into which."""
    return f"session {preview.session_id} into {new_id}"


def _params(preview: ForkPreview, new_id: str) -> dict[str, Any]:
    return {**preview.as_dict(), "new_session_id": new_id}


def _absent(captured: Captured) -> Captured:
    """The rows a fork's fresh id had before it: none."""
    return replace(captured, rows=(), rowids=())


async def _fork_web(preview: ForkPreview) -> str:
    store = await chat_store(preview.file)
    fork_id = await store.fork(preview.session_id, ref=preview.web_ref)
    if fork_id is None:
        raise ActionError("lovia web found nothing to copy")
    return fork_id


async def _fork_segments(preview: ForkPreview, new_id: str) -> None:
    """What ``ChatStore.fork`` does, for a session with no chat row: lovia's own
    rewind split of the source's segments, appended under the new id."""
    from lovia.stores.session import SQLiteSession, _rewind_split

    session = SQLiteSession(preview.file, wal=True)
    segments = await session.segments(preview.session_id)
    kept, boundary, _ = _rewind_split(segments, preview.keep_entries)
    for segment in [*kept, *([boundary] if boundary is not None else [])]:
        await session.append(
            new_id, segment.entries, run_id=segment.run_id, meta=segment.meta
        )
