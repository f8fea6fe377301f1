"""The journal: audit records, byte-identical undo, and refusals that keep data safe."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from lovia import SQLiteSession
from support.lovia_factory import append_entries, rows

from lovia_tui.core.actions.journal import Journal
from lovia_tui.core.actions.journal_file import journal_path
from lovia_tui.core.actions.perform import perform, undo
from lovia_tui.core.actions.previews import Preview
from lovia_tui.core.actions.run_plans import preview_delete_runs, preview_finalize
from lovia_tui.core.actions.session_plans import (
    preview_clear,
    preview_rewind,
)
from lovia_tui.core.actions.trim_plan import preview_trim
from lovia_tui.core.errors import ActionError
from lovia_tui.core.store.workspace import Workspace

pytestmark = pytest.mark.usefixtures("private_journal")

MakePreview = Callable[[Workspace], Awaitable[Preview]]
TWO_FILE_ACTIONS: dict[str, MakePreview] = {
    "rewind": lambda ws: preview_rewind(ws, "s", 6),
    "trim": lambda ws: preview_trim(ws, "s", keep_chars=10),
    "clear": lambda ws: preview_clear(ws, "s"),
    "delete-run": lambda ws: preview_delete_runs(ws, ["s-1", "crashed"], force=True),
    "finalize": lambda ws: preview_finalize(ws, "crashed", "s", stale_after=0),
}
WEB_ACTIONS: dict[str, MakePreview] = {
    "rewind": lambda ws: preview_rewind(ws, "chat", 2, stale_after=0),
    "finalize": lambda ws: preview_finalize(ws, "inflight", stale_after=0),
    "clear": lambda ws: preview_clear(ws, "chat", stale_after=0),
}


async def _perform(
    paths: list[Path], make: MakePreview, reason: str | None = None
) -> int:
    ws = await Workspace.open(paths)
    try:
        result = await perform(ws, await make(ws), reason=reason)
    finally:
        await ws.close()
    assert result.journal_id is not None
    return result.journal_id


async def _undo(paths: list[Path], entry_id: int) -> None:
    ws = await Workspace.open(paths)
    try:
        await undo(ws, entry_id)
    finally:
        await ws.close()


@pytest.mark.parametrize("action", TWO_FILE_ACTIONS)
async def test_undo_restores_rows_byte_identical(
    two_files: tuple[Path, Path], action: str
) -> None:
    paths = list(two_files)
    before = [rows(p) for p in paths]
    entry_id = await _perform(paths, TWO_FILE_ACTIONS[action])
    assert [rows(p) for p in paths] != before
    await _undo(paths, entry_id)
    assert [rows(p) for p in paths] == before


@pytest.mark.parametrize("action", WEB_ACTIONS)
async def test_undo_restores_web_ui_rows(web_file: Path, action: str) -> None:
    """Chat pointers and run records come back with the transcript and checkpoint."""
    before = rows(web_file)
    entry_id = await _perform([web_file], WEB_ACTIONS[action])
    assert rows(web_file) != before
    await _undo([web_file], entry_id)
    assert rows(web_file) == before


async def test_undo_keeps_values_lovia_never_writes(
    two_files: tuple[Path, Path],
) -> None:
    """Storage classes and invalid UTF-8 survive: restore copies bytes, not strings."""
    sessions, runs = two_files
    with sqlite3.connect(sessions) as conn:  # another program's odd values
        conn.execute(
            "UPDATE session_runs SET meta_json = X'00FF10' WHERE run_id = 's-1'"
        )
        conn.execute(
            "UPDATE session_runs SET meta_json = CAST(X'7BC3' AS TEXT) WHERE run_id = 's-2'"
        )
        conn.execute(
            "UPDATE session_runs SET created_at = 0.1 + 0.2 WHERE run_id = 's-0'"
        )
    before = rows(sessions)
    entry_id = await _perform([sessions, runs], lambda ws: preview_rewind(ws, "s", 4))
    await _undo([sessions, runs], entry_id)
    assert rows(sessions) == before
    with sqlite3.connect(sessions) as conn:
        kinds = conn.execute(
            "SELECT typeof(meta_json) FROM session_runs ORDER BY id"
        ).fetchall()
    assert kinds == [("text",), ("blob",), ("text",)]


async def test_undo_refused_after_lovia_changed_the_rows(
    two_files: tuple[Path, Path],
) -> None:
    """A row the rewind left (its truncated segment) rewritten since: undo would lose it."""
    sessions, runs = two_files
    entry_id = await _perform([sessions, runs], lambda ws: preview_rewind(ws, "s", 6))
    await SQLiteSession(sessions, wal=True).rewind("s", keep_entries=4)
    changed = rows(sessions)
    with pytest.raises(
        ActionError, match=r"\(rewind\): the session_runs rows for 's' changed since"
    ):
        await _undo([sessions, runs], entry_id)
    assert rows(sessions) == changed
    assert (
        await Journal().get(entry_id)
    ).undoable is None  # still undoable once it matches


async def test_undo_keeps_runs_appended_since(two_files: tuple[Path, Path]) -> None:
    """An agent kept appending after the rewind: undo puts the cut runs back, keeps its runs."""
    sessions, runs = two_files
    before = rows(sessions)["session_runs"]
    entry_id = await _perform([sessions, runs], lambda ws: preview_rewind(ws, "s", 4))
    await append_entries(sessions, "s", 2, prefix="later")
    await _undo([sessions, runs], entry_id)
    after = rows(sessions)["session_runs"]
    assert after[: len(before)] == before
    assert [r[2] for r in after[len(before) :]] == ["'later-0'", "'later-1'"]


async def test_undo_ignores_other_sessions(two_files: tuple[Path, Path]) -> None:
    """Only the action's own rows are compared and restored."""
    sessions, runs = two_files
    before = rows(sessions)["session_runs"]
    entry_id = await _perform([sessions, runs], lambda ws: preview_rewind(ws, "s", 4))
    await append_entries(sessions, "elsewhere", 2)
    await _undo([sessions, runs], entry_id)
    after = rows(sessions)["session_runs"]
    assert [r for r in after if r[1] == "'s'"] == before
    assert len([r for r in after if r[1] == "'elsewhere'"]) == 2


async def test_undo_once_then_redo(two_files: tuple[Path, Path]) -> None:
    paths = list(two_files)
    original = rows(paths[0])
    entry_id = await _perform(paths, lambda ws: preview_rewind(ws, "s", 4))
    rewound = rows(paths[0])
    await _undo(paths, entry_id)
    with pytest.raises(ActionError, match="already undone"):
        await _undo(paths, entry_id)
    journal = Journal()
    entry = await journal.get(entry_id)
    assert entry.undone_by is not None
    undo_entry = await journal.get(entry.undone_by)
    assert (undo_entry.action, undo_entry.undoes, undo_entry.status) == (
        "undo",
        entry_id,
        "done",
    )
    await _undo(paths, undo_entry.id)  # undoing the undo redoes the rewind
    assert rows(paths[0]) == rewound
    assert rows(paths[0]) != original


async def test_journal_records_the_audit(
    two_files: tuple[Path, Path], private_journal: Path
) -> None:
    sessions, runs = two_files
    await _perform([sessions, runs], lambda ws: preview_trim(ws, "s", keep_chars=10))
    entry_id = await _perform(
        [sessions, runs], lambda ws: preview_rewind(ws, "s", 4), "bad answer"
    )
    journal = Journal()
    assert journal.path == private_journal == journal_path()
    [entry, trim] = await journal.entries([sessions])
    assert (entry.id, entry.action, entry.reason, entry.status) == (
        entry_id,
        "rewind",
        "bad answer",
        "done",
    )
    assert entry.user
    assert entry.params["session_id"] == "s" and entry.params["keep_entries"] == 4
    assert entry.counts == {"entries_removed": 8, "checkpoints_deleted": 2}
    assert entry.databases == tuple(sorted(str(p.resolve()) for p in (sessions, runs)))
    assert trim.action == "trim"
    assert await journal.entries([Path("/nonexistent.db")]) == []
    last = await journal.last_undoable([sessions])
    assert last is not None and last.id == entry_id


async def test_undo_refused_on_a_readonly_workspace(
    two_files: tuple[Path, Path],
) -> None:
    sessions, runs = two_files
    entry_id = await _perform([sessions, runs], lambda ws: preview_rewind(ws, "s", 4))
    ws = await Workspace.open([sessions, runs], readonly=True)
    try:
        with pytest.raises(ActionError, match="read-only"):
            await undo(ws, entry_id)
    finally:
        await ws.close()


async def test_undo_needs_every_file_open(two_files: tuple[Path, Path]) -> None:
    sessions, runs = two_files
    entry_id = await _perform([sessions, runs], lambda ws: preview_rewind(ws, "s", 4))
    with pytest.raises(ActionError, match="not open"):
        await _undo([sessions], entry_id)


def test_journal_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOVIA_TUI_JOURNAL", str(tmp_path / "j.db"))
    assert journal_path() == tmp_path / "j.db"
    monkeypatch.delenv("LOVIA_TUI_JOURNAL")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert journal_path() == tmp_path / "state" / "lovia-tui" / "journal.db"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert journal_path() == tmp_path / ".local" / "state" / "lovia-tui" / "journal.db"


async def test_lovia_failing_rolls_everything_back(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """lovia raising half way (checkpoints deleted, then its rewind refused) changes nothing."""
    from lovia_tui.core.actions.locked_stores import HeldConnection

    sessions, runs = two_files
    before = [rows(sessions), rows(runs)]
    execute = HeldConnection.execute

    def refusing(self, sql, *params):
        if sql.lstrip().upper().startswith("DELETE FROM SESSION_RUNS"):
            raise sqlite3.IntegrityError("deletes forbidden")
        return execute(self, sql, *params)

    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_rewind(ws, "s", 4)
        monkeypatch.setattr(HeldConnection, "execute", refusing)
        with pytest.raises(
            ActionError, match="rolled back, nothing changed: deletes forbidden"
        ):
            await perform(ws, preview)
        [entry] = await Journal().entries([runs])
        assert (entry.status, entry.error) == ("rolled back", "deletes forbidden")
        assert "rolled back" in (entry.undoable or "")
    finally:
        await ws.close()
    assert [rows(sessions), rows(runs)] == before


def _failing_commits(file: Path, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Make every commit of ``file`` by a held connection fail, until the
    returned list is cleared."""
    from lovia_tui.core.actions.locked_stores import HeldConnection

    execute, failing = HeldConnection.execute, [True]

    def failing_commit(self, sql, *params):
        if failing and sql == "COMMIT" and self.path == file.resolve():
            raise sqlite3.OperationalError("disk I/O error")
        return execute(self, sql, *params)

    monkeypatch.setattr(HeldConnection, "execute", failing_commit)
    return failing


async def test_a_commit_failing_after_another_files_is_undone(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """runs.db committed, sessions.db's commit failed: the entry says so, undo mends it."""
    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    failing = _failing_commits(sessions, monkeypatch)
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_rewind(ws, "s", 4)
        with pytest.raises(ActionError, match="interrupted half way") as raised:
            await perform(ws, preview)
        failing.clear()
        assert f"undo {sessions.resolve()} {runs.resolve()} 1 --yes" in str(
            raised.value
        )
        assert rows(sessions) == before[0] and rows(runs) != before[1]
        [entry] = await Journal().entries([runs])
        assert (entry.status, entry.unfinished) == ("failed", True)
        await undo(ws, entry.id)
    finally:
        await ws.close()
    assert (rows(sessions), rows(runs)) == before


async def test_an_undo_whose_second_commit_fails_is_finished_by_undoing_again(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An undo across two files, runs.db's commit in and sessions.db's failed:
    the undo's own entry is left unfinished (not "rolled back": one file
    changed), the error says how to finish, and undoing again does."""
    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    ws = await Workspace.open([sessions, runs])
    try:
        done = await perform(ws, await preview_rewind(ws, "s", 4))
        failing = _failing_commits(sessions, monkeypatch)
        with pytest.raises(ActionError, match="interrupted half way") as raised:
            await undo(ws, done.journal_id)
        failing.clear()
        assert f"undo entry {done.journal_id} again" in str(raised.value)
        assert rows(runs) == before[1] and rows(sessions) != before[0]
        undo_entry = next(
            e for e in await Journal().entries([runs]) if e.action == "undo"
        )
        assert (undo_entry.status, undo_entry.unfinished) == ("failed", True)
        await undo(ws, done.journal_id)
    finally:
        await ws.close()
    assert (rows(sessions), rows(runs)) == before


async def test_an_unfinished_finalize_is_undone_with_its_segment(
    two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finalize committed, its journal entry never finished: undo takes out the
    segment it appended (named in the entry beforehand) and puts the checkpoint back."""
    from support.journal_faults import perform_then_die

    sessions, runs = two_files
    before = rows(sessions), rows(runs)
    ws = await Workspace.open([sessions, runs])
    try:
        preview = await preview_finalize(ws, "crashed", "s", stale_after=0)
        await perform_then_die(ws, preview, monkeypatch)
        assert any(r[2] == "'crashed'" for r in rows(sessions)["session_runs"])
        [entry] = await Journal().entries([sessions])
        assert entry.unfinished and entry.subject == "run crashed into session s"
        result = await undo(ws, entry.id)
    finally:
        await ws.close()
    assert result.rows_removed == 1
    assert (rows(sessions), rows(runs)) == before
